"""A simulated node boots systemd, as every real target does (issue 25 item 4): the roles' service tasks
start and enable real units, nvidia_driver's reboot handler reboots the node with the reboot module's own
command, the enabled units come back after a reboot, and a node whose PID 1 dies stays down."""
import os
import re
import signal
import subprocess
import time

import pytest

from provision import paths
from provision.sim import rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
UNITS = ("nvidia-persistenced", "nvidia-fabricmanager")  # what `--tags driver` starts on an H100 SXM node


def on_node(inv, node, command: str) -> str:
    """``command`` on ``node`` over the rack's own SSH (host key checking on); its stdout, stripped."""
    sdir = rack.state_dir(inv)
    done = subprocess.run(["ssh", "-i", str(sdir / "id_ed25519"), "-o", "BatchMode=yes", "-o",
                           f"UserKnownHostsFile={sdir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
                           f"root@{node.address}", command], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout.strip()


def boot_id(inv, node) -> str:
    return on_node(inv, node, "cat /run/provision-sim/boot_id")


def test_a_node_runs_systemd_and_the_roles_units_survive_its_reboots(tmp_path):
    with own_rack(tmp_path / "rack", nodes=1) as inv:
        [node] = rack.load_nodes(inv)
        assert on_node(inv, node, "ps -p 1 -o comm=; systemctl is-system-running --wait") == "systemd\nrunning"
        first = boot_id(inv, node)

        installed = provision("install", "-i", str(inv), "--run-id", f"itest-systemd-{id(inv) % 10000}",
                              "--tags", "driver")
        assert installed.returncode == 0, installed.stdout[-3000:]
        # the driver changed, so the role's handler rebooted the node (the reboot module's own `shutdown -r`)
        assert boot_id(inv, node) != first
        log = (rack.state_dir(inv) / "logs/node01.log").read_text()
        assert log.count("node01 rebooted; booting it again") == 1, log[-2000:]
        assert on_node(inv, node, f"systemctl is-enabled {' '.join(UNITS)}").split() == ["enabled"] * len(UNITS)
        assert on_node(inv, node, f"systemctl is-active {' '.join(UNITS)}").split() == ["active"] * len(UNITS)
        assert on_node(inv, node, "ls /etc/init.d | grep -c nvidia || true") == "0"  # units only, as NVIDIA ships
        main = on_node(inv, node, "systemctl show -p MainPID --value nvidia-persistenced")
        assert main == on_node(inv, node, "cat /run/nvidia-persistenced/nvidia-persistenced.pid")

        # the unit stopped: the simulated nvidia-smi sees no persistence daemon
        on_node(inv, node, "systemctl stop nvidia-persistenced")
        assert re.search(r"Persistence Mode\s+: Disabled", on_node(inv, node, "nvidia-smi -q"))

        # a reboot (Ansible's reboot module, as an operator's playbook runs it) brings the enabled units back
        before = boot_id(inv, node)
        reboot = subprocess.run([paths.tool("ansible"), "-i", str(inv / "hosts.yml"), "node01", "-m",
                                 "ansible.builtin.reboot", "-a", "boot_time_command='cat /run/provision-sim/boot_id'"],
                                capture_output=True, text=True, timeout=600, check=False)
        assert reboot.returncode == 0, reboot.stdout[-2000:]
        assert boot_id(inv, node) != before
        assert on_node(inv, node, "systemctl is-system-running --wait") == "running"
        assert on_node(inv, node, f"systemctl is-active {' '.join(UNITS)}").split() == ["active"] * len(UNITS)
        assert re.search(r"Persistence Mode\s+: Enabled", on_node(inv, node, "nvidia-smi -q"))

        # a node whose PID 1 dies is down (a crash, not a reboot): its supervisor does not boot it again
        os.kill(node.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while node.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not node.alive() and node.pid == 0
