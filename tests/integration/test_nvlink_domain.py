"""The NVLink-domain test as the nvlink_domain check launches it, on two simulated GB200 NVL72 trays of one domain:
Open MPI's mpirun over SSH with NCCL's MNNVL environment exported (-x), the simulated all_reduce_perf on every tray
answering from its hardware model and from IMEX in the trays (each tray's nvidia-imex daemon, the simulated one,
listening on its address, and IMEX channel 0 made with mknod, as the nvidia_imex role leaves them); a tray's fabric
fault (provision sim fault) lowers the domain and fails the check naming the domain, and a tray's IMEX daemon
stopped fails the job with NCCL's error. Only the tool and IMEX are stood in for (as tests/integration/test_mpi_rack.py
does), not the install. The outcomes are the check's judgement against the profile's reference, never the
simulator's own figures."""
import json
import time

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


# IMEX channel 0 as the nvidia_imex role makes it (rack.NVIDIA_MAJORS: nvidia-caps-imex-channels is 235), and the
# daemon started in the background as its unit would run it.
IMEX_UP = ("mkdir -p /dev/nvidia-caps-imex-channels && mknod -m 0666 /dev/nvidia-caps-imex-channels/channel0 c 235 0"
           " && (setsid python3 /usr/lib/provision-sim/daemon.py nvidia-imex </dev/null >/dev/null 2>&1 &)")
IMEX_STOP = "kill $(cat /run/nvidia-imex/nvidia-imex.pid)"


def _install_tool(folder, nodes) -> None:
    addresses = "".join(f"{n.address}\n" for n in nodes)
    for node in nodes:
        root = node.root()
        (root / "usr/local/bin/all_reduce_perf").write_text((TOOLS / "all_reduce_perf.py").read_text())
        (root / "usr/local/bin/all_reduce_perf").chmod(0o755)
        (root / "usr/lib/provision-sim/nvidia-driver.json").write_text(json.dumps(DRIVER))
        (root / "etc/nvidia-imex").mkdir(parents=True, exist_ok=True)
        (root / "etc/nvidia-imex/nodes_config.cfg").write_text(addresses)
        status, text = _run_on(folder, node.name, IMEX_UP)
        assert status == 0, text
    for node in nodes:  # the daemons bind at start: wait for each pid file
        pidfile = node.root() / "run/nvidia-imex/nvidia-imex.pid"
        deadline = time.monotonic() + 30
        while not pidfile.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pidfile.is_file(), node.name


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


def _judge(nodes, text):
    check = registry()["nvlink_domain"]
    return judge_outputs(check, profiles.load(PROFILE), target(check, _hosts(nodes)), {_step(nodes).key: text})


def test_two_trays_over_mnnvl_pass_and_a_limited_fabric_or_a_stopped_imex_fails_the_domain(tmp_path):
    with own_rack(tmp_path / "rack", nodes=2, profile=PROFILE) as folder:
        nodes = rack.load_nodes(folder)
        _install_tool(folder, nodes)
        step = _step(nodes)
        status, text = _run_on(folder, nodes[0].name, " ".join(step.argv))
        assert status == 0, text[-3000:]
        findings = _judge(nodes, text)
        assert all(f.ok for f in findings), [f.describe() for f in findings if not f.ok]
        # the profile's gate is 792.8 GB/s (834.57 - 5%); 4 x NDR 400 per tray would give at most 200 GB/s
        assert _busbw(text) >= 792.8

        fault = provision("sim", "fault", nodes[1].name, "fabric_limited", "--device", "1",
                          "--inventory", str(folder))
        assert fault.returncode == 0, fault.stderr
        status, text = _run_on(folder, nodes[0].name, " ".join(step.argv))
        assert status == 0, text[-3000:]
        # one switch tray's links of 9 lost: 16/18 of a healthy rack's 834.57 GB/s is 741.8, under the gate on any
        # draw of the +-2% noise
        assert _busbw(text) < 792.8
        [slow] = [f for f in _judge(nodes, text) if not f.ok]
        assert slow.fault == "NVLINK_DOMAIN_SLOW" and slow.device.startswith("NVLink domain nvl72-a (2 trays")
        model = yaml.safe_load((nodes[1].root() / "etc/provision-sim/hardware.yaml").read_text())
        assert model["gpus"][1]["fabric"]["health"]["summary"] == "Limited Capacity"
        healed = provision("sim", "heal", nodes[1].name, "--inventory", str(folder))
        assert healed.returncode == 0, healed.stderr

        status, text = _run_on(folder, nodes[1].name, IMEX_STOP)
        assert status == 0, text
        status, text = _run_on(folder, nodes[0].name, " ".join(step.argv))
        assert status == 3, text[-3000:]  # nccl-tests' testNcclError on every rank
        assert "Check the IMEX configuration (nvidia-imex-ctl -N)" in text  # node02's own rank (NCCL's MNNVL check)
        failed = [f for f in _judge(nodes, text) if not f.ok]
        assert failed and {f.fault for f in failed} == {"NVLINK_DOMAIN_IMEX_FAILED"}, [f.describe() for f in failed]
