"""The drain decisions: who is drained, resumed or left alone, drain.txt, and the Slurm node names."""
from types import SimpleNamespace

import pytest

from provision.commands._job import publish, select
from provision.results import store
from provision.engine.control import Control
from provision.errors import ProvisionError
from provision.results.model import CheckResult, Finding, HostInstall, HostRecord, Outcome, Run, Scope
from provision.results.store import RunStore
from provision.slurm import drain
from provision.slurm.drain import DRAIN, NOTHING, RESUME, decide
from provision.slurm.scontrol import NodeState, SlurmError
from provision.commands._job.options import JobOptions


def run_of(**outcomes) -> Run:
    """A run with one ib_ports result per host (host=outcome), node04 failing also nvlink."""
    results = []
    for host, outcome in outcomes.items():
        bad = Finding("mlx5_3 port 1", "rate_Gbps", 200, False, "Gb/s", expected=400, fault="IB_RATE",
                      action="reseat the cable")
        findings = [bad] if outcome == "fail" else [Finding("mlx5_0 port 1", "rate_Gbps", 400, True, "Gb/s")]
        results.append(CheckResult("ib_ports", (host,), Outcome(outcome), "msg", findings=findings))
    if "node04" in outcomes:
        results.append(CheckResult("nvlink", ("node04",), Outcome.FAIL, "GPU3: links down",
                                   findings=[Finding("GPU3", "nvlink_active_links", 17, False, expected=18)]))
    return Run("r1", hosts={h: HostRecord("p") for h in outcomes}, results=results)


def test_reason_names_the_failing_checks_then_the_first_finding():
    run = run_of(node02="fail", node04="fail")
    assert drain.reason(run, "node02") == ("burnin: ib_ports mlx5_3 port 1: rate_Gbps = 200 Gb/s, expected 400 "
                                           "Gb/s [IB_RATE: reseat the cable]")
    assert drain.reason(run, "node04").startswith("burnin: ib_ports,nvlink mlx5_3 port 1: rate_Gbps = 200")
    assert len(drain.reason(run, "node04")) <= drain.REASON_MAX
    with pytest.raises(ValueError):
        drain.reason(run, "node01x")


def test_a_multi_host_result_drains_only_the_host_its_findings_blame():
    pair = CheckResult("ib_pairs", ("node01", "node02"), Outcome.FAIL, "node02 mlx5_0: low", scope=Scope.PAIR,
                       findings=[Finding("mlx5_0", "bw_avg_Gbps", 100.0, False, "Gb/s", host="node02")])
    run = Run("r", hosts={"node01": HostRecord("p"), "node02": HostRecord("p")}, results=[pair])
    assert drain.drain_lines(run) == ["node02 burnin: ib_pairs node02 mlx5_0: bw_avg_Gbps = 100.0 Gb/s"]


def test_drain_txt_lists_failing_hosts_only_not_errors():
    run = run_of(node03="pass", node02="fail", node01="error", node04="fail")
    run.install["node05"] = HostInstall("failed")
    lines = drain.drain_lines(run)
    assert [line.split()[0] for line in lines] == ["node02", "node04"]
    assert all(line.split(" ", 1)[1].startswith("burnin: ") for line in lines)


def test_clean_keeps_one_printable_ascii_line_cut_to_the_limit():
    assert drain.clean("a\nb\t c\x00d \u00b5s") == "a b c?d ?s"
    long = drain.clean("x" * 300)
    assert len(long) == drain.REASON_MAX and long.endswith("...")


def test_named_checks_reads_only_this_tools_reasons():
    assert drain.named_checks("burnin: ib_ports,nvlink mlx5_3 ...") == ("ib_ports", "nvlink")
    assert drain.named_checks("PSU swap burnin: ib_ports") == ()
    assert drain.named_checks("burnin:") == ()


def host(name, **hostvars):
    return SimpleNamespace(name=name, vars=hostvars)


def test_node_names_default_to_the_host_and_the_variable_overrides():
    assert drain.node_names([host("gpu-01"), host("gpu-02", provision_slurm_node="n002")]) == {
        "gpu-01": "gpu-01", "gpu-02": "n002"}


@pytest.mark.parametrize("value, text", [("node[01-02]", "is not one Slurm node name"), ("a b", "not one Slurm"),
                                         (7, "not one Slurm"), ("n1,n2", "no hostlist expression")])
def test_a_bad_node_name_is_bad_input_naming_host_and_field(value, text):
    with pytest.raises(ProvisionError, match=f"host gpu-02: field 'provision_slurm_node': .*{text}"):
        drain.node_names([host("gpu-02", provision_slurm_node=value)])


def test_two_hosts_naming_one_node_is_bad_input():
    with pytest.raises(ProvisionError, match="Slurm node n1 is also host a's"):
        drain.node_names([host("a", provision_slurm_node="n1"), host("b", provision_slurm_node="n1")])


IDLE, OURS = NodeState("n", "IDLE"), NodeState("n", "IDLE+DRAIN", "burnin: ib_ports mlx5_3 ...")
THEIRS = NodeState("n", "IDLE+DRAIN", "PSU swap (alice)")


@pytest.mark.parametrize("verdict, state, resume, ran, action, note", [
    ("fail", IDLE, False, {"ib_ports"}, DRAIN, "n: drain: burnin: ib_ports x"),
    ("fail", OURS, False, {"ib_ports"}, NOTHING, "n: already drained by this tool: burnin: ib_ports mlx5_3 ..."),
    ("fail", THEIRS, True, {"ib_ports"}, NOTHING, "n left alone: drained by someone else: PSU swap (alice)"),
    ("pass", THEIRS, True, {"ib_ports"}, NOTHING, "n left alone: drained by someone else: PSU swap (alice)"),
    ("fail", NodeState("n", "DOWN*", "Not responding"), False, set(), NOTHING,
     "n left alone: down by someone else: Not responding"),
    ("pass", NodeState("n", "IDLE+FAIL", "fan"), True, {"x"}, NOTHING, "n left alone: failed by someone else: fan"),
    ("pass", OURS, True, {"ib_ports"}, RESUME, "n: resume: passes every check it was drained for"),
    ("pass", OURS, False, {"ib_ports"}, NOTHING, "n passes, still drained by this tool"),
    ("pass", OURS, True, {"nvlink"}, NOTHING, "n passes but stays drained: ib_ports did not run on it"),
    ("pass", NodeState("n", "DRAIN", "burnin:"), True, {"x"}, NOTHING,
     "n passes but stays drained: its reason names no check (burnin:)"),
    ("pass", IDLE, True, {"ib_ports"}, NOTHING, ""),
    ("error", OURS, True, {"ib_ports"}, NOTHING, "n: burn-in error, not judged: left IDLE+DRAIN"),
    ("error", IDLE, True, set(), NOTHING, "n: burn-in error, not judged: left IDLE"),
    ("fail", None, False, set(), NOTHING, "n: not a Slurm node"),
    ("pass", None, False, set(), NOTHING, ""),
])
def test_decide(verdict, state, resume, ran, action, note):
    wanted = "burnin: ib_ports x" if verdict == "fail" else ""
    decision = decide("n", "n", verdict, wanted, state, resume, ran)
    assert decision.action == action
    assert decision.note.startswith(note) and bool(decision.note) == bool(note)
    assert decision.reason == (wanted if action == DRAIN else "")


def test_a_mapped_node_is_named_with_its_host():
    assert decide("gpu-01", "n001", "fail", "burnin: x y", IDLE, False, set()).note == (
        "gpu-01 (Slurm node n001): drain: burnin: x y")


class FakeSlurm:
    """scontrol's effect on a dict of node states; ``later`` replaces a node's state at its second read."""

    def __init__(self, states, later=None, fail=()):
        self.states, self.later, self.fail, self.calls = dict(states), dict(later or {}), set(fail), []

    def show(self, node=None):
        self.calls.append(("show", node))
        if "show" in self.fail:
            raise SlurmError("scontrol show node: Unable to contact slurm controller")
        if node is None:
            return dict(self.states)
        self.states.update({node: self.later.pop(node)} if node in self.later else {})
        return {node: self.states[node]} if node in self.states else {}

    def drain(self, node, reason):
        self.calls.append(("drain", node))
        if node in self.fail:
            raise SlurmError("scontrol update NodeName=x: slurm_update error: Access/permission denied")
        self.states[node] = NodeState(node, "IDLE+DRAIN", reason)

    def resume(self, node):
        self.calls.append(("resume", node))
        self.states[node] = NodeState(node, "IDLE")


def test_apply_drains_the_failing_leaves_others_alone_and_resumes_what_it_drained():
    run = run_of(node01="pass", node02="fail", node03="fail", node05="error", node06="pass")
    slurm = FakeSlurm({"node01": NodeState("node01", "IDLE+DRAIN", "burnin: ib_ports old"),
                       "node02": NodeState("node02", "IDLE"), "node03": NodeState("node03", "DRAIN", "PSU (bob)"),
                       "node05": NodeState("node05", "IDLE"), "node06": NodeState("node06", "IDLE")})
    said = drain.apply(run, {h: h for h in run.hosts}, True, slurm, say=lambda line: None)
    assert [c for c in slurm.calls if c[0] != "show"] == [("resume", "node01"), ("drain", "node02")]
    assert slurm.states["node02"].reason.startswith("burnin: ib_ports mlx5_3 port 1: rate_Gbps = 200")
    assert slurm.states["node03"].reason == "PSU (bob)"
    assert "slurm: node03 left alone: drained by someone else: PSU (bob)" in said
    assert said[-1] == "slurm: drained 1: node02; resumed 1: node01"


def test_a_node_someone_drained_between_the_two_reads_is_left_alone():
    run = run_of(node02="fail")
    slurm = FakeSlurm({"node02": NodeState("node02", "IDLE")},
                      later={"node02": NodeState("node02", "IDLE+DRAIN", "fan (carol)")})
    said = drain.apply(run, {"node02": "node02"}, False, slurm, say=lambda line: None)
    assert ("drain", "node02") not in slurm.calls
    assert said[0] == "slurm: node02 left alone: drained by someone else: fan (carol)"


def test_scontrol_failures_are_warnings_and_change_nothing_else():
    run = run_of(node02="fail", node04="fail")
    slurm = FakeSlurm({"node02": NodeState("node02", "IDLE"), "node04": NodeState("node04", "IDLE")},
                      fail={"node02"})
    said = drain.apply(run, {"node02": "node02", "node04": "node04"}, False, slurm, say=lambda line: None)
    assert said[0].startswith("slurm: warning: node02: could not drain Slurm node node02: scontrol update")
    assert said[-1] == "slurm: drained 1: node04; resumed 0"
    down = FakeSlurm({}, fail={"show"})
    assert drain.apply(run, {"node02": "node02"}, True, down, say=lambda line: None) == [
        "slurm: warning: cannot read the nodes' states, nothing drained or resumed: scontrol show node: "
        "Unable to contact slurm controller"]
    assert down.calls == [("show", None)]


def test_the_job_writes_drain_txt_after_a_burnin_and_checks_the_options(tmp_path):
    rundir = RunStore(tmp_path).create("r1")
    run = run_of(node01="pass", node02="fail")
    said = []
    publish.outputs(("burnin",), rundir, run, said.append, [])  # the job's outputs, drain.txt among them
    publish.drain(rundir, run, {}, JobOptions(("burnin",)), Control(said.append))
    assert (rundir.path / store.DRAIN).read_text() == drain.drain_lines(run)[0] + "\n"
    assert not (rundir.path / store.SLURM).exists()
    with pytest.raises(ProvisionError, match="--resume-passed needs --drain slurm"):
        select.drain_options(None, True)
    select.drain_options("slurm", True)
