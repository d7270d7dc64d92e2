"""A node that did not start in time is stopped, not left listening outside the rack's records."""
import subprocess
import sys
from pathlib import Path

import pytest

from provision.errors import RunnerError
from provision.sim import rack


def test_a_node_whose_pid1_never_came_is_killed_with_its_children(tmp_path, monkeypatch):
    started = []

    def popen(argv, **kw):  # a node stand-in: a shell whose child keeps running, as sshd would
        started.append(subprocess.Popen([sys.executable, "-c", "import os, time; os.fork(); time.sleep(300)"], **kw))
        return started[-1]

    def no_child(parent, timeout_s=60.0):
        raise RunnerError(f"simulated node process {parent} made no child in {timeout_s} s")

    monkeypatch.setattr(rack.external, "popen", popen)
    monkeypatch.setattr(rack, "_child_pid", no_child)
    with pytest.raises(RunnerError, match="made no child"):
        rack._start(tmp_path / "node1", tmp_path / "lower", "node1", "127.0.0.2", tmp_path / "log",
                    tmp_path / "cgroup")
    [proc] = started
    assert proc.returncode is not None  # reaped
    assert _living(proc.pid) == []  # nothing of its process group runs (a zombie awaiting init is dead)


def _living(pgid: int) -> list[int]:
    """PIDs of the processes in group ``pgid`` that are not zombies (/proc/PID/stat: state, ppid, pgrp)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out
