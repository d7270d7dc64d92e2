"""The burn-in engine: plan every check into jobs by scope, run them, save raw output, judge.

A node-scope check is one job per host; a pair check one job per pair of hosts (``plan``);
a group check one job per set of hosts of one profile, launched from the first; a cluster
check one job over every host. The ``Scheduler`` runs jobs with disjoint hosts at once (at
most ``MAX_PARALLEL_JOBS``) and a host's jobs in check order, over one connection per host
from the ``Transport``. Outcome in stages: not applicable -> skipped; the tool could not run
(exit status, timeout, connection, a server that never got ready) -> error; otherwise the
``verdict`` of its outputs. Every output is saved in the run folder as the store names it.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from provision import profiles
from provision.checks import Check, registry
from provision.checks.base import Group, Pair, Step
from provision.engine import readiness
from provision.engine.scheduler import Scheduler
from provision.engine.transport import CommandResult, Connection, Transport
from provision.engine.verdict import verdict
from provision.errors import CommandError, ProfileError
from provision.inventory import Host
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Scope
from provision.results.store import OS_RELEASE, RunDir

MAX_PARALLEL_JOBS = 64
READY_TIMEOUT_S = 30.0  # a server not listening after this long will not be


@dataclass
class HostState:
    """One host during a burn-in: its profile (or why it has none), its connection once opened."""

    host: Host
    record: HostRecord
    profile: profiles.Profile | None = None
    problem: str = ""
    conn: Connection | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def connected(self) -> Connection:
        if self.conn is None:
            raise CommandError(f"host {self.name}: not connected")
        return self.conn

    @property
    def judged_by(self) -> profiles.Profile:
        if self.profile is None:
            raise ProfileError(f"host {self.name}: no profile")
        return self.profile


@dataclass(frozen=True)
class Job:
    check: Check
    hosts: tuple[str, ...]


class Burnin:
    """One burn-in of ``hosts`` (``provision.inventory.Host``) into ``rundir``; ``records``
    are the run's HostRecords (their os_target is filled in here)."""

    def __init__(self, hosts: list[Host], records: dict[str, HostRecord], rundir: RunDir, transport: Transport,
                 progress=print, workers: int = MAX_PARALLEL_JOBS):
        self.rundir, self.transport, self.workers = rundir, transport, workers
        self.states = {h.name: HostState(h, records[h.name]) for h in hosts}
        self.say_lock = threading.Lock()
        self.progress = progress
        for state in self.states.values():
            try:
                state.profile = profiles.for_host(str(state.host.profile), state.host.vars, state.name)
            except ProfileError as exc:
                state.problem = str(exc)

    def run(self, checks: list[Check]) -> list[CheckResult]:
        """Every check's results, node scope first, each in check order then host order."""
        jobs = plan(checks, self.states)
        try:
            return Scheduler(self.execute, lambda job: job.hosts, self.workers).run(jobs)
        finally:
            for state in self.states.values():
                if state.conn is not None:
                    state.conn.close()

    def say(self, line: str) -> None:
        with self.say_lock:
            self.progress(line)

    def execute(self, job: Job) -> CheckResult:
        started = time.monotonic()
        result = self._execute(job)
        result.duration_s = round(time.monotonic() - started, 2)
        self.say(f"  burnin {'+'.join(job.hosts):<12} {job.check.id:<16} {result.outcome.value:<7} "
                 f"{result.duration_s:6.1f} s")
        return result

    def _execute(self, job: Job) -> CheckResult:
        check, states = job.check, [self.states[h] for h in job.hosts]

        def error(message: str, run_error: bool = True) -> CheckResult:
            return CheckResult(check.id, job.hosts, Outcome.ERROR, message, scope=check.scope, run_error=run_error)

        problems = [s.problem for s in states if s.problem]
        if problems:
            return error("; ".join(problems))
        profile = states[0].judged_by
        if check.scope is Scope.PAIR and len(states) != 2:
            return CheckResult(check.id, job.hosts, Outcome.SKIPPED, "a pair check needs two hosts", scope=check.scope)
        if not all(s.profile and s.profile.has(need) for s in states for need in check.needs):
            return CheckResult(check.id, job.hosts, Outcome.SKIPPED, f"not applicable to profile {profile.name}",
                               scope=check.scope)
        unreachable = [p for p in (self._connect(s) for s in states) if p]
        if unreachable:
            return error("; ".join(unreachable))
        profile = states[0].judged_by
        try:
            steps = check.steps(profile, _target(check, states))
        except ProfileError as exc:
            return error(str(exc))
        timeout_s = float((states[0].host.vars.get("provision_check_timeouts") or {}).get(check.id, check.timeout_s))
        try:
            texts, raw, failures = self._run_steps(check, job, states, steps, timeout_s)
        except CommandError as exc:
            return error(str(exc))
        if failures:
            out = error("; ".join(failures))
        else:
            out = verdict(check, job.hosts, check.scope, profile, texts)
        out.raw = raw
        return out

    def _connect(self, state: HostState) -> str:
        """Open the host's connection and read its OS once; '' when connected, else why not."""
        with state.lock:
            if state.conn is None and not state.problem:
                try:
                    state.conn = self.transport.connect(state.host)
                    self._read_os(state)
                except CommandError as exc:
                    state.problem = str(exc)
                    self.say(f"  burnin {state.name:<12} unreachable: {exc}")
            return state.problem

    def _read_os(self, state: HostState) -> None:
        result = state.connected.run(["cat", "/etc/os-release"], 30.0)
        if result.rc != 0:
            return
        self.rundir.write(f"raw/{state.name}/{OS_RELEASE}", result.stdout)
        state.record.os_release = parse_os_release(result.stdout)
        state.record.os_target = profiles.target_of(state.record.os_release)
        state.profile = state.judged_by.for_target(state.record.os_target)

    def _run_steps(self, check: Check, job: Job, states: list[HostState], steps: list[Step], timeout_s: float):
        texts, raw, failures = {}, [], []
        for step in steps:
            runner, server_state = states[step.on], states[step.server_on]
            result, server = self._run_step(step, runner, server_state, timeout_s)
            raw.append(self._save(check, job, runner.name, step, len(steps), result, server))
            texts[step.key] = result.stdout
            problem = (server[1] if server and server[1] else "") or _run_problem(result, timeout_s)
            if problem:
                failures.append(f"{step.key + ': ' if step.key else ''}{problem}")
        return texts, raw, failures

    def _run_step(self, step: Step, runner: HostState, server_state: HostState, timeout_s: float):
        """The step's result, and (its server's result, why the server was not ready) when it has one."""
        if not step.server or step.ready is None:
            return runner.connected.run(step.argv, timeout_s), None
        server = server_state.connected.start(step.server, timeout_s)
        not_ready = readiness.wait_ready(server, server_state.connected, step.ready, server_state.host.address,
                                         min(READY_TIMEOUT_S, timeout_s))
        if not_ready:
            stopped = server.close()
            return CommandResult(step.argv, 1, "", "", 0.0, False), (stopped, f"{step.server[0]} server: {not_ready}")
        result = runner.connected.run(step.argv, timeout_s)
        served = server.wait() if result.rc == 0 else server.close()
        return result, (served, "")

    def _save(self, check: Check, job: Job, host: str, step: Step, steps: int, result: CommandResult,
              server) -> RawOutput:
        rel = self.rundir.raw_name(check.id, check.scope, job.hosts, host, step.key, steps)
        self.rundir.write(rel, result.stdout)
        stderr = self.rundir.write(rel[:-4] + ".stderr", result.stderr) if result.stderr.strip() else ""
        served = self.rundir.write(rel[:-4] + ".server.txt", server[0].stdout) if server else ""
        return RawOutput(step.key, host, rel, stderr, served)


def plan(checks: list[Check], states: dict[str, HostState]) -> list[Job]:
    """Jobs in run order: node checks one per host; pair checks disjoint pairs (``pairs``);
    group checks one per profile's hosts; cluster checks one over every host."""
    jobs: list[Job] = []
    names = list(states)
    for check in checks:
        if check.scope is Scope.NODE:
            jobs += [Job(check, (h,)) for h in names]
        elif check.scope is Scope.PAIR:
            jobs += [Job(check, p) for p in pairs(names)] if len(names) > 1 else [Job(check, (names[0],))]
        elif check.scope is Scope.GROUP:
            by_profile: dict[str, list[str]] = {}
            for h, s in states.items():
                by_profile.setdefault(str(s.host.profile), []).append(h)
            jobs += [Job(check, tuple(hs)) for hs in by_profile.values()]
        else:
            jobs.append(Job(check, tuple(names)))
    return jobs


def pairs(names: list[str]) -> list[tuple[str, str]]:
    """Disjoint neighbours (0,1), (2,3), ...; an odd last host pairs with the first, in a later round."""
    out = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
    if len(names) % 2:
        out.append((names[-1], names[0]))
    return out


def _target(check: Check, states: list[HostState]):
    hosts = tuple(s.host for s in states)
    if check.scope is Scope.NODE:
        return hosts[0]
    if check.scope is Scope.PAIR and len(hosts) == 2:
        return Pair(*hosts)
    return Group(hosts)


def parse_os_release(text: str) -> dict:
    """``KEY=value`` lines of os-release(5), quotes removed."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def _run_problem(result: CommandResult, timeout_s: float) -> str:
    """Why a step's run cannot be judged ('' when it can)."""
    if result.timed_out:
        return f"{result.argv[0]} timed out after {timeout_s:.0f} s (hung tool?)"
    if result.rc == 127:
        return f"{result.argv[0]} is not installed (exit 127)"
    if result.rc != 0:
        last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
        return f"{result.argv[0]} exited {result.rc}: {last[:200]}"
    return ""


def run(hosts: list[Host], records: dict[str, HostRecord], rundir: RunDir, transport: Transport,
        only: list[str] | None = None, progress=print) -> list[CheckResult]:
    """Burn in ``hosts``: every registered check (or those in ``only``)."""
    checks = [c for c in registry().values() if not only or c.id in only]
    return Burnin(hosts, records, rundir, transport, progress).run(checks)
