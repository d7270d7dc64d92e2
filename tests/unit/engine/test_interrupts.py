"""Nothing measured is lost: a stop request kills the tools on the nodes and keeps every finished
result; an exception or a lost connection in one job is that job's error; a killed run's journal
keeps its results; a poisoned number on one host of many errs that host alone."""
import json
import threading
import time

from provision import checks, targets
from provision.engine import burnin
from provision.engine.control import Control
from provision.errors import CommandError
from provision.inventory import Host
from provision.results import schema
from provision.results.model import HostRecord, Outcome, Run
from provision.results.store import RunStore
from tests.unit.engine.local import LocalConnection, LocalTransport

MODULE = '''
"""{name}: a test check."""
import os
from provision.checks.base import Check, Step
from provision.checks.rules import measured
from provision.results.model import Reference

REF = Reference(10.0, -0.1, None, "GB/s", "a test figure", {{}})


def steps(profile, host):
    return [Step("", ["sh", "-c", {command!r}.replace("HOST", host.name)], parser="t")]


def parse(text):
    words = text.split()
    if {crash!r} and words and words[0] == "crash":
        raise RuntimeError("a bug in this check")
    return {{"tool": "t", "bw": float(words[-1])}}


def judge(ctx):
    return [measured("node", "bw_GBps", ctx.parsed[""]["bw"], REF, "SITE_SLOW", "x")]


CHECK = Check(id="{name}", tool="t", order={order}, steps=steps, parsers={{"t": parse}}, judge=judge,
              metrics={{"bw_GBps": "GB/s"}})
'''


def add_check(folder, name, command, order, crash=False):
    (folder / f"{name}.py").write_text(MODULE.format(name=name, command=command, order=order, crash=crash))


def host(name):
    return Host(name, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr")


def burn(tmp_path, names, only, transport=None, control=None):
    hosts = [host(n) for n in names]
    rundir = RunStore(tmp_path / "runs").create()
    run = Run(run_id=rundir.name, hosts={h.name: HostRecord(h.profile) for h in hosts})
    control = control or Control(progress=lambda _: None)
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(only), transport or LocalTransport(),
                             burnin.Sink(rundir, run.hosts, control, rundir.record)).results
    return rundir, run


def test_a_stop_kills_the_running_tool_and_keeps_what_finished(tmp_path, monkeypatch):
    add_check(tmp_path, "quick", "echo bw 12", 1)
    started = tmp_path / "slow-n1.started"
    add_check(tmp_path, "slow", f"touch {tmp_path}/slow-HOST.started; sleep 120; echo bw 12", 2)
    add_check(tmp_path, "later", "echo bw 12", 3)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    control = Control(progress=lambda _: None)
    transport = LocalTransport()

    def stop_once_slow_runs():  # the stop comes while the slow tool runs, however busy the machine
        for _ in range(3000):  # 300 s at most: a hang guard only
            if started.exists():
                break
            time.sleep(0.1)
        control.request_stop("SIGTERM")

    threading.Thread(target=stop_once_slow_runs, daemon=True).start()
    rundir, run = burn(tmp_path, ["n1", "n2"], ["quick", "slow", "later"], transport, control)
    slow = [p for p in transport.processes if "sleep 120" in " ".join(p.argv)]
    assert slow and all(p.proc.returncode < 0 for p in slow)  # killed by a signal, not its 120 s run to the end
    rows = {(r.check, r.hosts[0]): r for r in run.results}
    assert rows[("quick", "n1")].outcome is Outcome.PASS and rows[("quick", "n2")].outcome is Outcome.PASS
    assert rows[("slow", "n1")].message == "interrupted (SIGTERM) while running"
    assert rows[("later", "n1")].message == "interrupted (SIGTERM) before it ran"
    assert all(r.outcome is Outcome.ERROR and r.run_error for k, r in rows.items() if k[0] != "quick")
    assert not any(p.proc.poll() is None for p in transport.processes)  # nothing left running
    journaled = [json.loads(line)["check"] for line in rundir.journal.read_text().splitlines()]
    assert sorted(journaled) == ["later", "later", "quick", "quick", "slow", "slow"]


def test_an_exception_in_one_check_is_that_checks_error(tmp_path, monkeypatch):
    add_check(tmp_path, "buggy", "echo crash HOST 1", 1, crash=True)
    add_check(tmp_path, "fine", "echo bw 12", 2)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    _, run = burn(tmp_path, ["n1", "n2"], ["buggy", "fine"])
    rows = {(r.check, r.hosts[0]): r for r in run.results}
    assert rows[("buggy", "n1")].outcome is Outcome.ERROR
    assert "internal error in buggy: RuntimeError: a bug in this check" in rows[("buggy", "n1")].message
    assert rows[("fine", "n1")].outcome is Outcome.PASS and rows[("fine", "n2")].outcome is Outcome.PASS


class DroppingTransport(LocalTransport):
    """n2's connection drops after its first three commands (uname -r, cat /etc/os-release, the first check)."""

    def connect(self, host):
        conn = super().connect(host)
        if host.name != "n2":
            return conn
        count = [0]

        class Dropping(LocalConnection):
            def start(self, argv, timeout_s):
                count[0] += 1
                if count[0] > 3:
                    raise CommandError("host n2: could not start sh: Socket is closed")
                return super().start(argv, timeout_s)
        return Dropping(host, self)


def test_a_connection_lost_mid_host_keeps_the_results_judged_before(tmp_path, monkeypatch):
    add_check(tmp_path, "first", "echo bw 12", 1)
    add_check(tmp_path, "second", "echo bw 12", 2)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    _, run = burn(tmp_path, ["n1", "n2"], ["first", "second"], DroppingTransport())
    rows = {(r.check, r.hosts[0]): r for r in run.results}
    assert rows[("first", "n2")].outcome is Outcome.PASS
    assert rows[("second", "n2")].outcome is Outcome.ERROR and "Socket is closed" in rows[("second", "n2")].message
    assert rows[("second", "n1")].outcome is Outcome.PASS


def test_a_poisoned_number_on_one_host_errs_that_host_alone(tmp_path, monkeypatch):
    add_check(tmp_path, "bw", "[ HOST = n3 ] && echo bw 1e400 || echo bw 12", 1)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    rundir, run = burn(tmp_path, ["n1", "n2", "n3", "n4"], ["bw"])
    rundir.save(run)
    assert run.verdicts() == {"n1": "pass", "n2": "pass", "n3": "error", "n4": "pass"}
    assert "non-finite value" in run.results[2].message
    report = json.loads(rundir.report.read_text())  # strict JSON parsers read it too
    assert "Infinity" not in rundir.report.read_text() and schema.problems(report) == []


def test_a_killed_runs_journal_keeps_its_results(tmp_path, monkeypatch):
    add_check(tmp_path, "bw", "echo bw 12", 1)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    rundir, run = burn(tmp_path, ["n1", "n2"], ["bw"])
    rundir.save(Run(run_id=run.run_id, hosts=run.hosts))  # the last save before a SIGKILL held no results
    with open(rundir.journal, "a") as journal:
        journal.write('{"check": "bw", "hos')  # the line the kill cut
    again = rundir.load()
    def rows(results):  # the journal holds results in the order they ended, which varies between hosts
        return sorted((r.check, r.hosts, r.outcome.value) for r in results)
    assert rows(again.results) == rows(run.results)


def test_run_folders_and_files_are_private(tmp_path, monkeypatch):
    add_check(tmp_path, "bw", "echo bw 12", 1)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    rundir, run = burn(tmp_path, ["n1"], ["bw"])
    rundir.save(run)
    assert rundir.path.stat().st_mode & 0o777 == 0o700
    for path in rundir.path.rglob("*"):
        assert path.stat().st_mode & 0o077 == 0, path


class FlakyTransport(LocalTransport):
    """The first connection to each host is refused; a wrong host key is refused every time."""

    def __init__(self, key_mismatch=()):
        super().__init__()
        self.tries: dict[str, int] = {}
        self.key_mismatch = set(key_mismatch)

    def connect(self, host):
        self.tries[host.name] = self.tries.get(host.name, 0) + 1
        if host.name in self.key_mismatch:
            raise CommandError(f"host {host.name}: SSH failed: Server {host.name!r} not found in known_hosts")
        if self.tries[host.name] == 1:
            raise CommandError(f"host {host.name}: SSH failed: [Errno 111] Connection refused")
        return super().connect(host)


def test_connecting_is_retried_but_a_host_key_refusal_is_not(tmp_path, monkeypatch):
    add_check(tmp_path, "bw", "echo bw 12", 1)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    transport = FlakyTransport(key_mismatch={"n2"})
    _, run = burn(tmp_path, ["n1", "n2"], ["bw"], transport)
    assert run.verdicts() == {"n1": "pass", "n2": "error"}
    assert transport.tries == {"n1": 2, "n2": 1}  # a check is never re-run; only the connection is


def test_the_watchdog_names_long_running_jobs():
    control = Control(progress=lambda _: None, watchdog_s=60)
    control.job_started("node03 gpu_stress")
    control.job_started("node01 xid")
    control.running["node01 xid"] = control.running["node03 gpu_stress"] + 50  # started 50 s later
    rows = control.long_running(now=control.running["node03 gpu_stress"] + 100)
    assert [label for label, _ in rows] == ["node03 gpu_stress"]
