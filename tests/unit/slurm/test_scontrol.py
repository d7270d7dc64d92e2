"""scontrol's output read from a real capture, and the argv, timeouts and failures of each call."""
import re
import subprocess
from pathlib import Path

import pytest

from provision.slurm.scontrol import NodeState, Scontrol, SlurmError, parse_show_node

CAPTURE = Path(__file__).parents[2] / "data/slurm/show_node.22.05.txt"  # slurm-wlm 22.05.8, Debian 12


def test_a_real_show_node_capture_gives_state_and_reason_of_every_node():
    nodes = parse_show_node(CAPTURE.read_text())
    assert {n: (s.state, s.reason) for n, s in nodes.items()} == {
        "node01": ("IDLE", ""),
        "node02": ("IDLE+DRAIN", "burnin: ib_ports mlx5_3 port 1: rate_Gbps = 200 Gb/s, expected 400 Gb/s "
                                 "[IB_RATE: reseat]"),
        "node03": ("IDLE+DRAIN", "PSU swap, ticket 4711 (alice)"),
        "node04": ("DOWN", "Not responding State=RESUME [x]"),  # a reason that looks like fields stays a reason
        "node05": ("DOWN+DRAIN", "burnin: nvlink GPU3: x"),
        "node06": ("ALLOCATED+DRAIN", "burnin: gpu_health GPU0: x"),  # draining: a job still runs
    }
    assert [n for n, s in nodes.items() if s.held()] == ["node02", "node03", "node04", "node05", "node06"]


@pytest.mark.parametrize("state, held", [("IDLE", False), ("MIXED", False), ("ALLOCATED", False),
                                         ("IDLE+DRAIN", True), ("DOWN*", True), ("IDLE+FAIL", True),
                                         ("drained", True), ("draining", True), ("IDLE+CLOUD", False)])
def test_held_states(state, held):
    assert NodeState("n", state).held() is held


def test_a_node_line_without_a_state_is_refused_not_guessed():
    with pytest.raises(ValueError, match="no State= for node n1"):
        parse_show_node("NodeName=n1 Arch=x86_64 Reason=x\n")
    assert parse_show_node("Node n9 not found\n\n") == {}


def test_fields_after_the_reason_stamp_are_not_the_reason():
    line = "NodeName=n1 State=IDLE+DRAIN Reason=burnin: xid x [slurm@2026-12-01T15:02:40] ResumeAfterTime=None\n"
    assert parse_show_node(line)["n1"].reason == "burnin: xid x"


class FakeRun:
    def __init__(self, result=None, exc=None):
        self.calls, self.result, self.exc = [], result, exc

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        if self.exc:
            raise self.exc
        return self.result or subprocess.CompletedProcess(argv, 0, "", "")


def test_drain_and_resume_are_argv_lists_with_a_timeout_never_a_shell():
    run = FakeRun()
    scontrol = Scontrol(timeout_s=7, run=run)
    scontrol.drain("node02", 'burnin: x $(reboot) "q"; `id`')
    scontrol.resume("node02")
    assert [c[0] for c in run.calls] == [
        ["scontrol", "update", "NodeName=node02", "State=DRAIN", 'Reason=burnin: x $(reboot) "q"; `id`'],
        ["scontrol", "update", "NodeName=node02", "State=RESUME"]]
    assert all(c[1]["timeout"] == 7 and not c[1].get("shell") for c in run.calls)


@pytest.mark.parametrize("exc, text", [
    (subprocess.TimeoutExpired(["scontrol"], 7), "scontrol show node timed out after 7 s"),
    (FileNotFoundError(2, "No such file"),
     "scontrol not found: install Debian package slurm-client (make test installs it)"),
    (PermissionError(13, "Permission denied"), "scontrol: Permission denied"),
])
def test_a_call_that_cannot_run_is_one_line(exc, text):
    with pytest.raises(SlurmError, match="^" + re.escape(text)):
        Scontrol(timeout_s=7, run=FakeRun(exc=exc)).show()


def test_a_refused_update_says_what_scontrol_said():
    proc = subprocess.CompletedProcess([], 1, "", "slurm_update error: Invalid node name specified\n")
    with pytest.raises(SlurmError, match="^scontrol update NodeName=x: slurm_update error: Invalid node name"):
        Scontrol(run=FakeRun(proc)).drain("x", "burnin: y")


def test_show_of_a_node_slurm_does_not_know_is_empty():
    proc = subprocess.CompletedProcess([], 1, "Node node09 not found\n", "")
    assert Scontrol(run=FakeRun(proc)).show("node09") == {}
    with pytest.raises(SlurmError, match="Unable to contact slurm controller"):
        Scontrol(run=FakeRun(subprocess.CompletedProcess(
            [], 1, "", "slurm_load_node error: Unable to contact slurm controller (connect failure)"))).show("node09")
