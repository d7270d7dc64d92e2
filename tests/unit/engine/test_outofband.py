"""The engine out of band: a BMC step runs through the node's BMC (and on a node lost over SSH), a node that stops
answering is told from a hung tool and named with its BMC's view, and ``--recover`` power-cycles it and runs its
node checks again, flagging it. Runs on this machine through the test transport (tests/unit/engine/local.py), with
a BMC stand-in that answers the engine's OutOfBand protocol (provision.engine.outofband)."""
import json
import textwrap

from provision import checks, targets
from provision.engine import burnin, reevaluate
from provision.engine.control import Control
from provision.engine.outofband import Cycled
from provision.engine.transport import CommandResult
from provision.errors import CommandError
from provision.inventory import Host
from provision.results import schema
from provision.results.model import HostRecord, Outcome, Run
from provision.results.store import RunStore
from tests.unit.engine.local import LocalTransport

HANG = '''
"""site_hang: a tool that hangs while the flag file exists (a test)."""
from provision.checks.base import Budget, Check, Step
from provision.checks.rules import expect


def steps(profile, host):
    name = host.name
    return [Step("", ["sh", "-c", f"if [ -e {flags}/hung-{{name}} ] || [ -e {flags}/toolhang-{{name}} ]; "
                                  "then exec sleep 30; fi; echo fine"], parser="hang")]


def judge(ctx):
    return [expect("node", "said", ctx.parsed[""]["said"], "fine", "SITE_HANG", "a test")]


CHECK = Check(id="site_hang", tool="sh", order=6, steps=steps, parsers={{"hang": lambda t: {{"said": t.strip()}}}},
              judge=judge, budget=Budget(timeout_s=1))
'''

AFTER = '''
"""site_after: a check that runs after site_hang (a test)."""
from provision.checks.base import Check, Step
from provision.checks.rules import expect


def steps(profile, host):
    return [Step("", ["echo", "ok"], parser="after")]


def judge(ctx):
    return [expect("node", "said", ctx.parsed[""]["said"], "ok", "SITE_AFTER", "a test")]


CHECK = Check(id="site_after", tool="echo", order=7, steps=steps, parsers={"after": lambda t: {"said": t.strip()}},
              judge=judge)
'''

OOB = '''
"""site_oob: a check asked of the node's BMC (a test)."""
import json

from provision.checks.base import Check, Placement, Step
from provision.checks.rules import expect


def steps(profile, host):
    return [Step("status", ["bmc", "status"], parser="oob", via="bmc")]


def judge(ctx):
    return [expect("system", "power_state", ctx.parsed["status"]["power"], "On", "SITE_OOB", "a test")]


CHECK = Check(id="site_oob", tool="bmc", order=4, steps=steps, parsers={"oob": json.loads}, judge=judge,
              placement=Placement(out_of_band=True))
'''


MIXED = '''
"""site_mixed: a check that reads the node over SSH and its BMC beside it (a test, as firmware reads both)."""
import json

from provision.checks.base import Check, Step
from provision.checks.rules import expect


def steps(profile, host):
    return [Step("node", ["echo", "ok"], parser="said"), Step("bmc", ["bmc", "firmware"], parser="json", via="bmc")]


def judge(ctx):
    return [expect("node", "said", ctx.parsed["node"]["said"], "ok", "SITE_MIXED", "a test")]


CHECK = Check(id="site_mixed", tool="echo + bmc", order=8, steps=steps, judge=judge,
              parsers={"said": lambda t: {"said": t.strip()}, "json": json.loads})
'''


class Hanging(LocalTransport):
    """The test transport, with nodes that stop answering while their flag file exists (a hung node)."""

    def __init__(self, flags):
        super().__init__()
        self.flags = flags

    def connect(self, host):
        if self.flags[host.name].exists() and any(h == host.name for h, _ in self.commands):
            raise CommandError(f"host {host.name} ({host.address}): SSH failed: banner not read in 15 s")
        return super().connect(host)


class BmcConn:
    def __init__(self, answers, refuse=False):
        self.answers, self.refuse = answers, refuse

    def run(self, argv, timeout_s):
        if self.refuse:
            return CommandResult(argv, 1, "", "n1: BMC 127.0.9.1: login refused (HTTP 401)", 0.01, False)
        return CommandResult(argv, 0, json.dumps(self.answers), "", 0.01, False)

    def close(self):
        pass


class StandIn:
    """The nodes' BMCs: each says the node is on; a power cycle removes its flag (the node boots healthy)."""

    def __init__(self, flags, outcome="done", bmc=True):
        self.flags, self.outcome, self.bmc = flags, outcome, bmc
        self.cycled: list[str] = []

    def connect(self, host, booted=None):
        return BmcConn({"power": "On"}) if self.bmc else None

    def view(self, host):
        return f"BMC 127.0.9.{host.name[-1]} (redfish): power On, health Critical; last event log entries: " \
               "2026-12-04T19:00:00+00:00 Critical 'CPU0 IERR' (CPU0)"

    def power_cycle(self, hosts, say, known=None):
        out = []
        for h in hosts:
            self.cycled.append(h.name)
            if self.outcome == "done":
                self.flags[h.name].unlink()
            out.append(Cycled(h.name, self.outcome, "PowerCycle accepted", "aaaa", "bbbb" if self.outcome == "done"
                              else None, 12.0, f"127.0.9.{h.name[-1]}"))
        return out


def _checks(tmp_path, monkeypatch):
    folder = tmp_path / "site-checks"
    folder.mkdir()
    flags = {n: tmp_path / f"hung-{n}" for n in ("n1", "n2")}
    (folder / "site_hang.py").write_text(textwrap.dedent(HANG).format(flags=tmp_path))
    (folder / "site_after.py").write_text(AFTER)
    (folder / "site_oob.py").write_text(OOB)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    return flags


def _run(tmp_path, transport, oob, recover=0):
    hosts = [Host(n, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr") for n in ("n1", "n2")]
    rundir = RunStore(tmp_path / "runs").create("oob")
    run = Run(run_id="oob", phases=["burnin"], hosts={h.name: HostRecord(h.profile) for h in hosts})
    said: list[str] = []
    rundir.begin(run)  # each result journaled as it ends, as the job does (what --resume reads)
    outcome = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_oob", "site_hang", "site_after"],
                                                                    recover=recover),
                         transport, burnin.Sink(rundir, run.hosts, Control(progress=said.append), rundir.record), oob)
    run.results, run.power_actions, run.finished = outcome.results, outcome.power_actions or None, "now"
    assert schema.problems(json.loads(json.dumps(run.to_dict()))) == []
    rundir.save(run)
    return {(r.check, r.hosts[0]): r for r in run.results}, run, said


def _hang_n1(tmp_path, monkeypatch):
    flags = _checks(tmp_path, monkeypatch)
    flags["n1"].write_text("")
    return flags, Hanging(flags)


def test_a_lost_node_is_named_with_its_bmc_view_and_its_next_checks_do_not_wait(tmp_path, monkeypatch):
    flags, transport = _hang_n1(tmp_path, monkeypatch)
    (tmp_path / "toolhang-n2").write_text("")  # n2's tool hangs; n2 itself answers
    results, run, said = _run(tmp_path, transport, StandIn(flags))
    # n2's tool hung, the node answered the probe; n1 stopped answering
    assert results[("site_hang", "n2")].outcome is Outcome.ERROR
    assert "timed out" in results[("site_hang", "n2")].message
    assert results[("site_after", "n2")].outcome is Outcome.PASS
    lost = results[("site_after", "n1")]
    assert lost.outcome is Outcome.ERROR and "n1 stopped answering over SSH" in lost.message
    assert "power On, health Critical" in lost.message and "CPU0 IERR" in lost.message
    assert ("n1", ["echo", "ok"]) not in transport.commands  # at once: never sent to the dead node to time out
    assert results[("site_oob", "n1")].outcome is Outcome.PASS  # asked of the BMC, not the node
    assert ("node_recovery", "n1") not in results and run.power_actions is None  # --recover not asked
    assert any("lost:" in line for line in said)


def test_recover_power_cycles_the_hung_node_reruns_its_node_checks_and_flags_it(tmp_path, monkeypatch):
    flags, transport = _hang_n1(tmp_path, monkeypatch)
    stand_in = StandIn(flags)
    results, run, _ = _run(tmp_path, transport, stand_in, recover=1)
    assert stand_in.cycled == ["n1"]
    note = results[("node_recovery", "n1")]
    assert note.outcome is Outcome.FAIL and "power-cycled through its BMC" in note.message
    assert [f.fault for f in note.findings if not f.ok] == ["NODE_POWER_CYCLED"]
    first = {f.device: f.value for f in note.findings if f.metric == "first_attempt"}
    assert first["site_after"] == "error"  # the first attempt stays in the report
    again = results[("site_after", "n1")]
    assert again.outcome is Outcome.PASS and again.attempt == 2
    assert run.power_actions == [{"host": "n1", "action": "cycle", "outcome": "done", "detail": "PowerCycle accepted",
                                  "bmc": "127.0.9.1", "before_boot_id": "aaaa", "after_boot_id": "bbbb",
                                  "seconds": 12.0}]
    assert run.verdicts()["n1"] == "fail"  # flagged though its checks passed the second time
    again = reevaluate.reevaluate(RunStore(tmp_path / "runs").open("oob"), run, None)  # provision evaluate
    assert [r.outcome for r in again if r.check == "node_recovery"] == [Outcome.FAIL]  # kept as recorded


def test_a_power_cycle_not_carried_out_is_never_called_done(tmp_path, monkeypatch):
    flags, transport = _hang_n1(tmp_path, monkeypatch)
    results, run, _ = _run(tmp_path, transport, StandIn(flags, outcome="not_carried_out"), recover=1)
    note = results[("node_recovery", "n1")]
    assert note.outcome is Outcome.FAIL and "did not bring it back (not_carried_out)" in note.message
    assert [f.fault for f in note.findings if f.fault] == ["NODE_NOT_RECOVERED"]
    assert results[("site_after", "n1")].outcome is Outcome.ERROR and results[("site_after", "n1")].attempt == 1
    assert run.power_actions[0]["outcome"] == "not_carried_out"


def test_the_budget_bounds_the_power_cycles(tmp_path, monkeypatch):
    flags = _checks(tmp_path, monkeypatch)
    for flag in flags.values():
        flag.write_text("")
    transport = Hanging(flags)
    stand_in = StandIn(flags)
    results, run, _ = _run(tmp_path, transport, stand_in, recover=1)
    assert stand_in.cycled == ["n1"]
    assert "recovery budget" in results[("node_recovery", "n2")].message


def test_an_out_of_band_check_is_skipped_without_a_bmc(tmp_path, monkeypatch):
    flags = _checks(tmp_path, monkeypatch)
    results, _, _ = _run(tmp_path, Hanging(flags), StandIn(flags, bmc=False))
    assert results[("site_oob", "n1")].outcome is Outcome.SKIPPED
    assert "provision_bmc_address" in results[("site_oob", "n1")].message
    results, _, _ = _run(tmp_path / "local", Hanging(flags), None)
    assert "--local" in results[("site_oob", "n1")].message


def test_a_bmc_that_fails_beside_the_node_costs_only_its_own_part(tmp_path, monkeypatch):
    flags = _checks(tmp_path, monkeypatch)
    (tmp_path / "site-checks" / "site_mixed.py").write_text(MIXED)
    stand_in = StandIn(flags)
    stand_in.connect = lambda host, booted=None: BmcConn({}, refuse=True)
    hosts = [Host("n1", "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr")]
    rundir = RunStore(tmp_path / "runs").create("mixed")
    run = Run(run_id="mixed", phases=["burnin"], hosts={"n1": HostRecord("h100-sxm5-80g-ndr")})
    result, = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_mixed"]), Hanging(flags),
                         burnin.Sink(rundir, run.hosts, Control(progress=lambda line: None)), stand_in).results
    assert result.outcome is Outcome.PASS  # the node's output judged
    assert "not read from the BMC: bmc: bmc exited 1: n1: BMC 127.0.9.1: login refused (HTTP 401)" in result.message


def test_a_resumed_run_keeps_the_second_attempt_and_the_record(tmp_path, monkeypatch):
    from provision.commands._job import resume

    flags, transport = _hang_n1(tmp_path, monkeypatch)
    results, run, _ = _run(tmp_path, transport, StandIn(flags), recover=1)
    kept = resume.kept(RunStore(tmp_path / "runs").open("oob"))  # what --resume would replay from the journal
    n1 = {r.check: (r.outcome, r.attempt) for r in kept if r.hosts == ("n1",)}
    assert n1["site_after"] == (Outcome.PASS, 2) and n1["node_recovery"] == (Outcome.FAIL, 2)
    assert len([r for r in kept if r.hosts == ("n1",) and r.check == "site_after"]) == 1  # the first attempt's gone
