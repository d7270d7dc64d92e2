"""A node that did not start in time is stopped, not left listening outside the rack's records."""
import json
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


def test_a_rack_of_an_older_version_is_not_up_and_its_nodes_are_stopped(tmp_path, monkeypatch):
    """rack.json of a version whose nodes ran tini as PID 1 ("pid", no supervisor or cgroup): `sim up` must not
    reuse it (is_up is false, so it stops it first), and stopping it kills that PID 1."""
    monkeypatch.setenv("PROVISION_SIM_STATE_DIR", str(tmp_path / "state"))
    pid1 = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all: {}\n")
    sdir = rack.state_dir(inv)
    sdir.mkdir(parents=True)
    old = {"name": "node01", "address": "127.0.0.2", "pid": pid1.pid}
    (sdir / "rack.json").write_text(json.dumps({"nodes": [old]}))
    [node] = rack.load_nodes(inv)
    assert (node.supervisor, node.cgroup) == (pid1.pid, "") and node.alive()
    assert not rack.is_up(inv)
    rack._kill([node])
    assert pid1.wait(timeout=10) == -9
