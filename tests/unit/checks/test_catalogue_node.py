"""gpu_stress, storage and stack: what their test data cannot declare.

Their captures and how each is judged (outcome, message, fault codes, the profile variant) are
``tests/data/<check>/cases.yaml``, read by test_check_data.py; here: a capture edited in the test,
the engine's run with exit status 0, thresholds through overrides, the steps' argv.
The storage check's site facts are the simulated rack's (provision/sim/site.yml).
"""
from pathlib import Path

import pytest
import yaml

from provision import paths, profiles, targets
from provision.checks import Outcome, gpu_stress, stack, storage
from provision.engine import burnin
from provision.engine.control import Control
from provision.engine.transport import CommandResult
from provision.errors import ProfileError
from provision.inventory import Host
from provision.results.model import HostRecord
from provision.results.store import RunStore

from tests.unit.checks import judge
from tests.unit.checks.declared import SITES, variant

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.for_host("h100-sxm5-80g-ndr", SITES["sim"], "node07")
KEYS = {gpu_stress: ("gpu_burn", "dcgmi"), storage: ("bond", "fio"), stack: ("driver", "cuda", "packages")}


# gpu_burn_a100x8_ok ran with doubles and tensor cores on 8x A100 SXM4 80GB (~17 TFLOP/s each).
A100_FP64 = variant(H100, "test-a100-fp64tc", {"gpu.count": 8, "references.gpu_stress.gflops.value": 17000.0,
                                               "references.gpu_stress.gflops.params.precision": "fp64"})


def sim(module, case: str) -> dict[str, str]:
    return {key: (DATA / module.CHECK.id / f"sim_h100_{case}.{key}.txt").read_text() for key in KEYS[module]}


@pytest.mark.parametrize("module", list(KEYS))
def test_check_id_is_the_module_name(module):
    assert module.CHECK.id == module.__name__.rsplit(".", 1)[-1]


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

    node = Host("node07", "127.0.9.7", 22, "root", None, None, "h100-sxm5-80g-ndr")
    rundir = RunStore(tmp_path / "runs").create("faulty")
    [result] = burnin.run(targets.build([node]), burnin.BurninRequest(["gpu_stress"]), Transport(),
                          burnin.Sink(rundir, {node.name: HostRecord(node.profile)},
                                      Control(progress=lambda line: None))).results
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


def test_a_changed_threshold_flips_storage():
    strict = H100.with_overrides({"storage": {"write_bw_MiBps": {"value": 9000.0}}}, "test")
    assert judge("n", storage.CHECK, H100, sim(storage, "healthy")).outcome == Outcome.PASS
    assert judge("n", storage.CHECK, strict, sim(storage, "healthy")).outcome == Outcome.FAIL


def test_stack_rejects_text_that_is_none_of_its_tools():
    result = judge("n", stack.CHECK, H100, {"driver": "NVIDIA-SMI has failed because it couldn't communicate"})
    assert result.outcome == Outcome.ERROR and "not nvidia-smi driver_version" in result.message


def test_steps_are_argv_lists_from_the_profile():
    class Host:
        address = "127.0.9.7"
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
