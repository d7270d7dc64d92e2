"""gpu_stress, storage and stack against healthy, degraded and truncated captures.

Captures: ``tests/data/<check>/sim_h100_<case>.<step key>.txt`` come from the simulated tools
with one fault set (tests/data/tools/capture_stress.py); ``tests/data/samples/`` are real
outputs, judged under a copy of the H100 profile changed to the sample's hardware.
The storage check's site facts are the simulated rack's (provision/sim/site.yml).
"""
import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from provision import paths, profiles
from provision.checks import Outcome, gpu_stress, stack, storage
from provision.engine import burnin
from provision.engine.control import Control
from provision.engine.transport import CommandResult
from provision.errors import ProfileError
from provision.inventory import Host
from provision.results.model import HostRecord
from provision.results.store import RunStore

from tests.unit.checks import judge

DATA = Path(__file__).resolve().parents[2] / "data"
# The simulated rack's site facts with /proc's bonding folder, as a real site would have them.
SIM_SITE = yaml.safe_load((paths.ROOT / "provision/sim/site.yml").read_text())
SITE_VARS = {"provision_storage": {**SIM_SITE["provision_storage"], "bonding_dir": "/proc/net/bonding"}}
H100 = profiles.for_host("h100-sxm5-80g-ndr", SITE_VARS, "node07")
KEYS = {gpu_stress: ("gpu_burn", "dcgmi"), storage: ("bond", "fio"), stack: ("driver", "cuda", "packages")}


def variant(base: profiles.Profile, name: str, changes: dict) -> profiles.Profile:
    """A copy of ``base`` with dotted paths ("gpu.count", "site.storage.slaves") set to new values
    (None deletes the key)."""
    data, site = copy.deepcopy(base.data), copy.deepcopy(base.site)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = {"site": site, **data} if parents[:1] == ["site"] else data
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    return dataclasses.replace(base, name=name, data=data, path=f"{base.path} ({name})", site=site)


# gpu_burn_a100x8_ok ran with doubles and tensor cores on 8x A100 SXM4 80GB (~17 TFLOP/s each).
A100_FP64 = variant(H100, "test-a100-fp64tc", {"gpu.count": 8, "references.gpu_stress.gflops.value": 17000.0,
                                               "references.gpu_stress.gflops.params.precision": "fp64"})
# gpu_burn_16gpu_faulty_negative_errors_exit0: 16 GPUs at ~6.4 TFLOP/s.
SIXTEEN = variant(H100, "test-16gpu", {"gpu.count": 16, "references.gpu_stress.gflops.value": 6400.0})
# bond0_8023ad_healthy_2x10g_lacp_pdu_details: two 10 GbE slaves in one LACP aggregator.
TWO_10G = variant(H100, "test-2x10g", {"site.storage.slave_speed_Mbps": 10000})


def sim(module, case: str) -> dict[str, str]:
    return {key: (DATA / module.CHECK.id / f"sim_h100_{case}.{key}.txt").read_text() for key in KEYS[module]}


def sample(key: str, name: str) -> dict[str, str]:
    return {key: (DATA / "samples" / name).read_text()}


# (module, case name, texts, profile, outcome, text the message must contain)
CASES = [
    (gpu_stress, "healthy", sim(gpu_stress, "healthy"), H100, Outcome.PASS, "gflops 5"),
    (gpu_stress, "gpu_burn_faulty", sim(gpu_stress, "gpu_burn_faulty"), H100, Outcome.FAIL,
     "GPU2: gpu_burn_verdict = 'FAULTY', expected 'OK'"),
    (gpu_stress, "dcgm_fail", sim(gpu_stress, "dcgm_fail"), H100, Outcome.FAIL, "GPU5: dcgm_targeted_power = 'Fail'"),
    (gpu_stress, "gpu_slow", sim(gpu_stress, "gpu_slow"), H100, Outcome.FAIL, "GPU_SLOW"),
    (gpu_stress, "no_work", sim(gpu_stress, "no_work"), H100, Outcome.ERROR, "did no work on GPU 0, 1"),
    (gpu_stress, "truncated", sim(gpu_stress, "truncated"), H100, Outcome.ERROR, "incomplete"),
    (gpu_stress, "a100x8_ok", sample("gpu_burn", "gpu_burn_a100x8_ok.txt"), A100_FP64, Outcome.PASS, "gflops"),
    (gpu_stress, "16gpu_faulty", sample("gpu_burn", "gpu_burn_16gpu_faulty_negative_errors_exit0.txt"), SIXTEEN,
     Outcome.FAIL, "GPU15: gpu_burn_verdict = 'FAULTY'"),
    (gpu_stress, "a100x8_as_h100", sample("gpu_burn", "gpu_burn_a100x8_ok.txt"), H100, Outcome.FAIL, "GPU_SLOW"),
    (gpu_stress, "dcgm_a10g_power", sample("dcgmi", "dcgmi_diag_r3_a10gx4_targeted_power_fail.txt"), H100,
     Outcome.FAIL, "GPU1: dcgm_targeted_power = 'Fail', expected 'Pass'; Targeted Power: GPU 1 Max power"),
    (gpu_stress, "dcgm_v100_pass", sample("dcgmi", "dcgmi_diag_r3_verbose_v100_pass.txt"), H100, Outcome.PASS, "dcgm_"),
    (storage, "healthy", sim(storage, "healthy"), H100, Outcome.PASS, "/mnt/checkpoint: write_bw_MiBps"),
    (storage, "bond_slave_down", sim(storage, "bond_slave_down"), H100, Outcome.FAIL,
     "bond0 ens1f1: mii_status = 'down', expected 'up' [BOND_SLAVE_DOWN"),
    (storage, "slow_storage", sim(storage, "slow_storage"), H100, Outcome.FAIL, "write_bw_MiBps"),
    (storage, "truncated", sim(storage, "truncated"), H100, Outcome.ERROR, "incomplete"),
    (storage, "bond_sample_as_h100", sample("bond", "bond0_8023ad_healthy_2x10g_lacp_pdu_details.txt"), H100,
     Outcome.FAIL, "bond0 ens1f0: speed_Mbps = 10000 Mb/s, expected 25000 Mb/s [BOND_SLAVE_SPEED"),
    (storage, "bond_and_fio_samples", {**sample("bond", "bond0_8023ad_healthy_2x10g_lacp_pdu_details.txt"),
                                       **sample("fio", "fio_seqwrite_1M_qd64_libaio_6GiBps.txt")},
     TWO_10G, Outcome.PASS, "6068 MiB/s"),
    (stack, "healthy", sim(stack, "healthy"), H100, Outcome.PASS, f"driver_version = '{H100.stack['driver_version']}'"),
    (stack, "pin_mismatch", sim(stack, "pin_mismatch"), H100, Outcome.FAIL,
     f"driver: driver_version = '535.183.01', expected '{H100.stack['driver_version']}' [STACK_PIN"),
    (stack, "truncated", sim(stack, "truncated"), H100, Outcome.ERROR, "incomplete"),
]


@pytest.mark.parametrize("module,case,texts,profile,outcome,text", CASES,
                         ids=[f"{c[0].CHECK.id}-{c[1]}" for c in CASES])
def test_capture_is_judged(module, case, texts, profile, outcome, text):
    result = judge("node07", module.CHECK, profile, texts)
    assert result.outcome == outcome, result.message
    assert text in result.message


@pytest.mark.parametrize("module", list(KEYS))
def test_check_id_is_the_module_name(module):
    assert module.CHECK.id == module.__name__.rsplit(".", 1)[-1]


@pytest.mark.parametrize("module", list(KEYS))
def test_every_failing_finding_has_a_fault_and_an_action(module):
    for case in ("pin_mismatch", "bond_slave_down", "slow_storage", "gpu_burn_faulty", "dcgm_fail", "gpu_slow"):
        if (DATA / module.CHECK.id / f"sim_h100_{case}.{KEYS[module][0]}.txt").exists():
            parsed = {k: module.CHECK.parse(t) for k, t in sim(module, case).items()}
            bad = [f for f in module.CHECK.judge(parsed, H100) if not f.ok]
            assert bad and all(f.fault and f.action and f.device for f in bad), case


def test_gpu_burn_faulty_with_exit_0_fails_through_the_engine(tmp_path):
    """The engine sees exit status 0 for every step; the FAULTY verdict alone must fail the node."""
    texts = sim(gpu_stress, "gpu_burn_faulty")

    class Process:
        def __init__(self, argv):
            key = {"gpu_burn": "gpu_burn", "dcgmi": "dcgmi"}.get(argv[0])
            self.result = CommandResult(argv, 0 if key else 1, texts[key] if key else "", "", 1.0, False)

        def wait(self):
            return self.result

        def kill(self):
            pass

    class Connection:
        def run(self, argv, timeout_s):
            return Process(argv).wait()

        def start(self, argv, timeout_s):
            return Process(argv)

        def close(self):
            pass

    class Transport:
        def connect(self, host):
            return Connection()

    node = Host("node07", "10.0.0.7", 22, "root", None, None, "h100-sxm5-80g-ndr")
    rundir = RunStore(tmp_path / "runs").create("faulty")
    [result] = burnin.run([node], {node.name: HostRecord(node.profile)}, rundir, Transport(), only=["gpu_stress"],
                          control=Control(progress=lambda line: None))
    assert result.outcome == Outcome.FAIL, result.message
    assert "GPU2" in result.message and "GPU_BURN_FAULTY" in result.message
    assert (rundir.path / "raw/node07/gpu_stress.gpu_burn.txt").read_text().startswith(texts["gpu_burn"])


def test_a_skipped_required_dcgm_test_is_not_a_pass():
    text = sim(gpu_stress, "healthy")["dcgmi"]
    skipped = text.replace("| Targeted Power            | Pass - All", "| Targeted Power            | Skip - All")
    assert skipped != text
    result = judge("node07", gpu_stress.CHECK, H100, {"dcgmi": skipped})
    assert result.outcome == Outcome.FAIL and "DCGM_SKIPPED" in result.message
    assert "EUD" not in result.message  # optional at -r 3: skipped on both real samples


def test_a_gpu_missing_from_the_verdicts_is_an_error():
    result = judge("node07", gpu_stress.CHECK, variant(H100, "nine", {"gpu.count": 9}), sim(gpu_stress, "healthy"))
    assert result.outcome == Outcome.ERROR and "verdict for 8 of 9 GPUs" in result.message


@pytest.mark.parametrize("module,key", [(storage, "bond"), (storage, "fio"), (stack, "cuda"), (stack, "packages"),
                                        (gpu_stress, "gpu_burn"), (gpu_stress, "dcgmi")])
def test_each_truncated_step_alone_is_an_error(module, key):
    result = judge("n", module.CHECK, H100, {key: sim(module, "truncated")[key]})
    assert result.outcome == Outcome.ERROR and key in result.message


def test_a_changed_threshold_flips_storage():
    strict = H100.with_overrides({"storage": {"write_bw_MiBps": {"value": 9000.0}}}, "test")
    assert judge("n", storage.CHECK, H100, sim(storage, "healthy")).outcome == Outcome.PASS
    assert judge("n", storage.CHECK, strict, sim(storage, "healthy")).outcome == Outcome.FAIL


def test_stack_rejects_text_that_is_none_of_its_tools():
    result = judge("n", stack.CHECK, H100, {"driver": "NVIDIA-SMI has failed because it couldn't communicate"})
    assert result.outcome == Outcome.ERROR and "not nvidia-smi driver_version" in result.message


def test_steps_are_argv_lists_from_the_profile():
    class Host:
        address = "10.0.0.7"
    for module, keys in KEYS.items():
        got = module.CHECK.steps(H100, Host())
        assert [s.key for s in got] == list(keys)
        assert all(isinstance(s.argv, list) and all(isinstance(a, str) for a in s.argv) for s in got)
    burn, dcgm = gpu_stress.CHECK.steps(H100, Host())
    assert burn.argv == ["gpu_burn", "60"] and dcgm.argv == ["dcgmi", "diag", "-r", "3"]
    assert gpu_stress.CHECK.steps(A100_FP64, Host())[0].argv == ["gpu_burn", "-d", "60"]
    bond, fio = storage.CHECK.steps(H100, Host())
    assert bond.argv == ["cat", "/proc/net/bonding/bond0"]
    site = yaml.safe_load((paths.ROOT / "provision/sim/site.yml").read_text())
    sim_site = profiles.for_host("h100-sxm5-80g-ndr", site, "n")
    assert storage.CHECK.steps(sim_site, Host())[0].argv == ["cat", "/var/lib/provision-sim/net/bonding/bond0"]
    assert {"--directory=/mnt/checkpoint", "--bs=1M", "--iodepth=64", "--size=4G", "--direct=1",
            "--output-format=json"} <= set(fio.argv)
    driver, cuda, pkgs = stack.CHECK.steps(H100, Host())
    assert cuda.argv == ["/usr/local/cuda-12.4/bin/nvcc", "--version"]
    assert pkgs.argv[2] == "--showformat=${Package} ${Version} ${db:Status-Abbrev}\\n"
    assert pkgs.argv[3:] == ["libcudnn9-cuda-12", "libnccl2"]


@pytest.mark.parametrize("module,row", [(gpu_stress, "references.gpu_stress"), (storage, "references.storage")])
def test_test_sizes_come_only_from_the_reference(module, row):
    bare = variant(H100, "no-ref", {row: None})
    metric = next(iter(module.CHECK.metrics))
    with pytest.raises(ProfileError, match=rf"profile no-ref .*: {row}.{metric}: missing"):
        module.CHECK.steps(bare, None)


def test_storage_without_site_facts_is_not_applicable():
    bare = profiles.load("h100-sxm5-80g-ndr")
    assert not bare.has("storage") and "storage" in storage.CHECK.needs
    with pytest.raises(ProfileError, match="no provision_storage"):
        storage.CHECK.steps(bare, None)
