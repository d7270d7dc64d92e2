"""One health check of this machine: its checks through the burn-in engine as local processes, within one budget.

The engine (``provision.engine.burnin.run``) runs each check's steps here (``provision.engine.local``: argv lists under
coreutils ``timeout``), parses and judges them as a burn-in does, so a health check and a burn-in judge the same
output the same way. What differs:

- raw outputs stay in memory (``MemoryRunDir``), unless the call keeps a run folder;
- each check's timeout is at most the budget, and when the budget ends a timer stops the engine: the tool running is
  killed and every check not ended is an error ("interrupted: budget"), the health check's, never the node's; a
  check that had ended keeps its result (one judged while the timer fired too);
- the output of ``nvidia-smi -q -x``, which three checks read, is taken once per call (``SharedReads``): on an 8-GPU
  node it takes about a second, and a second budget for it would be most of a prolog's.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from provision.engine import burnin as engine
from provision.engine.control import Control
from provision.engine.local import LocalTransport
from provision.engine.transport import CommandResult
from provision.results.model import CheckResult, HostRecord
from provision.results.store import RunDir
from provision.targets import Target

BUDGET_REASON = "budget"  # Control.reason when the budget ended the call
SHARED = (("nvidia-smi", "-q", "-x"),)  # read-only queries whose output a call takes once


class MemoryRunDir(RunDir):
    """A run folder that keeps what the engine writes in memory: a health check every few minutes writes no raw
    output to disk (``files``: relative path -> text)."""

    def __init__(self, name: str):
        super().__init__(Path("/nonexistent/provision-health") / name)
        self.files: dict[str, str] = {}

    def write(self, rel: str, text: str) -> str:
        self.inside(rel)
        self.files[rel] = text
        return rel

    def read(self, rel: str, origin: str) -> str:
        from provision.errors import ProvisionError

        if rel not in self.files:
            raise ProvisionError(f"{origin}: raw output {rel} is missing")
        return self.files[rel]


class _Done:
    """A finished process (an answer taken earlier in the call)."""

    def __init__(self, result: CommandResult):
        self.result = result

    def read_until(self, text: str, timeout_s: float) -> bool:
        return text in self.result.stdout

    def wait(self) -> CommandResult:
        return self.result

    def close(self) -> CommandResult:
        return self.result

    def kill(self) -> None:
        pass


class _Waiting:
    """A started process whose result is kept for the call once it ends well (exit 0)."""

    def __init__(self, process, key: tuple[str, ...], cache: dict):
        self.process, self.key, self.cache = process, key, cache

    def read_until(self, text: str, timeout_s: float) -> bool:
        return self.process.read_until(text, timeout_s)

    def wait(self) -> CommandResult:
        result = self.process.wait()
        if result.rc == 0 and not result.timed_out:
            self.cache[self.key] = result
        return result

    def close(self) -> CommandResult:
        return self.process.close()

    def kill(self) -> None:
        self.process.kill()


class SharedReads:
    """A transport whose connections run each read of ``SHARED`` once per call: a later identical argv gets the
    first answer (only a complete one: exit 0, not timed out). Everything else runs as ``inner`` runs it."""

    def __init__(self, inner=None):
        self.inner = inner or LocalTransport()
        self.cache: dict[tuple[str, ...], CommandResult] = {}
        self.lock = threading.Lock()

    def connect(self, host):
        return _SharedConnection(self.inner.connect(host), self)


class _SharedConnection:
    def __init__(self, conn, shared: SharedReads):
        self.conn, self.shared = conn, shared

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        return self.start(argv, timeout_s).wait()

    def start(self, argv: list[str], timeout_s: float):
        key = tuple(argv)
        if key not in SHARED:
            return self.conn.start(argv, timeout_s)
        with self.shared.lock:
            kept = self.shared.cache.get(key)
        if kept is not None:
            return _Done(dataclasses.replace(kept, duration_s=0.0))
        return _Waiting(self.conn.start(argv, timeout_s), key, self.shared.cache)

    def close(self) -> None:
        self.conn.close()


@dataclass
class Outcome:
    """What one call gave: the results in check order, whether the budget ``cut`` it, its wall time, the raw
    outputs (in memory, or in the run folder kept), the node's record (OS, kernel)."""

    results: list[CheckResult]
    cut: bool
    wall_s: float
    rundir: RunDir
    record: HostRecord


def run(target: Target, checks: list[str], budget_s: float, rundir: RunDir | None = None,
        say=lambda line: None) -> Outcome:
    """Run ``checks`` (ids, in run order) on this machine as ``target``, within ``budget_s`` seconds in all; raw
    outputs into ``rundir`` (None: memory). Never raises for a check that cannot run: that is its error result."""
    # a check's timeout at most just past the budget: the budget's timer, not the check's own timeout, ends a check
    # still running then, so the line names the check the budget cut
    if not checks:  # the engine reads no checks as every check: a call with none runs nothing
        return Outcome([], False, 0.0, rundir if rundir is not None else MemoryRunDir("health"),
                       HostRecord(target.host.profile, {}))
    capped = {c: min(float(target.timeouts.get(c, _timeout(c))), budget_s + 1.0) for c in checks}
    target = dataclasses.replace(target, timeouts=MappingProxyType({**target.timeouts, **capped}))
    record = HostRecord(target.host.profile, {})
    rundir = rundir if rundir is not None else MemoryRunDir("health")
    control = Control(say, watchdog_s=3600.0)
    timer = threading.Timer(budget_s, control.request_stop, [BUDGET_REASON])
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    try:
        request = engine.BurninRequest(tuple(checks), "node", "health", None)
        outcome = engine.run([target], request, SharedReads(), engine.Sink(rundir, {target.name: record}, control))
    finally:
        timer.cancel()
    # cut: the budget ended a check before its end. A call whose every check ended judged the node, even where the
    # timer fired while the last one was being judged (a parse is not interrupted).
    stopped = control.stop.is_set() and control.reason == BUDGET_REASON
    cut = stopped and any(r.outcome.value == "error" and "interrupted" in r.message for r in outcome.results)
    return Outcome(outcome.results, cut, time.monotonic() - started, rundir, record)


def _timeout(check_id: str) -> float:
    from provision.checks import registry

    return float(registry()[check_id].budget.timeout_s)
