"""A multi-node all_reduce_perf launched as clusters launch nccl-tests: Open MPI's mpirun on the first
node, one rank per node over SSH (the cluster key, strict host key checking), nothing rack-specific
on the command line."""
import json
import shutil
import sys

import paramiko
import pytest
import yaml

from provision import parsers, paths
from provision.sim import rack
from tests.conftest import free_address_base
from tests.integration.conftest import provision

pytestmark = pytest.mark.integration

TOOLS = paths.ROOT / "provision/sim/tools"
PROFILE = "h100-sxm5-80g-ndr"
# What the nvidia_driver role leaves for the simulated tools (provision/sim/repo.py writes the same file).
DRIVER = {"version": "550.127.05", "cuda_version": "12.4"}
MPIRUN_TIMEOUT_S = 120


def _install_tool(nodes) -> None:
    """Stand in for the burnin_tools and nvidia_driver roles: the built all_reduce_perf on PATH and
    the driver's version file, in every node."""
    for node in nodes:
        root = node.root()
        shutil.copy(TOOLS / "all_reduce_perf.py", root / "usr/local/bin/all_reduce_perf")
        (root / "usr/local/bin/all_reduce_perf").chmod(0o755)
        (root / "usr/lib/provision-sim/nvidia-driver.json").write_text(json.dumps(DRIVER))


def _expected_busbw(nodes) -> float:
    """The job's figure from the nodes' own hardware models and the rack's fabric, before noise."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import all_reduce_perf

    models = [yaml.safe_load((n.root() / "etc/provision-sim/hardware.yaml").read_text()) for n in nodes]
    world = yaml.safe_load((nodes[0].root() / "etc/provision-sim/fabric.yaml").read_text())
    return all_reduce_perf.job_peak_busbw(models, [m["gpus"][:8] for m in models], world)


def _run_on(folder, host: str, command: str) -> tuple[int, str]:
    """Exit status and output of ``command`` on ``host`` of the rack in ``folder``, as the SSH
    transport connects (provision/engine/ssh.py: known_hosts, RejectPolicy)."""
    data = yaml.safe_load((folder / "hosts.yml").read_text())["all"]
    client = paramiko.SSHClient()
    client.load_host_keys(data["vars"]["provision_known_hosts_file"])
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    address = data["children"]["gpu_nodes"]["hosts"][host]["ansible_host"]
    client.connect(address, username="root", key_filename=data["vars"]["ansible_ssh_private_key_file"],
                   timeout=10, allow_agent=False, look_for_keys=False)
    try:
        transport = client.get_transport()
        assert transport is not None
        channel = transport.open_session(timeout=10)
        channel.settimeout(MPIRUN_TIMEOUT_S)
        channel.exec_command(command)
        # stdout alone, as the SSH transport keeps it: mpirun's stderr warnings (setpgid) would land in
        # the middle of a rank's line if the two were combined
        text = channel.makefile("rb").read().decode()
        errors = channel.makefile_stderr("rb").read().decode()
        status = channel.recv_exit_status()
        return status, text if status == 0 else text + errors
    finally:
        client.close()


def test_mpirun_all_reduce_over_four_nodes(tmp_path):
    up = provision("sim", "up", "--nodes", "4", "--profile", PROFILE, "--inventory", str(tmp_path),
                   "--address-base", free_address_base(4))
    try:
        assert up.returncode == 0, up.stderr
        nodes = rack.load_nodes(tmp_path)
        _install_tool(nodes)
        hosts = ",".join(f"{n.address}:1" for n in nodes)
        status, text = _run_on(tmp_path, "node01",
                               f"mpirun --allow-run-as-root --tag-output -np 4 --host {hosts} "
                               "all_reduce_perf -b 8 -e 8G -f 2 -g 8 -c 1 -n 20 -w 5")
        assert status == 0, text[-3000:]
        result = parsers.parse_tool("nccl-tests", text)
        assert result["complete"] and result["nranks"] == 32 and result["wrong"] == 0
        assert [d["host"] for d in result["devices"]] == [n.name for n in nodes for _ in range(8)]
        expected = _expected_busbw(nodes)
        busbw = result["busbw_at_max_size_GBps"]["out_of_place"]
        assert expected * 0.96 <= busbw <= expected * 1.03, (busbw, expected)  # noise_pct 2 and latency
    finally:
        provision("sim", "down", "--inventory", str(tmp_path))
