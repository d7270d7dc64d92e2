"""The simulated nodes' cgroup folders (provision/sim/cgroups.py): the v2 hierarchy found in mountinfo, and a
node's folder killed and removed with the sub-cgroups its systemd made, the rack's folder with it; a folder
still holding a process stays. The second part uses this machine's real cgroup v2 hierarchy (root, as `sim up`)."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from provision.errors import RunnerError
from provision.sim import cgroups


def test_the_v2_hierarchy_is_the_cgroup2_mount_of_mountinfo(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
        "31 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
        "32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
        "33 31 0:28 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd\n")
    assert cgroups.hierarchy(mountinfo) == Path("/sys/fs/cgroup/unified")


def _writable_hierarchy():
    if os.geteuid() != 0:
        pytest.skip("cgroup folders need root (as `sim up`)")
    try:
        return cgroups.hierarchy()
    except (RunnerError, OSError) as exc:  # a kernel without cgroup v2: nothing here can run
        pytest.skip(f"no cgroup v2 hierarchy: {exc}")


@pytest.fixture
def node_folder():
    rack = _writable_hierarchy() / cgroups.TOP / f"unit-{uuid.uuid4().hex[:8]}"
    node = rack / "node01"
    (node / "system.slice").mkdir(parents=True)  # as the node's systemd makes below its root
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (node / "system.slice" / "cgroup.procs").write_text(str(sleeper.pid))
    yield rack, node, sleeper
    sleeper.kill()
    sleeper.wait()
    cgroups.kill(node)
    cgroups.remove(node)


def test_a_killed_node_folder_is_removed_with_its_sub_cgroups_and_the_rack_folder(node_folder):
    rack, node, sleeper = node_folder
    assert "populated 1" in (node / "cgroup.events").read_text()
    cgroups.kill(node)
    assert sleeper.wait(timeout=10) == -9  # SIGKILL through cgroup.kill, to the process in the sub-cgroup
    cgroups.remove(node)
    assert not node.exists() and not rack.exists()


def test_a_folder_still_holding_a_process_stays(node_folder, monkeypatch):
    rack, node, sleeper = node_folder
    monkeypatch.setattr(cgroups, "EMPTY_WAIT_S", 0.2)
    cgroups.remove(node)
    assert (node / "system.slice").is_dir() and sleeper.poll() is None


def test_the_v1_memory_mount_is_the_cgroup_mount_whose_options_name_memory(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
        "34 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "35 31 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n")
    assert cgroups.v1_memory_mount(mountinfo) == Path("/sys/fs/cgroup/memory")
    mountinfo.write_text("32 31 0:27 / /sys/fs/cgroup rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n")
    assert cgroups.v1_memory_mount(mountinfo) is None


def test_a_node_is_charged_in_its_memory_cgroup_and_the_folder_goes_with_the_node(node_folder):
    """Issue 34 item 6: README's node memory is the node's cgroup charge. A process that joins the node's memory
    folder (as node-boot.sh's supervisor does) and touches 64 MiB is charged at least that, read back through
    ``memory_bytes``; ``remove`` takes the memory folder with the node's."""
    rack, node, sleeper = node_folder
    memory = cgroups.memory_folder(node)
    if memory is None and not (node / "memory.current").exists():
        pytest.skip("no memory controller on this machine (neither v1 nor v2 in the node's folder)")
    before = cgroups.memory_bytes(node)
    assert before is not None
    script = ("import os, sys, time\n"
              f"open({str((memory or node) / 'cgroup.procs')!r}, 'w').write(str(os.getpid()))\n"
              "block = bytearray(64 << 20)\nfor i in range(0, len(block), 4096): block[i] = 1\n"
              "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)\n")
    toucher = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert toucher.stdout.readline() == "ready\n"
        assert cgroups.memory_bytes(node) - before >= 64 << 20
    finally:
        toucher.kill()
        toucher.wait()
    cgroups.kill(node)
    sleeper.wait(timeout=10)
    cgroups.remove(node)
    assert memory is None or not memory.exists()
