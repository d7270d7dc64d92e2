"""DCGM's multi-node diagnostic as the dcgm_mndiag check launches it, on two simulated GB200 NVL72 trays of one
domain: the simulated dcgmi on the first tray runs a real Open MPI mpirun over SSH to both, each tray's mnubergemm
rank answering from its own hardware model; a fabric fault on one tray's GPU fails that tray and GPU; with IMEX in the
trays (as test_nvlink_domain sets it up), one tray's daemon stopped fails that tray's GPUs IMEX_DAEMON_DOWN and its
peer's GPUs with NCCL's error (the import from the stopped tray). Only the tools are stood in for (the DCGM 4
package's dcgmi and its version fact, the driver's, IMEX's daemon and channel), not the install."""
import json
import shlex

import pytest

from provision import profiles
from provision.checks import registry
from provision.checks.base import judge_outputs
from provision.engine.jobs import target
from provision.inventory import NVLINK_DOMAIN_VAR, Host
from provision.sim import rack
from tests.integration.conftest import own_rack, provision
from tests.integration.test_mpi_rack import TOOLS, _run_on
from tests.integration.test_nvlink_domain import IMEX_STOP
from tests.integration.test_nvlink_domain import _install_tool as _install_imex

pytestmark = pytest.mark.integration

PROFILE = "gb200-nvl72"
DRIVER = {"version": "580.95.05", "cuda_version": "13.0"}
DCGM = {"version": "4.5.2"}  # datacenter-gpu-manager-4-core of the Blackwell line (the snapshots)


def _install_tool(nodes) -> None:
    for node in nodes:
        root = node.root()
        (root / "usr/local/bin/dcgmi").write_text((TOOLS / "dcgmi.py").read_text())
        (root / "usr/local/bin/dcgmi").chmod(0o755)
        (root / "usr/lib/provision-sim/nvidia-driver.json").write_text(json.dumps(DRIVER))
        (root / "usr/lib/provision-sim/dcgm.json").write_text(json.dumps(DCGM))


def _run(folder, nodes):
    check = registry()["dcgm_mndiag"]
    hosts = tuple(Host(n.name, n.address, 22, "root", None, None, PROFILE, vars={NVLINK_DOMAIN_VAR: "nvl72-a"})
                  for n in nodes)
    job = target(check, hosts)
    [step] = check.steps(profiles.load(PROFILE), job)
    argv = [a.replace("time_to_run=3600", "time_to_run=1") for a in step.argv]
    status, text = _run_on(folder, nodes[0].name, shlex.join(argv))
    assert status == 0, text[-3000:]
    return judge_outputs(check, profiles.load(PROFILE), job, {step.key: text})


def test_two_trays_pass_and_a_tray_with_an_untrained_fabric_fails_its_gpu(tmp_path):
    with own_rack(tmp_path / "rack", nodes=2, profile=PROFILE) as folder:
        nodes = rack.load_nodes(folder)
        _install_tool(nodes)
        _install_imex(folder, nodes)  # a GB200 tray's mnubergemm needs IMEX (without it: IMEX Error, never a pass)
        findings = _run(folder, nodes)
        assert all(f.ok for f in findings), [f.describe() for f in findings if not f.ok]
        assert sorted(f.host for f in findings if f.metric == "mndiag_gpus") == sorted(n.name for n in nodes)
        assert findings[0].device == "mnubergemm on NVLink domain nvl72-a (2 trays)" and findings[0].value == "Pass"

        fault = provision("sim", "fault", nodes[1].name, "fabric_in_progress", "--device", "2",
                          "--inventory", str(folder))
        assert fault.returncode == 0, fault.stderr
        [failed] = [f for f in _run(folder, nodes) if not f.ok]
        assert (failed.fault, failed.host, failed.device) == ("MNDIAG_GPU_FAILED", nodes[1].name, "GPU2")
        assert "NCCL Error" in failed.detail


def test_a_tray_whose_imex_daemon_stopped_fails_it_and_its_peer(tmp_path):
    with own_rack(tmp_path / "rack", nodes=2, profile=PROFILE) as folder:
        nodes = rack.load_nodes(folder)
        _install_tool(nodes)
        _install_imex(folder, nodes)
        findings = _run(folder, nodes)
        assert all(f.ok for f in findings), [f.describe() for f in findings if not f.ok]
        status, text = _run_on(folder, nodes[1].name, IMEX_STOP)
        assert status == 0, text
        failed = [f for f in _run(folder, nodes) if not f.ok]
        assert {(f.host, f.fault) for f in failed} == {(nodes[1].name, "IMEX_DAEMON_DOWN"),
                                                       (nodes[0].name, "MNDIAG_GPU_FAILED")}, failed
        assert len(failed) == 8 and all("IMEX Error : status is DOWN" in f.detail for f in failed
                                        if f.host == nodes[1].name)
        assert all("NCCL Error : unhandled cuda error" in f.detail for f in failed if f.host == nodes[0].name)
