"""The main job (``provision run``, ``install``, ``burnin``) as phases over one run context: select the
GPU nodes (and pass the plan gate before an install), take them, install, burn in, remember the run in
the history, publish its outputs (report.json, JUnit, burnin.prom, drain.txt; then the drain in Slurm).

Results go to ``runs/<run_id>/`` and ``runs/latest`` (``provision.results.store``); the report is
rewritten after every phase so an interruption loses nothing already gathered.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from provision import inventory as inv
from provision import paths
from provision.commands._common import now, status
from provision.commands._job import burnin, install, publish, remember, resume, select
from provision.commands._job.options import JobOptions
from provision.engine import hostlock
from provision.engine.burnin import BurninRequest
from provision.engine.control import Control, stopping_on_signals
from provision.errors import ExitStatus, not_written
from provision.report import progress as progress_view
from provision.report import summary
from provision.results.model import JUDGED_VARS, HostRecord, Run
from provision.results.store import RunDir, RunStore
from provision.slurm import drain as slurm_drain
from provision.targets import Target

__all__ = ["JobOptions", "RunContext", "run"]


@dataclass
class Chosen:
    """What the select phase chose: the GPU nodes' targets (``provision.targets``: each resolved once), the checks
    and the scope they run."""

    label: str
    targets: list[Target]
    inventory: inv.Inventory | None  # None for ``burnin --local``
    checks: list[str] | None
    scope: str


@dataclass
class RunContext:
    """One run of the job: its options, what was chosen, its folder and record, the hosts it holds."""

    options: JobOptions
    chosen: Chosen
    progress: Callable[[str], None]
    slurm_nodes: dict[str, str]
    rundir: RunDir
    run: Run
    held: hostlock.Held
    console: progress_view.Progress
    control: Control
    unwritten: list[str] = field(default_factory=list)  # the result files that could not be written, one line each
    kept: list = field(default_factory=list)  # a resumed run's results of earlier attempts (``resume.kept``)

    @property
    def history_kept(self) -> bool:
        """Whether the run goes into the history: always over SSH, with --local only when --history is given."""
        return not (self.options.local and self.options.history is None)


def run(options: JobOptions, progress: Callable[[str], None] = print) -> ExitStatus:
    """Run ``options.phases`` (install, burnin) on the GPU nodes (hosts with ``provision_profile``) of
    ``options.inventory``; with ``retry_failed`` (a run) only on the hosts whose install did not end ok
    there. Returns the exit status; raises ProvisionError for bad input, HostsBusy (exit 6) for hosts
    another run holds after ``wait`` seconds. While it runs, the console shows a line per check and per
    role (``provision.report.progress``), a line per host and job with ``verbose``. With ``resume`` (a run), that
    killed run goes on in its own folder with its own options (``resume``: a changed inventory is ProvisionError)."""
    resumed = None
    if options.resume is not None:
        rundir, options, identities = resume.load(options)
        resumed = rundir
    chosen = _select(options, progress)
    if resumed is not None:
        resume.changed(identities, chosen.targets, str(options.resume))
    if not chosen.targets:  # only a shard can be empty: more shards than nodes (or racks) is a valid split
        progress(f"shard {options.shard}: no GPU node of {chosen.label} falls in this shard; nothing to run, "
                 "no run made")
        return ExitStatus.OK
    ctx = _begin(options, chosen, progress, resumed)
    with stopping_on_signals(ctx.control), ctx.console:
        try:
            installed = _install(ctx)
            if "burnin" in options.phases and installed and not ctx.control.stop.is_set():
                schedule = select.schedule(options.check_set, options.schedule)
                request = BurninRequest(tuple(chosen.checks or ()) or None, chosen.scope, schedule, options.forks,
                                        len(ctx.run.attempts or ()) or 1, tuple(ctx.kept),
                                        select.recovery_budget(options, len(installed)))
                burnin.burnin(installed, ctx.rundir, ctx.run, request, ctx.control,
                              burnin.Reach(options.local, options.insecure_bmc), ctx.held)
        finally:
            ctx.held.release()
            ctx.run.finished = now()
            publish.outputs(options.phases, ctx.rundir, ctx.run, progress, ctx.unwritten)  # before the history
            _remember(ctx)
    publish.drain(ctx.rundir, ctx.run, ctx.slurm_nodes, options, ctx.control, ctx.unwritten,
                  _breaker(options))  # --drain slurm
    return _end(ctx)


def _select(options: JobOptions, progress) -> Chosen:
    """The select phase and the plan gate: options checked, hosts chosen; touches no node."""
    _breaker(options)
    select.known_checks(options.checks)
    if "burnin" in options.phases and not (options.local and options.history is None):
        remember.history_path(options.history)
    limit = list(options.limit) if options.limit is not None else None
    if options.retry_failed is not None:
        limit = select.failed_installs(options.retry_failed, limit)
        progress(f"retry: {len(limit)} hosts whose install did not end ok in {options.retry_failed}: "
                 f"{', '.join(limit)}")
    checks = list(options.checks) if options.checks is not None else None
    inventory = None
    if options.local:
        label, chosen, checks, scope = select.local(options, checks, limit, progress)
    else:
        inventory = select.gpu_inventory(options.inventory, limit, options.vault, progress)
        label, chosen, scope = inventory.label, select.selected(inventory, options, limit, progress), options.scope
    if options.check_set is not None and chosen:
        checks = select.check_set(options.check_set, chosen, checks)
    return Chosen(label, chosen, inventory, checks, scope)


def _breaker(options: JobOptions):
    """The drain's circuit breaker of the options (``select.drain_options``: checked before any node)."""
    return select.drain_options(options.drain, options.resume_passed, options.drain_max, options.drain_share,
                                options.drain_window)


def _begin(options: JobOptions, chosen: Chosen, progress, resumed: RunDir | None = None) -> RunContext:
    """The run's folder and record (``resumed``: a killed run's, one more attempt of it), its hosts taken
    (``burnin.take_hosts``), its console."""
    hosts = [t.host for t in chosen.targets]  # with the set's durations and timeouts in their variables
    slurm_nodes = slurm_drain.node_names(hosts) if options.drain == "slurm" else {}  # before any node
    if resumed is None:
        rundir = RunStore(paths.RUNS).create(options.run_id, warn=progress)
        record = Run(run_id=rundir.name, inventory=chosen.label, phases=list(options.phases), started=now(),
                     hosts={h.name: HostRecord(h.profile, {k: h.vars[k] for k in JUDGED_VARS
                                                           if h.vars.get(k) is not None}) for h in hosts})
    else:
        rundir, record = resumed, resumed.load(rebuild=progress)
        record.attempts = [*(record.attempts or [record.started]), now()]
    held = burnin.take_hosts(hosts, options.phases, rundir, options.local, options.wait, progress,
                             keep=resumed is not None)
    kept = resume.kept(rundir) if resumed is not None else []
    if resumed is None:
        _keep_job(rundir, options, chosen, progress)
        progress(f"run {rundir.name}: {len(hosts)} GPU nodes from {chosen.label}, phases "
                 f"{', '.join(options.phases)}")
    else:
        progress(f"run {rundir.name}: attempt {len(record.attempts or ())}, resumed: {len(kept)} results of earlier "
                 f"attempts kept, not run again; {len(hosts)} GPU nodes from {chosen.label}, phases "
                 f"{', '.join(options.phases)}")
    console = progress_view.Progress(progress, verbose=options.verbose, live=options.live)
    return RunContext(options, chosen, progress, slurm_nodes, rundir, record, held, console,
                      Control(console.line, events=console.event), kept=kept)


def _keep_job(rundir: RunDir, options: JobOptions, chosen: Chosen, progress) -> None:
    """Write the run's job.json (``resume.save``: what ``--resume`` continues it with); a file that cannot be
    written costs the resume, never the run: said in one line."""
    try:
        resume.save(rundir, options, chosen.targets)
    except OSError as exc:
        progress(f"provision: warning: {not_written(exc)}; this run cannot be resumed (--resume)")


def _install(ctx: RunContext) -> list[Target]:
    """The install phase; the targets that go on to the burn-in (those whose host installed cleanly). A resumed
    run installs only the hosts its earlier attempts left without an install record."""
    if "install" not in ctx.options.phases:
        return ctx.chosen.targets
    assert ctx.chosen.inventory is not None  # --local is refused an install (select.local)
    todo = [t.host for t in ctx.chosen.targets if t.name not in ctx.run.install]
    if todo:
        how = install.How(ctx.options.method, ctx.options.forks, ctx.options.tags)
        install.install(ctx.chosen.inventory, todo, ctx.rundir, ctx.run, ctx.control, how)
        ctx.rundir.save(ctx.run)
    return [t for t in ctx.chosen.targets if ctx.run.install[t.name].status == "ok"]


def _remember(ctx: RunContext) -> None:
    """The remember phase: after a burn-in, the run gated against the history and stored in it
    (``remember.remember``); the regressions it finds go into every output too."""
    if "burnin" not in ctx.options.phases or not ctx.run.results or not ctx.history_kept:  # see select.local
        return
    found = len(ctx.run.results)
    remember.remember(ctx.run, ctx.rundir, ctx.options.history, ctx.progress)
    if len(ctx.run.results) > found:
        publish.outputs(ctx.options.phases, ctx.rundir, ctx.run, ctx.progress, ctx.unwritten)


def _end(ctx: RunContext) -> ExitStatus:
    """The summary and the exit status: stopped (a signal), a result file unwritten, else the verdicts'."""
    ctx.progress("\n" + summary.render(ctx.run))
    ctx.progress(f"\nresults: {ctx.rundir.report}, JUnit in {ctx.rundir.junit}/")
    if ctx.control.stop.is_set():
        ctx.progress(f"provision: stopped by {ctx.control.reason}; the results gathered so far are in "
                     f"{ctx.rundir.path}")
        return ExitStatus.TERMINATED if ctx.control.reason == "SIGTERM" else ExitStatus.INTERRUPTED
    return ExitStatus.NOT_WRITTEN if ctx.unwritten else status(ctx.run)
