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


def v1_memory_mount(mountinfo: Path = MOUNTINFO) -> Path | None:
    """The cgroup v1 hierarchy the memory controller is mounted on (``cgroup`` mounts whose super options name
    ``memory``), None where there is none (a cgroup v2 machine)."""
    for line in mountinfo.read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) == 2:
            fstype, _source, options = (fields[1].split() + ["", ""])[:3]
            if fstype == "cgroup" and "memory" in options.split(","):
                return Path(fields[0].split()[4])
    return None


def _v1_memory_twin(cgroup: Path, mountinfo: Path = MOUNTINFO) -> Path | None:
    """``cgroup``'s path under the v1 memory hierarchy; None where there is none or ``cgroup`` is not a folder of the
    v2 hierarchy."""
    mount = v1_memory_mount(mountinfo)
    if mount is None:
        return None
    try:
        return mount / cgroup.relative_to(hierarchy(mountinfo))
    except ValueError:
        return None


def memory_folder(cgroup: Path, mountinfo: Path = MOUNTINFO) -> Path | None:
    """Where a node whose cgroup v2 folder is ``cgroup`` has its memory counted when the v2 folder cannot count it
    (the memory controller is on cgroup v1, as on this machine kind): the same path under the v1 memory hierarchy,
    made here; the node's supervisor joins it (node-boot.sh), so the node's processes, page cache and kernel memory
    are charged there (cgroup-v1 memory.txt: ``memory.usage_in_bytes``). None where ``cgroup`` has ``memory.current``
    (v2) or there is no memory controller."""
    if (cgroup / "memory.current").exists():
        return None
    folder = _v1_memory_twin(cgroup, mountinfo)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def memory_bytes(cgroup: Path, mountinfo: Path = MOUNTINFO) -> int | None:
    """A node's memory in bytes as its cgroup counts it: v2's ``memory.current`` (cgroup-v2.rst), else v1's
    ``memory.usage_in_bytes`` of its memory folder (``memory_folder``), the same charge (anonymous memory, page
    cache, kernel memory). None where neither can be read (a node gone, no memory controller)."""
    twin = _v1_memory_twin(cgroup, mountinfo)
    candidates = [cgroup / "memory.current"]
    if twin is not None:
        candidates.append(twin / "memory.usage_in_bytes")
    for path in candidates:
        with contextlib.suppress(OSError, ValueError):
            return int(path.read_text())
    return None


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
    deepest first, then the rack's folder once it is empty; the same for its v1 memory folder
    (``memory_folder``). A folder still holding a process stays."""
    if not folder.is_dir():
        return
    deadline = time.monotonic() + EMPTY_WAIT_S  # a PID namespace's last processes take a moment to be reaped
    while _populated(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    for top in (folder, _v1_memory_twin(folder)):
        if top is None or not top.is_dir():
            continue
        for path, _dirs, _files in sorted(os.walk(top), key=lambda row: -row[0].count("/")):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        with contextlib.suppress(OSError):
            top.parent.rmdir()


def _populated(folder: Path) -> bool:
    """``populated 1`` in cgroup.events: a process is still in ``folder`` or below (cgroup v2)."""
    try:
        return "populated 1" in (folder / "cgroup.events").read_text()
    except OSError:
        return False
