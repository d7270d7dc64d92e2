"""The NVLink-domain test as the nvlink_domain check launches it, on two simulated GB200 NVL72 trays of one domain:
Open MPI's mpirun over SSH with NCCL's MNNVL environment exported (-x), the simulated all_reduce_perf on every tray
answering from its hardware model; a tray's fabric fault (provision sim fault) lowers the domain and fails the check
naming the domain. Only the tool is stood in for (as tests/integration/test_mpi_rack.py does), not the install."""
import json
import sys

import pytest
import yaml

from provision import parsers, profiles
from provision.checks import registry
from provision.checks.base import judge_outputs
from provision.engine.jobs import target
from provision.inventory import NVLINK_DOMAIN_VAR, Host
from provision.sim import rack
from tests.integration.conftest import own_rack, provision
from tests.integration.test_mpi_rack import TOOLS, _run_on

pytestmark = pytest.mark.integration

PROFILE = "gb200-nvl72"
DRIVER = {"version": "580.95.05", "cuda_version": "13.0"}  # the Blackwell line's driver branch, as the role leaves it


def _install_tool(nodes) -> None:
    for node in nodes:
        root = node.root()
        (root / "usr/local/bin/all_reduce_perf").write_text((TOOLS / "all_reduce_perf.py").read_text())
        (root / "usr/local/bin/all_reduce_perf").chmod(0o755)
        (root / "usr/lib/provision-sim/nvidia-driver.json").write_text(json.dumps(DRIVER))


def _hosts(nodes) -> tuple:
    return tuple(Host(n.name, n.address, 22, "root", None, None, PROFILE, vars={NVLINK_DOMAIN_VAR: "nvl72-a"})
                 for n in nodes)


def _step(nodes):
    """The check's one step for the domain of ``nodes``: mpirun on the first tray (its argv has no shell words)."""
    check = registry()["nvlink_domain"]
    [step] = check.steps(profiles.load(PROFILE), target(check, _hosts(nodes)))
    return step


def _busbw(text) -> float:
    return parsers.parse_tool("nccl-tests", text)["busbw_at_max_size_GBps"]["out_of_place"]


def _expected_busbw(nodes) -> float:
    """The domain's figure from the trays' own hardware models, before noise (the simulator's MNNVL path)."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import all_reduce_perf

    models = [yaml.safe_load((n.root() / "etc/provision-sim/hardware.yaml").read_text()) for n in nodes]
    figure = float(models[0]["performance"]["nccl_mnnvl_busbw_GBps"])
    return figure * all_reduce_perf.mnnvl_factor([g for m in models for g in m["gpus"]])


def _judge(nodes, text):
    check = registry()["nvlink_domain"]
    return judge_outputs(check, profiles.load(PROFILE), target(check, _hosts(nodes)), {_step(nodes).key: text})


def test_two_trays_over_mnnvl_pass_and_a_limited_fabric_fails_the_domain(tmp_path):
    with own_rack(tmp_path / "rack", nodes=2, profile=PROFILE) as folder:
        nodes = rack.load_nodes(folder)
        _install_tool(nodes)
        step = _step(nodes)
        status, text = _run_on(folder, nodes[0].name, " ".join(step.argv))
        assert status == 0, text[-3000:]
        findings = _judge(nodes, text)
        assert all(f.ok for f in findings), [f.describe() for f in findings if not f.ok]
        healthy = _expected_busbw(nodes)
        assert abs(_busbw(text) - healthy) <= healthy * 0.03 and healthy > 800  # NVLink5's figure, not the HCAs'

        fault = provision("sim", "fault", nodes[1].name, "fabric_limited", "--device", "1",
                          "--inventory", str(folder))
        assert fault.returncode == 0, fault.stderr
        status, text = _run_on(folder, nodes[0].name, " ".join(step.argv))
        assert status == 0, text[-3000:]
        findings = _judge(nodes, text)
        assert abs(_busbw(text) - healthy * 16 / 18) <= healthy * 0.03  # one switch tray's links of 18 lost
        [slow] = [f for f in findings if not f.ok]
        assert slow.fault == "NVLINK_DOMAIN_SLOW" and slow.device.startswith("NVLink domain nvl72-a (2 trays")
        model = yaml.safe_load((nodes[1].root() / "etc/provision-sim/hardware.yaml").read_text())
        assert model["gpus"][1]["fabric"]["health"]["summary"] == "Limited Capacity"
