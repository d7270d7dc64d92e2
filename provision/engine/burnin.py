"""The burn-in engine: plan every check into jobs by scope, run them, save raw output, judge.

A node-scope check is one job per host; pair, group and cluster checks are jobs over several
hosts (``provision.engine.jobs``). The ``Scheduler`` runs jobs with disjoint hosts at once (every
host at once unless ``forks`` lowers it) and a host's jobs in check order, over one connection
per host from the ``Transport``; at most ``CONNECTS_AT_ONCE`` connections are being opened at
a time, while the commands on open connections are never held back. Outcome in stages: not
applicable -> skipped; the tool could not run (exit status, timeout, connection, a server that
never got ready) -> error; otherwise the ``verdict`` of its outputs. Every output is saved in the
run folder as the store names it.

Nothing measured is lost: each result goes to ``record`` as its job ends; an exception in one
job is that job's error, never the run's; a connection lost in one job leaves the results
judged before it; a stop request (``Control``) kills the tools running on the nodes and gives
every unfinished job an "interrupted" error. Connecting is retried (``CONNECT_ATTEMPTS``); a
check is never re-run.
"""
from __future__ import annotations

import dataclasses
import re
import shlex
import threading
import time
from datetime import datetime, timezone
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from provision import profiles
from provision.checks import Check, registry
from provision.checks.base import Step, gathered_steps, parse_outputs
from provision.engine import cluster, lost, placement, readiness, recovery
from provision.engine.control import Control
from provision.engine.jobs import Job, plan, target
from provision.engine.outofband import OutOfBand
from provision.engine.scheduler import Scheduler
from provision.engine.transport import CommandResult, Connection, Transport
from provision.engine.verdict import verdict
from provision.errors import CommandError, ParseError, ProfileError
from provision.inventory import Host, bmcvars
from provision.targets import Target
from provision.results.events import JobFinished, JobStarted, Planned
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Scope
from provision.results.store import RunDir

READY_TIMEOUT_S = 30.0  # a server not listening after this long will not be
CONNECT_ATTEMPTS = 3    # a connection refused or reset is retried twice, 1 s then 2 s later
# Connections being opened at once. OpenSSH's sshd drops unauthenticated connections beyond
# MaxStartups (default 10:30:100, sshd_config(5)); a burst of 1,024 handshakes also queues on the
# controller's CPUs and runs into CONNECT_TIMEOUT_S. 64 keeps the simulated rack's sshd (MaxStartups
# 200:30:400) far from its limit; measured with bench/burnin_overhead.py (README, "Scale").
CONNECTS_AT_ONCE = 64
# Stack of each worker thread: a job's thread runs the engine, paramiko and a parser, none deeply
# recursive; 8 MiB (glibc's default) reserves 10 GiB of address space at 1,250 threads.
THREAD_STACK_BYTES = 1024 * 1024
_BOOT_ID = re.compile(r"[0-9a-fA-F-]{16,64}")  # a boot id: random(4)'s UUID text (a simulated node's too)


@dataclass
class HostState:
    """One host during a burn-in: its target (``provision.targets``; replaced by the same target for its OS once
    read), its record, why it cannot be reached (when it cannot), its connection once opened."""

    target: Target
    record: HostRecord
    problem: str = ""
    conn: Connection | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Out of band: its BMC's connection once opened (``bmc_opened``: tried; None: no BMC in the inventory, or it
    # could not be reached), and whether the node stopped answering over SSH (``hung``: ``burnin --recover`` may
    # power-cycle it) with its BMC's view when it did
    bmc: Connection | None = None
    bmc_opened: bool = False
    hung: bool = False
    booted: datetime | None = None  # when the node last booted, as it says (None: not read)
    boot_id: str | None = None  # its boot id when the run reached it (None: not read)

    @property
    def host(self) -> Host:
        return self.target.host

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def profile(self) -> profiles.Profile:
        return self.target.profile

    @property
    def connected(self) -> Connection:
        if self.conn is None:
            raise CommandError(f"host {self.name}: not connected")
        return self.conn



@dataclass(frozen=True)
class Sink:
    """Where a burn-in's results and what it learns go: ``rundir`` keeps every raw output (and each node's
    os-release), ``records`` are the run's HostRecords (their OS and kernel filled in as each node is reached),
    ``control`` the live progress, the event listener and the stop requests, ``journal`` receives each result as
    it ends (the run's journal and report)."""

    rundir: RunDir
    records: dict[str, HostRecord]
    control: Control = field(default_factory=Control)
    journal: Callable[[CheckResult], None] | None = None


class Burnin:
    """One burn-in of ``targets`` into ``sink``; ``forks`` is the most jobs run at once (None: as many as there are
    hosts, so every node-scope job at once)."""

    def __init__(self, targets: Sequence[Target], sink: Sink, transport: Transport, forks: int | None = None,
                 resumed: tuple[int, Sequence[CheckResult]] = (1, ()), oob: OutOfBand | None = None):
        self.rundir, self.transport, self.control = sink.rundir, transport, sink.control
        self.oob = oob  # the nodes' BMCs (``provision.engine.outofband``); None: none is reached (``--local``)
        self.recover_most = 0  # burnin --recover: how many hung nodes may be power-cycled (engine.recovery)
        self.power_actions: list[dict] = []  # what recovery did through the BMCs (report.json's power_actions)
        self.unread: dict[int, list[str]] = {}  # job -> its BMC steps that failed beside its node's (_run_steps)
        # A resumed run's attempt and the results its earlier attempts journaled, by (check, hosts) in journal order
        self.attempt = resumed[0]
        self.replayed_ids: set[int] = set()
        self.done: dict[tuple[str, tuple[str, ...]], deque[CheckResult]] = {}
        for result in resumed[1]:
            self.done.setdefault((result.check, tuple(result.hosts)), deque()).append(result)
        self.workers = max(1, len(targets)) if forks is None else forks
        self.connecting = threading.BoundedSemaphore(CONNECTS_AT_ONCE)
        self.states = {t.name: HostState(t, sink.records[t.name]) for t in targets}
        self.cluster: dict | None = None
        self.on_result: Callable[[CheckResult], None] | None = None
        self.say_lock = threading.Lock()
        # The outputs later checks are built from or judge (``Check.uses``, ``Check.gathers``): (check id, host) ->
        # (its steps, its outputs by step key, its saved raw outputs); kept only for the checks some check names.
        self.kept: set[str] = set()
        self.outputs: dict[tuple[str, str], tuple[list[Step], dict[str, str], list[RawOutput]]] = {}
        self.outputs_lock = threading.Lock()

    def run(self, checks: list[Check], record: Callable[[CheckResult], None] | None = None,
            scope: str = "all", schedule_name: str = "quick") -> list[CheckResult]:
        """Every check's results, node scope first, each in check order then host order; then,
        with ``scope`` cluster or all, the cluster procedure (``cluster.Procedure``, through this
        engine's procedure protocol) when checks of each of its roles are among ``checks``.
        ``self.cluster`` holds the procedure's rounds and suspects."""
        self.kept = {c.placement.gathers for c in checks if c.placement.gathers} | {
            u for c in checks for u in c.placement.uses}
        procedure = scope != "node" and cluster.runs(checks)
        # A check that gathers a node check's outputs runs where its source runs: with the node checks.
        static = [c for c in checks if c.data.role is None and (scope == "all" or (
            c.placement.scope is Scope.NODE or bool(c.placement.gathers)) == (scope == "node"))]
        jobs = plan(static, {name: s.profile.name for name, s in self.states.items()},
                    {name: s.target.nvlink_domain for name, s in self.states.items()})
        self.control.emit(Planned(dict(Counter(j.check.id for j in jobs))))
        done = threading.Event()
        self.control.watch(done)
        previous_stack = _small_stacks()
        self.on_result = record
        try:
            results = Scheduler(self.execute, lambda job: job.hosts, self.workers).run(
                jobs, stop=self.control.stop, not_run=self._not_run, on_result=record)
            results = recovery.recover(self, jobs, results, self.recover_most, record)  # --recover: hung nodes
            if procedure and not self.control.stop.is_set():
                more, self.cluster = cluster.Procedure(self, schedule_name, results, checks).run()
                results += more
            return results
        finally:
            threading.stack_size(previous_stack)
            done.set()
            for state in self.states.values():
                for conn in (state.conn, state.bmc):
                    if conn is not None:
                        conn.close()

    # What a procedure may ask of this burn-in (provision.engine.procedure.Engine), and nothing more.
    def hosts(self) -> list[str]:
        return list(self.states)

    def profile(self, host: str) -> profiles.Profile | None:
        return self.states[host].profile

    def stopped(self) -> bool:
        return self.control.stop.is_set()

    def run_round(self, jobs: Sequence[Job]) -> list[CheckResult]:
        self.control.emit(Planned(dict(Counter(job.check.id for job in jobs))))  # the console's totals
        return Scheduler(self.execute, lambda job: job.hosts, self.workers).run(
            jobs, stop=self.control.stop, not_run=self._not_run)

    def read_raw(self, raw: RawOutput, origin: str) -> str:
        return self.rundir.read(raw.path, origin)

    def record(self, result: CheckResult) -> None:
        if id(result) not in self.replayed_ids:  # what the procedure made (its localize) belongs to this attempt
            result.attempt = self.attempt
        if self.on_result is not None:
            self.on_result(result)

    def say(self, line: str) -> None:
        with self.say_lock:
            self.control.progress(line)

    def execute(self, job: Job) -> CheckResult:
        replayed = self._replayed(job)
        if replayed is not None:
            self.control.emit(JobFinished(replayed))
            return replayed
        started = time.monotonic()
        self.control.job_started(job.label)
        self.control.emit(JobStarted(job.check.id, job.hosts))
        try:
            result = self._execute(job)
        except Exception as exc:  # a bug in one check or job: that job's error, never the run's
            result = self._error(job, f"internal error in {job.check.id}: {type(exc).__name__}: {exc}")
        finally:
            self.control.job_finished(job.label)
            self._bmc_done(job)
        if self.control.stop.is_set() and result.run_error:  # its tool was killed by the stop; a verdict stands
            result = self._error(job, f"interrupted ({self.control.reason}) while running", result.raw)
        result.duration_s = round(time.monotonic() - started, 2)
        result.attempt = self.attempt
        self.control.emit(JobFinished(result))
        return result

    def _replayed(self, job: Job) -> CheckResult | None:
        """The result an earlier attempt of this run journaled for ``job`` (the first of that check and those hosts
        not handed out yet), or None; a kept check's outputs are read back from the run folder for the checks that
        use or gather them."""
        with self.outputs_lock:
            queue = self.done.get((job.check.id, job.hosts))
            result = queue.popleft() if queue else None
        if result is None:
            return None
        self.replayed_ids.add(id(result))  # kept alive by ``done``
        if job.check.id in self.kept and result.outcome in (Outcome.PASS, Outcome.FAIL) and result.raw:
            state = self.states[job.hosts[0]]
            steps = job.check.steps(state.profile, target(job.check, tuple(self.states[h].host for h in job.hosts)))
            texts = {raw.key: self.rundir.read(raw.path, f"{job.check.id} of {job.hosts[0]}") for raw in result.raw}
            with self.outputs_lock:
                self.outputs[(job.check.id, job.hosts[0])] = (steps, texts, list(result.raw))
        return result

    def _not_run(self, job: Job) -> CheckResult:
        return self._error(job, f"interrupted ({self.control.reason}) before it ran")

    @staticmethod
    def _error(job: Job, message: str, raw: list[RawOutput] | None = None) -> CheckResult:
        return CheckResult(job.check.id, job.hosts, Outcome.ERROR, message, scope=job.check.placement.scope,
                           raw=raw or [], run_error=True)

    def _execute(self, job: Job) -> CheckResult:
        check, states = job.check, [self.states[h] for h in job.hosts]
        if check.placement.gathers:  # runs nothing on the hosts: an unreachable host is left out, not the group's error
            return self._gathered(job, check, states)
        early = self._not_run_here(job, check, states)
        if early is not None:
            return early
        profile = states[0].profile
        job_target = target(check, tuple(s.host for s in states))
        steps, problem = self._steps(check, states[0], profile, job_target)
        if problem:
            return self._error(job, problem)
        timeout_s = states[0].target.timeout_s(check)
        raw: list[RawOutput] = []
        try:
            texts, failures = self._run_steps(job, states, steps, timeout_s, raw)
        except CommandError as exc:
            for state in states:  # a broken connection: the node, or only the connection? (provision.engine.lost)
                if state.conn is not None and any(s.via == "ssh" for s in steps):
                    lost.probe(self, state, f"{check.id}: {exc}")
            return self._error(job, "; ".join([str(exc)] + [s.problem for s in states if s.problem]), raw)
        unread = self.unread.pop(id(job), [])
        if unread:  # judged on the node's outputs alone
            steps = [s for s in steps if s.key in texts]
        out = self._error(job, "; ".join(failures)) if failures else verdict(
            check, job.hosts, check.placement.scope, profile, texts, job_target, steps)
        if unread and not failures:
            out.message += f" (not read from the BMC: {'; '.join(unread)})"
        out.raw = raw
        if check.id in self.kept and out.outcome in (Outcome.PASS, Outcome.FAIL):  # judged: its outputs read whole
            with self.outputs_lock:
                self.outputs[(check.id, states[0].name)] = (steps, texts, raw)
        return out

    def _not_run_here(self, job: Job, check: Check, states: list[HostState]) -> CheckResult | None:
        """The result of a job that cannot run on its hosts: one already unreachable, the placement stage's refusal
        (``provision.engine.placement``), or a connection that cannot be opened; None when it can run."""
        if check.placement.out_of_band:  # asks the node's BMC, not the node: runs on a node lost over SSH too
            refused = placement.refusal(check, job.hosts, [s.target for s in states])
            if refused is None and self._bmc(states[0]) is None:
                return CheckResult(check.id, job.hosts, Outcome.SKIPPED, "no BMC: the inventory names none for "
                                   f"{states[0].name} (provision_bmc_address)" if self.oob is not None else
                                   "no BMC is reached by a burn-in of this machine itself (--local)",
                                   scope=check.placement.scope)
            return refused
        problems = [s.problem for s in states if s.problem]
        if problems:
            return self._error(job, "; ".join(problems))
        refused = placement.refusal(check, job.hosts, [s.target for s in states])
        if refused is not None:
            return refused
        unreachable = [p for p in (self._connect(s) for s in states) if p]
        return self._error(job, "; ".join(unreachable)) if unreachable else None

    def _steps(self, check: Check, state: HostState, profile: profiles.Profile, job_target) -> tuple[list[Step], str]:
        """The job's steps, or why there are none: a profile that lacks a reference the check needs, or (a check that
        ``uses`` others) an input its node did not give: built from what the node showed, never guessed."""
        try:
            if not check.placement.uses:
                return check.steps(profile, job_target), ""
            seen, missing = self._seen(check, state)
            return ([], missing) if missing else (check.steps(profile, job_target, seen), "")
        except ProfileError as exc:
            return [], str(exc)

    def _seen(self, check: Check, state: HostState) -> tuple[dict[str, dict], str]:
        """(check id -> parsed outputs on ``state``'s node of each check ``check`` uses, why some are missing)."""
        checks, seen, missing = registry(), {}, []
        for used in check.placement.uses:
            found = self.outputs.get((used, state.name))
            if found is None:
                missing.append(used)
                continue
            try:
                seen[used] = parse_outputs(checks[used], found[0], found[1])
            except ParseError as exc:
                missing.append(f"{used} ({exc})")
        why = (f"needs this run's {', '.join(missing)} output of {state.name} to build its steps, which it did not "
               "give (see that check's result)") if missing else ""
        return seen, why

    def _gathered(self, job: Job, check: Check, states: list[HostState]) -> CheckResult:
        """A ``gathers`` check's verdict over the outputs its source check gave on the job's hosts in this run (kept
        where that check was judged: passed or failed); a host that gave none (unreachable, its check errored) is left
        out: its judge sees it among the job's hosts with no outputs, and says so."""
        profile = states[0].profile
        refused = placement.gathered_refusal(check, job.hosts, [s.target for s in states])
        if refused is not None:
            return refused
        job_target = target(check, tuple(s.host for s in states))
        source = registry()[check.placement.gathers]
        texts: dict[str, str] = {}
        raw: list[RawOutput] = []
        for host in job.hosts:
            found = self.outputs.get((source.id, host))
            if found is None:  # its source check could not run or could not be judged there
                continue
            texts.update({f"{host}/{key}": text for key, text in found[1].items()})
            raw += [RawOutput(f"{host}/{r.key}", r.host, r.path, r.stderr, r.server) for r in found[2]]
        if not texts:
            return self._error(job, f"no host gave {source.id} outputs to compare (see {source.id}'s results)", raw)
        steps = gathered_steps(source, profile, job_target)
        out = verdict(check, job.hosts, check.placement.scope, profile, texts, job_target, steps)
        out.raw = raw  # a host left out has no raw output here: its judge sees it among ctx.hosts, not ctx.parsed
        return out

    def _connect(self, state: HostState) -> str:
        """Open the host's connection and read its OS once; '' when connected, else why not."""
        with state.lock:
            for attempt in range(CONNECT_ATTEMPTS):
                if state.conn is not None or state.problem or self.control.stop.is_set():
                    break
                try:
                    with self.connecting:
                        state.conn = self.transport.connect(state.host)
                    self._read_os(state)
                except CommandError as exc:
                    if attempt + 1 < CONNECT_ATTEMPTS and not _refused_for_good(str(exc)):
                        time.sleep(attempt + 1)
                        continue
                    state.problem = lost.unreachable(self, state, str(exc), _refused_for_good(str(exc)))
                    self.say(f"  burnin {state.name:<12} unreachable: {state.problem}")
            return state.problem

    def _read_os(self, state: HostState) -> None:
        # the kernel: the history's stack fingerprint (provision.history); the boot time (proc(5), /proc/stat btime):
        # where the node's BMC event log is judged from (the bmc check: since the node booted, or the run began)
        # and its boot id (``provision_boot_id_path``): what a power cycle of it must change (engine.recovery)
        boot_id = str(state.host.vars.get(bmcvars.BOOT_ID_PATH) or bmcvars.DEFAULT_BOOT_ID_PATH)
        kernel = state.connected.run(["sh", "-c", f"uname -r; grep '^btime ' /proc/stat; cat {shlex.quote(boot_id)}"],
                                     30.0)
        lines = kernel.stdout.strip().splitlines()
        if kernel.rc in (0, 1) and lines:
            state.record.kernel = lines[0][:200]
            state.booted = _boot_time(lines[1:])
            state.boot_id = next((line.strip() for line in lines[1:] if _BOOT_ID.fullmatch(line.strip())), None)
        result = state.connected.run(["cat", "/etc/os-release"], 30.0)
        if result.rc != 0:
            return
        self.rundir.write(self.rundir.os_release(state.name), result.stdout)
        state.record.os_release = parse_os_release(result.stdout)
        state.record.os_target = profiles.target_of(state.record.os_release)
        state.target = state.target.with_os(state.record.os_release)

    def _run_steps(self, job: Job, states: list[HostState], steps: list[Step], timeout_s: float,
                   raw: list[RawOutput]) -> tuple[dict[str, str], list[str]]:
        texts, failures = {}, []
        for step in steps:
            if self.control.stop.is_set():  # a check judged on part of its steps would pass untested devices
                failures.append(f"interrupted ({self.control.reason}) before step {step.key or step.argv[0]}")
                break
            runner, server_state = states[step.on], states[step.server_on]
            result, server = self._run_step(step, runner, server_state, timeout_s)
            if step.exit_judged and result.stderr.strip():  # its failure texts go to stderr: the parser reads both
                result = dataclasses.replace(result, stdout=result.stdout + result.stderr, stderr="")
            raw.append(self._save(job, runner.name, step, len(steps), result, server))
            texts[step.key] = result.stdout
            if result.timed_out and step.via == "ssh":  # the tool hung, or the node? (provision.engine.lost)
                lost.probe(self, runner, f"{job.check.id}: {step.argv[0]} timed out after {timeout_s:.0f} s")
            problem = (server[1] if server and server[1] else "") or _run_problem(result, timeout_s, step.exit_judged)
            if problem and step.via == "bmc" and any(s.via == "ssh" for s in steps):
                # the BMC's part of a check that reads the node too (firmware's inventory): its failure costs that
                # part only, said in the result; the node's outputs are judged (the bmc check errors on the BMC)
                del texts[step.key]
                self.unread[id(job)] = [*self.unread.get(id(job), []), f"{step.key}: {problem}"]
            elif problem:
                failures.append(f"{step.key + ': ' if step.key else ''}{problem}")
        return texts, failures

    def _run(self, conn: Connection, argv: list[str], timeout_s: float) -> CommandResult:
        process = conn.start(argv, timeout_s)
        self.control.started(process)
        try:
            return process.wait()
        finally:
            self.control.finished(process)

    def _run_step(self, step: Step, runner: HostState, server_state: HostState, timeout_s: float):
        """The step's result, and (its server's result, why the server was not ready) when it has one."""
        if step.via == "bmc":
            bmc = self._bmc(runner)
            if bmc is None:
                return CommandResult(step.argv, 1, "", f"no BMC for {runner.name} in the inventory", 0.0, False), None
            return bmc.run(step.argv, timeout_s), None
        if not step.server or step.ready is None:
            return self._run(runner.connected, step.argv, timeout_s), None
        server = server_state.connected.start(step.server, timeout_s)
        self.control.started(server)
        try:
            not_ready = readiness.wait_ready(server, server_state.connected, step.ready, server_state.host.address,
                                             min(READY_TIMEOUT_S, timeout_s))
            if not_ready:
                stopped = server.close()
                return (CommandResult(step.argv, 1, "", "", 0.0, False),
                        (stopped, f"{step.server[0]} server: {not_ready}"))
            result = self._run(runner.connected, step.argv, timeout_s)
            served = server.wait() if result.rc == 0 else server.close()
            return result, (served, "")
        finally:
            self.control.finished(server)

    def _bmc(self, state: HostState) -> Connection | None:
        """The node's BMC connection (opened once; ``provision.engine.outofband``), or None without one."""
        with state.lock:
            if not state.bmc_opened and self.oob is not None:
                state.bmc, state.bmc_opened = self.oob.connect(state.host, state.booted), True
            return state.bmc

    def _bmc_done(self, job: Job) -> None:
        """Close the BMC connections ``job`` opened: one per job, so that a session is never kept idle past the
        BMC's session timeout (OpenBMC, iDRAC and iLO end idle sessions after minutes) nor holds one of its few
        session slots, and a node's BMC is read afresh after its power cycle."""
        for name in job.hosts:
            state = self.states[name]
            with state.lock:
                bmc, state.bmc, state.bmc_opened = state.bmc, None, False
            if bmc is not None:
                bmc.close()

    def _save(self, job: Job, host: str, step: Step, steps: int, result: CommandResult, server) -> RawOutput:
        check = job.check
        rel = self.rundir.raw_name(check.id, check.placement.scope, job.hosts, host, step.key, steps, job.tag)
        self.rundir.write(rel, result.stdout)
        stderr = self.rundir.write(rel[:-4] + ".stderr", result.stderr) if result.stderr.strip() else ""
        served = self.rundir.write(rel[:-4] + ".server.txt", server[0].stdout) if server else ""
        return RawOutput(step.key, host, rel, stderr, served)


def with_inputs(selected: list[Check], registered: Sequence[Check]) -> list[Check]:
    """``selected`` plus the checks their ``uses`` and ``gathers`` name (asking for gpudirect brings topology),
    in registry order: a check's inputs are never left out of a run that asks for it."""
    wanted = {c.id for c in selected}
    wanted |= {i for c in selected for i in (*c.placement.uses, *filter(None, [c.placement.gathers]))}
    return [c for c in registered if c.id in wanted] if wanted != {c.id for c in selected} else selected


def _small_stacks() -> int:
    """Give the threads started from now on ``THREAD_STACK_BYTES`` of stack; return the size
    before (0: the platform's default), for ``threading.stack_size`` to restore. A platform that
    cannot set it keeps its default."""
    try:
        return threading.stack_size(THREAD_STACK_BYTES)
    except (ValueError, RuntimeError):
        return threading.stack_size()


def _refused_for_good(message: str) -> bool:
    """Connection failures a retry cannot fix: a wrong host key, a refused login, a missing known_hosts."""
    text = message.lower()
    return any(word in text for word in ("host key", "known_hosts", "authentication", "not found in known_hosts"))


def _boot_time(lines: list[str]) -> datetime | None:
    """The boot time of ``btime SECONDS`` (proc(5): seconds since the epoch), or None."""
    for line in lines:
        word, _, value = line.partition(" ")
        if word == "btime" and value.strip().isdigit():
            return datetime.fromtimestamp(int(value), timezone.utc)
    return None


def parse_os_release(text: str) -> dict:
    """``KEY=value`` lines of os-release(5), quotes removed."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def _run_problem(result: CommandResult, timeout_s: float, exit_judged: bool = False) -> str:
    """Why a step's run cannot be judged ('' when it can); ``exit_judged``: a nonzero exit is the parser's to read
    (``Step.exit_judged``), a timeout or a missing tool is not."""
    if result.timed_out:
        return f"{result.argv[0]} timed out after {timeout_s:.0f} s (hung tool?)"
    if result.rc == 127:
        return f"{result.argv[0]} is not installed (exit 127)"
    if result.rc != 0 and not exit_judged:
        last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
        return f"{result.argv[0]} exited {result.rc}: {last[:200]}"
    return ""


@dataclass(frozen=True)
class BurninRequest:
    """What a burn-in runs, decided once by its caller: ``checks`` the check ids asked for (None: every registered
    check but the optional ones; the checks they read are added), ``scope`` node, cluster or all, ``schedule`` the
    check set's name (the console's and history's label), ``forks`` at most that many jobs at once (None: every host
    at once)."""

    checks: tuple[str, ...] | None = None
    scope: str = "all"
    schedule: str = "quick"
    forks: int | None = None
    # A resumed run (``provision burnin --resume RUN``): this is attempt ``attempt`` of it, and ``done`` are the
    # results its earlier attempts journaled. A job whose result is among them is answered with that result, never
    # run again (``Burnin.replay``); the cluster procedure, being deterministic in what its rounds give, asks for the
    # same jobs again, so its complete rounds are answered from the journal and it goes on from the first job missing.
    attempt: int = 1
    done: tuple[CheckResult, ...] = ()
    # ``--recover``: at most this many nodes that hung during the run are power-cycled through their BMCs and their
    # node checks run again (``provision.engine.recovery``; the drain breaker's budget); 0: none, never by default.
    recover: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks) if self.checks else None)
        object.__setattr__(self, "done", tuple(self.done))


@dataclass(frozen=True)
class BurninOutcome:
    """What a burn-in gave: ``results`` in run order, ``cluster`` the cluster procedure's record (``groups``: fabric,
    rounds, suspects) when the procedure ran, else None."""

    results: list[CheckResult]
    cluster: dict | None = None
    power_actions: list[dict] = field(default_factory=list)  # taken through the BMCs (--recover), in order


def run(targets: Sequence[Target], request: BurninRequest, transport: Transport, sink: Sink,
        oob: OutOfBand | None = None) -> BurninOutcome:
    """Burn in ``targets`` (``provision.targets``: each host's profile, timeouts and set, resolved once) as
    ``request`` asks, over ``transport``, their BMCs through ``oob`` (None: no BMC is asked; the ``bmc`` check is
    skipped); results, raw outputs, progress and events go to ``sink``."""
    registered = list(registry().values())
    only = request.checks
    chosen = [c for c in registered if (c.id in only if only else not c.budget.optional)]  # the budget stage
    checks = with_inputs(cluster.completed(chosen, registered), registered)
    engine = Burnin(targets, sink, transport, request.forks, (request.attempt, request.done), oob)
    engine.recover_most = request.recover
    results = engine.run(checks, sink.journal, request.scope, request.schedule)
    # a resumed run's record of an earlier attempt's power cycle (engine.recovery): no job makes it again
    results += [r for r in request.done if r.check == recovery.CHECK_ID and id(r) not in engine.replayed_ids]
    return BurninOutcome(results, dict(engine.cluster) if engine.cluster is not None else None,
                         list(engine.power_actions))
