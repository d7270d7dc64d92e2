"""The drain's circuit breaker: one run drains at most a share of the Slurm nodes, the runs of a window
share that budget, and only --drain-max N (a count the operator names) goes past it."""
from datetime import datetime, timedelta

import pytest

from provision.commands._job import publish, select
from provision.engine.control import Control
from provision.errors import ProvisionError
from provision.results import store
from provision.results.store import RunStore
from provision.slurm import drain
from provision.slurm.breaker import Breaker
from provision.slurm.scontrol import NodeState, parse_show_node
from provision.commands._job.options import JobOptions
from tests.unit.slurm.test_drain import FakeSlurm, run_of

NOW = datetime(2026, 12, 2, 20, 0, 0)
FAILING = [f"gpu{i:03d}" for i in range(1, 100, 7)][:15]  # 15 failing nodes spread over the cluster
OPERATOR = "gpu098"  # drained by hand: its own reason


def cluster(drained_by_us=(), at=NOW):
    """100 Slurm nodes, idle but gpu099 (an operator's) and ``drained_by_us`` (this tool's, stamped ``at``)."""
    states = {f"gpu{i:03d}": NodeState(f"gpu{i:03d}", "IDLE") for i in range(100)}
    states[OPERATOR] = NodeState(OPERATOR, "IDLE+DRAIN", "PSU swap (alice)", "2026-12-02T19:00:00")
    for node in drained_by_us:
        states[node] = NodeState(node, "IDLE+DRAIN", "burnin: xid x", at.isoformat(timespec="seconds"))
    return states


def burn(slurm, breaker=Breaker(), now=NOW, failing=FAILING):
    """The drain of a run over gpu000-gpu099 whose ``failing`` hosts (and the operator's node) fail xid."""
    run = run_of(**{h: ("fail" if h in failing or h == OPERATOR else "pass") for h in slurm.states})
    return drain.apply(run, {h: h for h in run.hosts}, False, slurm, say=lambda line: None, breaker=breaker, now=now)


def drains(slurm):
    return [node for call, node in slurm.calls if call == "drain"]


def test_by_default_a_run_drains_a_tenth_then_stops_says_why_and_keeps_the_list():
    slurm = FakeSlurm(cluster())
    said = burn(slurm)
    assert drains(slurm) == FAILING[:10]  # 10 % of 100 Slurm nodes, in host order
    breaker = [line for line in said if line.startswith("slurm: breaker: ")]
    assert breaker == [f"slurm: breaker: stopped draining after 10 of 15 failing nodes: at most 10 per 24 h (10 % of "
                       f"100 Slurm nodes), 0 of them already drained by this tool in that time; not drained: "
                       f"{', '.join(FAILING[10:])} (listed below; every failing host is in drain.txt); --drain-max N "
                       f"lets a run drain N nodes"]
    kept = [line for line in said if line.startswith("slurm: not drained (breaker): ")]
    assert [line.split()[4].rstrip(":") for line in kept] == FAILING[10:]  # each with the reason it would have had
    assert all(" burnin: ib_ports mlx5_3 port 1: rate_Gbps = 200" in line for line in kept)
    assert said[-1] == (f"slurm: drained 10: {', '.join(FAILING[:10])}; resumed 0; not drained (breaker) 5: "
                        f"{', '.join(FAILING[10:])}")
    assert slurm.states[OPERATOR].reason == "PSU swap (alice)"  # the operator's node: untouched, and said
    assert f"slurm: {OPERATOR} left alone: drained by someone else: PSU swap (alice)" in said


def test_drain_max_names_the_count_and_drains_that_many():
    slurm = FakeSlurm(cluster())
    said = burn(slurm, Breaker(most=15))
    assert drains(slurm) == FAILING and not any("breaker" in line for line in said)
    fewer = FakeSlurm(cluster())
    burn(fewer, Breaker(most=3))
    assert drains(fewer) == FAILING[:3]
    assert "--drain-max 3; not drained: " in next(line for line in burn(FakeSlurm(cluster()), Breaker(most=3))
                                                  if line.startswith("slurm: breaker: "))


def test_a_second_run_within_the_window_drains_nothing_more():
    slurm = FakeSlurm(cluster())
    burn(slurm)
    for node in FAILING[:10]:  # as Slurm stamps them: the time the reason was set
        slurm.states[node] = NodeState(node, "IDLE+DRAIN", slurm.states[node].reason, "2026-12-02T20:00:00")
    slurm.calls.clear()
    said = burn(slurm, now=NOW + timedelta(hours=2))  # the same 15 fail again, two hours later
    assert drains(slurm) == []
    assert "10 of them already drained by this tool in that time" in next(line for line in said if "breaker:" in line)
    assert any(line.startswith(f"slurm: {FAILING[0]}: already drained by this tool: burnin: ib_ports")
               for line in said)  # never twice
    later = burn(FakeSlurm(slurm.states), now=NOW + timedelta(hours=25))  # the window has passed
    assert later[-1].startswith("slurm: drained 5: ")


def test_other_failures_in_the_window_share_the_budget_and_an_operators_change_frees_it():
    recent = [f"gpu{i:03d}" for i in range(90, 96)]  # 6 drained by this tool an hour ago (another shard)
    slurm = FakeSlurm(cluster(recent, NOW - timedelta(hours=1)))
    burn(slurm)
    assert drains(slurm) == FAILING[:4]
    states = cluster(recent, NOW - timedelta(hours=1))
    for node in recent:  # the operator resumed two and took over the reason of two more
        states[node] = NodeState(node, "IDLE") if node < "gpu092" else states[node]
    for node in ("gpu092", "gpu093"):
        states[node] = NodeState(node, "IDLE+DRAIN", "RMA (bob)", "2026-12-02T19:30:00")
    freed = FakeSlurm(states)
    burn(freed)
    assert drains(freed) == FAILING[:8]


def test_a_reason_without_a_readable_stamp_counts_as_drained_in_the_window():
    states = cluster()
    states["gpu090"] = NodeState("gpu090", "DRAIN", "burnin: xid x")  # no stamp printed
    states["gpu091"] = NodeState("gpu091", "DRAIN", "burnin: xid x", "sometime")
    assert Breaker().recent(states, drain.PREFIX, NOW) == ["gpu090", "gpu091"]
    assert Breaker().budget(states, drain.PREFIX, NOW)[0] == 8


@pytest.mark.parametrize("nodes, share, cap", [(100, 0.10, 10), (3, 0.10, 1), (0, 0.10, 1), (1250, 0.10, 125),
                                               (100, 0.5, 50), (30, 0.10, 3)])
def test_the_budget_is_the_share_of_every_slurm_node_at_least_one(nodes, share, cap):
    states = {f"n{i}": NodeState(f"n{i}", "IDLE") for i in range(nodes)}
    assert Breaker(share=share).budget(states, drain.PREFIX, NOW)[0] == cap


def test_the_stamp_is_read_from_a_real_capture():
    from tests.unit.slurm.test_scontrol import CAPTURE

    nodes = parse_show_node(CAPTURE.read_text())
    assert nodes["node02"].since == "2026-12-01T15:02:40" and nodes["node01"].since == ""
    assert Breaker().recent(nodes, drain.PREFIX, datetime(2026, 12, 1, 16)) == ["node02", "node05", "node06"]


def test_the_breaker_options_need_drain_slurm_and_sane_numbers():
    assert select.drain_options("slurm", False) == Breaker()
    assert select.drain_options("slurm", False, 40, 25, 1) == Breaker(share=0.25, window_s=3600, most=40)
    for args, said in (((None, False, 40), "--drain-max needs --drain slurm"),
                       ((None, False, None, 5.0), "--drain-share needs --drain slurm"),
                       (("slurm", False, -1), "--drain-max -1: a number of nodes"),
                       (("slurm", False, None, 0.0), "--drain-share 0: a percentage above 0"),
                       (("slurm", False, None, 150.0), "--drain-share 150: a percentage"),
                       (("slurm", False, None, None, 0.0), "--drain-window 0: hours, above 0")):
        with pytest.raises(ProvisionError, match=said):
            select.drain_options(*args)


def test_the_job_keeps_the_breakers_list_in_slurm_txt(tmp_path, monkeypatch):
    rundir = RunStore(tmp_path).create("r1")
    slurm = FakeSlurm(cluster())
    monkeypatch.setattr(publish, "Scontrol", lambda: slurm)
    run = run_of(**{h: ("fail" if h in FAILING else "pass") for h in slurm.states})
    said: list[str] = []
    publish.drain(rundir, run, {h: h for h in run.hosts}, JobOptions(("burnin",)), Control(said.append), [],
                  Breaker(window_s=3600))
    kept = (rundir.path / store.SLURM).read_text().splitlines()
    assert [line.split()[4].rstrip(":") for line in kept if "not drained (breaker): " in line] == FAILING[10:]
    assert any(line.startswith("slurm: breaker: stopped draining after 10 of 15 failing nodes: at most 10 per 1 h")
               for line in said)
    assert len(drain.drain_lines(run)) == 15  # drain.txt: every failing host, drained or not


def test_only_a_named_count_passes_the_breaker_on_the_command_line(capsys):
    from provision import cli
    from provision.commands import _job

    parser = cli._parser()
    named = _job.JobOptions.from_args(parser.parse_args(["burnin", "-i", "a", "--drain", "slurm", "--drain-max", "15"]))
    assert _job._breaker(named) == Breaker(most=15)
    forced = _job.JobOptions.from_args(parser.parse_args(["run", "-i", "a", "--drain", "slurm", "--force"]))
    assert _job._breaker(forced) == Breaker()  # --force is the plan gate's, never the breaker's
    with pytest.raises(SystemExit) as bare:
        parser.parse_args(["burnin", "-i", "a", "--drain", "slurm", "--drain-max"])
    assert bare.value.code == 2 and "--drain-max: expected one argument" in capsys.readouterr().err
