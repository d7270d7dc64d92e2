"""The simulated nodes' cgroups: one folder of the cgroup v2 hierarchy per node.

A node's systemd needs a cgroup tree of its own to run its units in (systemd's CONTAINER_INTERFACE:
a container manager gives the container a cgroup subtree and a cgroup namespace). Every node gets
``<cgroup2 mount>/provision-sim/<rack state folder name>/<node>``; ``node-boot.sh`` moves itself
there, and ``unshare --cgroup`` makes that folder the node's root. This machine's controllers may
all be on cgroup v1 (as here: the v2 hierarchy at /sys/fs/cgroup/unified has none); the v2
hierarchy still tracks processes, which is what systemd needs to start, stop and watch units.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from provision import external
from provision.errors import RunnerError

MOUNTINFO = Path("/proc/self/mountinfo")
OWN_MOUNT = Path("/run/provision-sim/cgroup2")  # where the v2 hierarchy is mounted when none is
TOP = "provision-sim"
EMPTY_WAIT_S = 10.0


def hierarchy(mountinfo: Path = MOUNTINFO) -> Path:
    """This machine's cgroup v2 mount point; mounts one at ``OWN_MOUNT`` when there is none.
    Raises RunnerError when it cannot be mounted (a kernel without cgroup v2)."""
    for line in mountinfo.read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) == 2 and fields[1].split()[0] == "cgroup2":
            return Path(fields[0].split()[4])
    OWN_MOUNT.mkdir(parents=True, exist_ok=True)
    proc = external.run(["mount", "-t", "cgroup2", "cgroup2", str(OWN_MOUNT)], capture_output=True, text=True,
                        check=False)
    if proc.returncode != 0:
        raise RunnerError(f"the simulated nodes' systemd needs cgroup v2, and mounting it failed: "
                          f"{(proc.stderr or proc.stdout).strip()}")
    return OWN_MOUNT


def rack_folder(state_folder: Path) -> Path:
    """The cgroup folder of the rack whose state is in ``state_folder`` (its nodes' folders go in it)."""
    folder = hierarchy() / TOP / state_folder.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def kill(folder: Path) -> None:
    """SIGKILL every process in ``folder`` and below (``cgroup.kill``, Linux 5.14+)."""
    with contextlib.suppress(OSError):
        (folder / "cgroup.kill").write_text("1")


def remove(folder: Path) -> None:
    """Remove ``folder`` and its sub-cgroups (the node's systemd made init.scope, system.slice, ...),
    deepest first, then the rack's folder once it is empty. A folder still holding a process stays."""
    if not folder.is_dir():
        return
    deadline = time.monotonic() + EMPTY_WAIT_S  # a PID namespace's last processes take a moment to be reaped
    while _populated(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    for path, _dirs, _files in sorted(os.walk(folder), key=lambda row: -row[0].count("/")):
        with contextlib.suppress(OSError):
            os.rmdir(path)
    with contextlib.suppress(OSError):
        folder.parent.rmdir()


def _populated(folder: Path) -> bool:
    """``populated 1`` in cgroup.events: a process is still in ``folder`` or below (cgroup v2)."""
    try:
        return "populated 1" in (folder / "cgroup.events").read_text()
    except OSError:
        return False
