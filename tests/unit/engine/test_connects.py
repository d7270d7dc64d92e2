"""README's "at most 64 connections being opened at once": over many hosts, every one connecting at the start of the
run, the engine never has more than ``CONNECTS_AT_ONCE`` ``connect`` calls in flight, and reaches that many (the
bound is not a lock that opens one at a time). Commands on open connections are not held by it."""
import threading
import time

import pytest

from provision import checks, targets
from provision.engine import burnin
from provision.engine.control import Control
from provision.engine.transport import CommandResult
from provision.inventory import Host
from provision.results.model import HostRecord
from provision.results.store import RunStore

NODE_CHECK = '''
"""conn_probe: a node check that runs one command (a test)."""
from provision.checks.base import Check, Step
from provision.checks.rules import expect


def steps(profile, host):
    return [Step("", ["probe"], parser="probe")]


def judge(ctx):
    return [expect("node", "said", ctx.parsed[""]["said"], "ok", "PROBE", "none")]


CHECK = Check(id="conn_probe", tool="probe", order=5, steps=steps, parsers={"probe": lambda t: {"said": t.strip()}},
              judge=judge)
'''


class Finished:
    """A command that has already run: every command prints ok (uname, os-release and the probe alike)."""

    def __init__(self, argv):
        self.result = CommandResult(list(argv), 0, "ok\n", "", 0.0, False)

    def read_until(self, text, timeout_s):
        return text in self.result.stdout

    def wait(self):
        return self.result

    close = wait

    def kill(self):
        pass


class Connection:
    def run(self, argv, timeout_s):
        return Finished(argv).result

    def start(self, argv, timeout_s):
        return Finished(argv)

    def close(self):
        pass


class SlowHandshakes:
    """A transport whose ``connect`` takes a while, as an SSH handshake does, and counts the calls in flight. Each
    call waits (``patience`` seconds in all) until ``bound`` calls have been in flight together, so that reaching the
    bound does not depend on how the threads happen to be scheduled."""

    def __init__(self, bound, patience=5.0):
        self.bound, self.patience = bound, patience
        self.lock = threading.Condition()
        self.in_flight = self.peak = self.calls = 0

    def connect(self, host):
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.lock.notify_all()
            if not self.lock.wait_for(lambda: self.peak >= self.bound, self.patience):
                self.patience = 0.0  # the bound is never reached: waiting on at every call only slows the failure
        time.sleep(0.005)  # a handshake's length: calls beyond the bound, if let in, overlap it
        with self.lock:
            self.in_flight -= 1
        return Connection()


@pytest.mark.parametrize("bound", [8, burnin.CONNECTS_AT_ONCE])
def test_at_most_the_bound_of_connections_are_opened_at_once_and_it_is_reached(bound, tmp_path, monkeypatch):
    assert burnin.CONNECTS_AT_ONCE == 64  # the figure README states
    folder = tmp_path / "site-checks"
    folder.mkdir()
    (folder / "conn_probe.py").write_text(NODE_CHECK)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    monkeypatch.setattr(burnin, "CONNECTS_AT_ONCE", bound)
    hosts = [Host(f"gpu{i:03d}", "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr") for i in range(200)]
    transport = SlowHandshakes(bound)
    results = burnin.run(targets.build(hosts), burnin.BurninRequest(["conn_probe"]), transport,
                         burnin.Sink(RunStore(tmp_path / "runs").create(),
                                     {h.name: HostRecord(h.profile) for h in hosts},
                                     Control(progress=lambda _: None))).results
    assert transport.calls == 200 and transport.in_flight == 0
    assert transport.peak == bound
    assert [r.outcome.value for r in results] == ["pass"] * 200  # every host connected once and its check ran
