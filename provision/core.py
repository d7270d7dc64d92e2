"""The main job: install the stack with Ansible, then burn in every host that installed cleanly.

Each CLI command calls one function here. Results go to ``runs/<run_id>/`` (report.json,
junit/, raw/, ansible/) and ``runs/latest``; the report is rewritten after every phase so
an interruption loses nothing already gathered.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import sys
import time

from provision import embedded, paths
from provision import inventory as inv
from provision import checks, profiles
from provision.checks import references
from provision.engine import burnin as burnin_engine
from provision.engine import hostlock
from provision.engine.control import Control, stopping_on_signals
from provision.engine.reevaluate import reevaluate
from provision.engine.local import LocalTransport
from provision.engine.ssh import SshTransport
from provision.errors import ExitStatus, OutputError, ProfileError, ProvisionError, not_written
from provision.inventory import listing
from provision.report import hostlist, junit, summary
from provision.report import progress as progress_view
from provision.report import html as html_report
from provision.report import prometheus
from provision.report.console import visible
from provision.results.model import FABRIC, JUDGED_VARS, FailedTask, HostInstall, HostRecord, Outcome, RoleResult, Run
from provision.results.model import Scope
from provision.results.store import RunDir, RunStore, safe_name
from provision.runner import ansible
from provision.slurm import drain as slurm_drain
from provision.slurm.scontrol import Scontrol


def job(inventory_args: str | list[str], phases: tuple[str, ...], limit: list[str] | None = None,
        tags: str | None = None, only_checks: list[str] | None = None, run_id: str | None = None,
        vault: inv.Vault = inv.Vault(), retry_failed: str | None = None, progress=print, scope: str = "all",
        schedule: str = "quick",
        history: str | None = None, check_set: str | None = None,
        drain: str | None = None, resume_passed: bool = False, force: bool = False,
        shard: str | None = None, shard_by: str | None = None, local: bool = False, host_name: str | None = None,
        profile: str | None = None, verbose: bool = False, live: bool = False,
        forks: int | None = None, wait: float | None = None) -> ExitStatus:
    """Run ``phases`` (install, burnin) on the GPU nodes (hosts with ``provision_profile``) of one or
    several inventories; with ``retry_failed`` (a run) only on the hosts whose install did not end
    ok there. Returns the exit status; raises ProvisionError for bad input.
    After a burn-in the run is gated against and stored in the history database ``history``
    (``_remember``); ``check_set`` runs the checks tagged with that set less the profiles' exclusions
    (``_check_set``).
    An install first runs ``provision plan`` on the inventory and refuses to start when it finds an
    error, unless ``force``. ``shard`` ("K/N") keeps that shard of the GPU nodes
    (``provision.inventory.shard``); ``provision merge`` joins the shards' runs. ``local``: the burn-in
    of this machine, no SSH (``_local``: ``host_name``, ``profile``). While it runs, the console shows a
    line per check and per role (``provision.report.progress``: ``live`` redraws them on a terminal), a
    line per host and job with ``verbose``. ``forks`` is the most hosts worked on at once (None: every
    host at once). The hosts are taken first (``_take_hosts``); ``wait`` seconds: how long to wait for
    hosts another run holds (None: refuse at once, HostsBusy)."""
    _drain_options(drain, resume_passed)
    _known_checks(only_checks)
    if "burnin" in phases and not (local and history is None):
        _history_path(history)
    if retry_failed is not None:
        limit = _failed_installs(retry_failed, limit)
        progress(f"retry: {len(limit)} hosts whose install did not end ok in {retry_failed}: {', '.join(limit)}")
    if local:
        label, hosts, only_checks, scope = _local(inventory_args, host_name, profile, vault, only_checks, scope,
                                                   (limit, shard, retry_failed, phases), progress)
    else:
        inventory = _gpu_inventory(inventory_args, limit, vault, progress)
        label, hosts = inventory.label, _selected(inventory, phases, shard, shard_by, vault, limit, force, progress)
    if not hosts:  # only a shard can be empty: more shards than nodes (or racks) is a valid split
        progress(f"shard {shard}: no GPU node of {label} falls in this shard; nothing to run, no run made")
        return ExitStatus.OK
    slurm_nodes = slurm_drain.node_names(hosts) if drain == "slurm" else {}  # bad input: before any node is touched
    if check_set is not None:
        only_checks = _check_set(check_set, hosts, only_checks)
    rundir = RunStore(paths.RUNS).create(run_id, warn=progress)
    held = _take_hosts(hosts, phases, rundir, local, wait, progress)
    run = Run(run_id=rundir.name, inventory=label, phases=list(phases), started=_now(),
              hosts={h.name: HostRecord(h.profile, {k: h.vars[k] for k in JUDGED_VARS if h.vars.get(k) is not None})
                     for h in hosts})
    progress(f"run {rundir.name}: {len(hosts)} GPU nodes from {label}, phases {', '.join(phases)}")
    console = progress_view.Progress(progress, verbose=verbose, live=live)
    control = Control(console.line, events=console.event)
    unwritten: list[str] = []  # the result files that could not be written, one line each
    with stopping_on_signals(control), console:
        try:
            if "install" in phases:
                hosts = _install(inventory, hosts, rundir, run, tags, control, forks)
                rundir.save(run)
            if "burnin" in phases and hosts and not control.stop.is_set():
                _burnin(hosts, rundir, run, only_checks, control, scope, schedule, local, forks, held)
        finally:
            held.release()
            run.finished = _now()
            _outputs(phases, rundir, run, progress, unwritten)  # before the history, which may be slow or fail
            if "burnin" in phases and run.results and not (local and history is None):  # see _local
                _remembered(phases, rundir, run, history, progress, unwritten)
    _drain(phases, rundir, run, slurm_nodes, resume_passed, control, unwritten)  # --drain slurm
    progress("\n" + summary.render(run))
    progress(f"\nresults: {rundir.report}, JUnit in {rundir.junit}/")
    if control.stop.is_set():
        progress(f"provision: stopped by {control.reason}; the results gathered so far are in {rundir.path}")
        return ExitStatus.TERMINATED if control.reason == "SIGTERM" else ExitStatus.INTERRUPTED
    return ExitStatus.NOT_WRITTEN if unwritten else _status(run)


def _outputs(phases, rundir: RunDir, run: Run, progress, unwritten: list[str]) -> None:
    """Write report.json, JUnit, burnin.prom (node_exporter's textfile collector) and, after a burn-in,
    drain.txt, each on its own: one that cannot be written (a full disk, a read-only folder) is one line
    naming it and why (said once, kept in ``unwritten``), and the others are still written."""
    writes = [lambda: rundir.save(run), lambda: junit.write(rundir.junit, run),
              lambda: prometheus.write(rundir.path / PROMETHEUS_FILE, run)]
    if "burnin" in phases:
        writes.append(lambda: rundir.write(DRAIN_FILE, "".join(f"{line}\n" for line in slurm_drain.drain_lines(run))))
    for write in writes:
        _attempt(write, progress, unwritten)


def _attempt(write, progress, unwritten: list[str]) -> None:
    """``write()``; an OSError is one line naming the file and why, said once (kept in ``unwritten``)."""
    try:
        write()
    except OSError as exc:
        line = f"provision: error: {not_written(exc)}"
        if line not in unwritten:
            unwritten.append(line)
            progress(line)


def _remembered(phases, rundir: RunDir, run: Run, history: str | None, progress, unwritten: list[str]) -> None:
    """``_remember``; the regressions it finds against the history go into every output too."""
    found = len(run.results)
    _remember(run, rundir, history, progress)
    if len(run.results) > found:
        _outputs(phases, rundir, run, progress, unwritten)


def _take_hosts(hosts, phases, rundir: RunDir, local: bool, wait: float | None, progress) -> hostlock.Held:
    """Take the hosts for the run in ``rundir`` (``provision.engine.hostlock``): their controller locks, then,
    for a burn-in, their node locks (over SSH, the connections kept for the burn-in; in-process with ``local``).
    Raises HostsBusy (exit 6) naming the runs that hold some and those hosts, after ``wait`` seconds, having
    removed the run's folder (still empty: a refused run leaves nothing)."""
    line = json.dumps(hostlock.holder(rundir.name, phases))
    names = [h.name for h in hosts]
    held = hostlock.Held()
    try:
        held = hostlock.take_controller(paths.RUNS / hostlock.LOCKS, names, line, wait or 0.0, hostlist.fold,
                                        progress)
        if "burnin" in phases and local:
            hostlock.take_local(line, hostlist.fold, names[0], held)
        elif "burnin" in phases:
            hostlock.mark_nodes(hosts, SshTransport(), line, wait or 0.0, hostlist.fold, progress, held)
    except BaseException:
        held.release()
        try:
            rundir.path.rmdir()
        except OSError:
            pass
        raise
    return held


def _known_checks(only_checks: list[str] | None) -> None:
    """Raises ProvisionError (exit 2) when ``--checks`` names none or an unknown one."""
    known = checks.ids()
    if only_checks is not None and not only_checks:
        raise ProvisionError("--checks: name at least one check")
    unknown = sorted(set(only_checks or ()) - set(known))
    if unknown:
        raise ProvisionError(f"--checks: unknown check {', '.join(unknown)} (known: {', '.join(known)})")


def _selected(inventory: inv.Inventory, phases, shard: str | None, shard_by: str | None, vault: inv.Vault, limit,
              force: bool, progress) -> list:
    """The GPU nodes the job runs on (its shard, when given), after the plan gate when it installs."""
    hosts = list(inventory.gpu_hosts)
    if shard is None and shard_by is not None:
        raise ProvisionError(f"--shard-by {shard_by}: give --shard K/N too")
    if shard is not None:
        hosts = _shard(inventory, hosts, shard, shard_by or "hash", progress)
        limit = [h.name for h in hosts]
    if "install" in phases and hosts:
        _plan_gate(inventory, vault, limit, force, progress)
    return hosts


def _local(inventory_args, host_name: str | None, profile: str | None, vault: inv.Vault, only_checks,
           scope: str, refused: tuple, progress) -> tuple[str, list, list[str] | None, str]:
    """``burnin --local``: (label, [this machine's Host], checks, scope). Node-scope checks only: a pair or
    cluster check needs several nodes, so one named in ``--checks`` (or ``--scope cluster``) is refused,
    and ``provision merge`` of the nodes' runs holds node results only. No history by default: every
    node would write one SQLite file at once, on a shared file system (give ``--history`` to have it).
    Raises ProvisionError (exit 2) for options that select other hosts (``refused``)."""
    from provision.inventory import local as local_host

    for value, option in zip(refused, ("--limit", "--shard", "--retry-failed")):
        if value:
            raise ProvisionError(f"burnin --local: {option} selects other hosts; --local burns in this machine only")
    if refused[3] != ("burnin",):
        raise ProvisionError("--local: burn-in only (install with `provision install` from a controller)")
    if scope == "cluster":
        raise ProvisionError("burnin --local: --scope cluster needs several nodes; run it from a controller over SSH")
    registry = checks.registry()
    others = [c for c in only_checks or () if registry[c].scope is not Scope.NODE]
    if others:
        raise ProvisionError(f"burnin --local: {', '.join(others)} need several nodes (pair or cluster checks); "
                             "run them from a controller over SSH")
    sources = inv.resolve_all(inventory_args) if inventory_args else ()
    label, host = local_host.this_host(host_name, profile, sources, vault)
    try:
        references.validate(profiles.for_host(str(host.profile), host.vars, host.name))
    except ProfileError as exc:
        raise ProfileError(f"host {host.name}: field 'provision_profile': {exc}") from None
    progress(f"burnin --local: {host.name} from {label}; node checks only (pair and cluster checks need a "
             "controller: SSH)")
    return label, [host], only_checks, "node"


def _shard(inventory: inv.Inventory, hosts: list, shard: str, by: str, progress) -> list:
    """The GPU nodes of shard ``shard`` ("K/N", by hash or rack); none when the split gives this shard
    nothing (a Slurm array of more tasks than the cluster has nodes or racks), which is not an error."""
    from provision.inventory import shard as sharding

    mine = sharding.select(hosts, shard, by)
    progress(f"shard {shard} by {by}: {len(mine)} of {len(hosts)} GPU nodes")
    return mine


def merge(run_args: list[str], run_id: str | None = None, progress=print) -> ExitStatus:
    """``provision merge RUN_DIR...``: one run of the shards' runs (``provision.results.merge``): report.json,
    results.jsonl, the raw outputs (copied, 0600; one that cannot be copied safely is a warning line), JUnit,
    drain.txt, burnin.prom and the summary. Returns the merged run's status (as the job's); raises
    ProvisionError for a run that cannot be read, hosts in two shards or a raw path outside a shard's raw/,
    before any folder is made. The merged folder is whole or gone: a failure on the way removes it, and
    report.json (and ``latest``) comes last."""
    import shutil

    from provision.results import merge as merging

    store = RunStore(paths.RUNS)
    shards = [(str(d.path), _shard_run(d), d) for d in (store.open(a) for a in run_args)]
    merged, moves = merging.merge([(label, run) for label, run, _ in shards], "")
    rundir = store.create(run_id, warn=progress)
    merged.run_id = rundir.name
    try:
        for (_, _, source), move in zip(shards, moves):
            merging.copy_raw(source, rundir, move, progress)
        for result in merged.results:
            rundir.record(result)
        junit.write(rundir.junit, merged)
        prometheus.write(rundir.path / PROMETHEUS_FILE, merged)
        lines = slurm_drain.drain_lines(merged) if "burnin" in merged.phases else []
        rundir.write(DRAIN_FILE, "".join(f"{line}\n" for line in lines))
        rundir.save(merged)
    except OSError as exc:  # a full or read-only disk: the machine's state, one line
        shutil.rmtree(rundir.path, ignore_errors=True)
        raise OutputError(f"merge: cannot write {_cut(str(exc.filename or rundir.path))}: {exc.strerror or exc}; "
                          f"nothing merged ({rundir.path} removed)") from None
    except BaseException:
        shutil.rmtree(rundir.path, ignore_errors=True)
        raise
    progress(f"merge: {len(shards)} runs, {len(merged.hosts)} hosts, {len(merged.results)} results -> {rundir.path}")
    progress("\n" + summary.render(merged))
    return _status(merged)


def _sizing(gpus: int | None, profile: str | None, radix: int, oversubscription: str, pue: float | None,
            node_W: float | None, out) -> ExitStatus:
    """``provision plan --gpus N --profile P``: the sizing and the profile's hardware balance."""
    from provision.plan import hardware, sizing

    if gpus is None or profile is None:
        raise ProvisionError("plan: --gpus and --profile go together (the sizing of N GPUs of a profile)")
    chosen = profiles.load(profile)
    result = sizing.size(gpus, chosen, radix, oversubscription, sizing.PUE if pue is None else pue, node_W)
    for line in result.lines():
        out(line)
    for finding in hardware.balance(chosen):
        out(f"  {finding.line()}")
    return ExitStatus.OK


def _shard_run(rundir: RunDir) -> Run:
    """A shard's run for ``merge``: its report.json must be this version's (schema_version 2) and valid against
    the published schema (report.schema.json), and name at least one host. Raises ProvisionError."""
    import json

    from provision.results import schema
    from provision.results.model import SCHEMA_VERSION

    try:
        data = json.loads(rundir.report.read_text())
    except (OSError, ValueError) as exc:
        raise ProvisionError(f"{rundir.report}: not a readable run report ({exc})") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION or isinstance(
            data.get("schema_version"), bool):
        raise ProvisionError(f"{rundir.report}: schema_version must be {SCHEMA_VERSION}: merge joins runs of this "
                             "version (`provision evaluate` rewrites an older one)")
    try:
        schema.validate(data, str(rundir.report))
    except ValueError as exc:
        raise ProvisionError(str(exc)) from None
    run = rundir.load()
    for host in run.hosts:
        safe_name(host, f"{rundir.report}: hosts")
    if not run.hosts:
        raise ProvisionError(f"{rundir.report}: names no host: not a shard's run")
    return run


def _plan_gate(inventory: inv.Inventory, vault: inv.Vault, limit, force: bool, progress) -> None:
    """``provision plan`` before an install: its errors stop the job (ProvisionError), unless ``force``."""
    from provision.plan import planner

    found = planner.plan(inventory, vault, limit)
    if found.problems:
        raise found.problems[0]
    errors = found.errors()
    for finding in errors:
        progress(f"plan: {finding.line()}")
    if errors and not force:
        raise ProvisionError(f"plan: {len(errors)} errors in the stack or the design (above; `provision plan -i "
                             f"{inventory.label}` proposes the nearest consistent stack): not installing; "
                             "--force installs anyway")
    if errors:
        progress(f"plan: {len(errors)} errors, installing anyway (--force)")


def plan(inventory_args: str | list[str] | None, limit: list[str] | None = None, vault: inv.Vault = inv.Vault(),
         gpus: int | None = None, profile: str | None = None, radix: int = 64, oversubscription: str = "1:1",
         pue: float | None = None, node_W: float | None = None, out=print, err=print) -> ExitStatus:
    """``provision plan``: with ``gpus`` and ``profile``, the cluster sizing (``provision.plan.sizing``);
    else the plan of the inventory (``provision.plan.planner``), touching no node. Exit 1 when it finds
    an error, 2 for bad input (a host the plan could not read is named on ``err``, the others still planned)."""
    from provision.plan import planner

    if gpus is not None or profile is not None:
        return _sizing(gpus, profile, radix, oversubscription, pue, node_W, out)
    if not inventory_args:
        raise ProvisionError("plan: give -i INVENTORY (check its stack and hardware) or --gpus N --profile P (size)")
    inventory = inv.read(inv.resolve_all(inventory_args), vault, limit)
    if not inventory.gpu_hosts and not inventory.problems:
        raise ProvisionError(f"{inventory.label}: no host has provision_profile: nothing to plan")
    found = planner.plan(inventory, vault, limit)
    problems = [*inventory.problems, *found.problems]
    for line in planner.render(found):
        out(line)
    if problems:
        out(f"plan: {len(problems)} hosts or fields could not be planned (errors below): fix them and plan again")
    for problem in problems:
        err(f"provision: error: {problem}")
    if problems:
        return ExitStatus.BAD_INPUT
    return ExitStatus.NODE_FAILED if found.errors() else ExitStatus.OK


SAVE_EVERY_S = 2.0  # report.json is rewritten at most this often during a burn-in (the journal has every result)
SAVE_SHARE = 10  # ... and at most once per this many times its last save took (1,250 x 15 results: ~5 s a save)


def _burnin(hosts, rundir: RunDir, run: Run, only_checks, control: Control, scope: str = "all",
            schedule: str = "quick", local: bool = False, forks: int | None = None,
            held: hostlock.Held | None = None) -> None:
    """Burn in ``hosts``; each result is journaled as it ends, and report.json refreshed."""
    started, saved = time.monotonic(), [0.0, 0.0]  # when report.json was last saved, how long that took
    control.progress(f"burnin: {len(hosts)} hosts")

    said: set[str] = set()

    def keeping(write) -> None:  # a full disk costs the journal or a save, never the burn-in: said once per file
        try:
            write()
        except OSError as exc:
            if str(exc.filename) not in said:
                said.add(str(exc.filename))
                control.progress(f"provision: warning: {not_written(exc)}; the burn-in goes on")

    def record(result) -> None:
        run.results.append(result)
        keeping(lambda: rundir.record(result))
        if time.monotonic() - saved[0] >= max(SAVE_EVERY_S, SAVE_SHARE * saved[1]):  # the scheduler waits for it
            began = time.monotonic()
            keeping(lambda: rundir.save(run))
            saved[:] = [time.monotonic(), time.monotonic() - began]

    run.results = []
    keeping(lambda: rundir.begin(run))  # the journal alone can rebuild the run (RunDir.load)
    procedure: dict = {}
    transport = hostlock.Reusing(LocalTransport() if local else SshTransport(), held or hostlock.Held())
    ordered = burnin_engine.run(hosts, run.hosts, rundir, transport, only_checks, control, record,
                                scope=scope, schedule_name=schedule, cluster_out=procedure, forks=forks)
    run.results = ordered
    run.cluster = procedure or None
    run.burnin_wall_s = round(time.monotonic() - started, 1)
    keeping(rundir.sync_journal)


def inventory(inventory_args: str | list[str], limit: list[str] | None = None, vault: inv.Vault = inv.Vault(),
              as_json: bool = False, out=print, err=print) -> ExitStatus:
    """List every host (address, port, user, profile or "-", groups), then one line per problem
    (to ``err``). Connects nowhere. Returns BAD_INPUT when there are problems."""
    found = inv.read(inv.resolve_all(inventory_args), vault, limit)
    if as_json:
        out(json.dumps(listing.as_json(found), indent=1))
    else:
        for line in listing.table(found):
            out(line)
    for warning in found.warnings:
        err(f"provision: warning: {warning}")
    for problem in found.problems:
        err(f"provision: error: {problem}")
    return ExitStatus.BAD_INPUT if found.problems else ExitStatus.OK


def evaluate(run_arg: str, profile_name: str | None = None, inventory_arg: str | list[str] | None = None,
             vault: inv.Vault = inv.Vault(), progress=print) -> ExitStatus:
    """Judge a run's saved raw outputs again (new profile, thresholds or site variables), touching
    no node; rewrite its report.json and JUnit. Raises ProvisionError for a bad run folder."""
    rundir = RunStore(paths.RUNS).open(run_arg)
    run = rundir.load(rebuild=_rebuilt)
    if inventory_arg:
        for host in inv.load(inv.resolve_all(inventory_arg), vault).hosts:
            if host.name in run.hosts:
                run.hosts[host.name].vars = {k: host.vars[k] for k in JUDGED_VARS if host.vars.get(k) is not None}
    run.results = reevaluate(rundir, run, profile_name)
    run.evaluated = {"at": _now(), "profile": profile_name,
                     "inventory": inventory_arg if isinstance(inventory_arg, str) or not inventory_arg
                     else ", ".join(inventory_arg)}
    rundir.save(run, latest=False)
    junit.write(rundir.junit, run)
    progress(summary.render(run))
    return _status(run)


def list_checks(markdown: bool = False, out=print) -> ExitStatus:
    """Print the checks in run order: id, scope, order, needs, timeout, metrics; or README's table."""
    if markdown:
        out(checks.markdown_table(), end="")
        return ExitStatus.OK
    for check in checks.registry().values():
        metrics = ", ".join(f"{m} [{u}]" if u else m for m, u in check.metrics.items()) or "-"
        out(f"{check.id:<16} {check.scope.value:<7} order {check.order:<3} needs {','.join(check.needs) or '-':<8} "
            f"timeout {check.timeout_s:>4.0f} s  {metrics}")
    return ExitStatus.OK


def _failed_installs(run_arg: str, limit: list[str] | None) -> list[str]:
    """The hosts of a saved run whose install failed or never reached them. Raises ProvisionError
    with ``limit`` given too, when the run installed nothing, or when every host installed ok."""
    saved = RunStore(paths.RUNS).open(run_arg).load()
    if not saved.install:
        raise ProvisionError(f"--retry-failed {run_arg}: that run installed nothing")
    if limit:
        raise ProvisionError("--retry-failed chooses the hosts itself: leave out --limit")
    failed = [h for h, i in saved.install.items() if i.status in ("failed", "unreachable")]
    if not failed:
        raise ProvisionError(f"--retry-failed {run_arg}: every host installed ok there")
    return failed


def _status(run: Run) -> ExitStatus:
    """OK when every host passed and no result blames the fabric itself (a leaf-spine cable)."""
    fabric = any(r.outcome is Outcome.FAIL and FABRIC in r.blamed() for r in run.results)
    return ExitStatus.OK if all(v == "pass" for v in run.verdicts().values()) and not fabric else ExitStatus.NODE_FAILED


def _gpu_inventory(inventory_args, limit, vault: inv.Vault, progress) -> inv.Inventory:
    """The inventory, with at least one GPU node selected; hosts without a profile are named and left out."""
    sources = inv.resolve_all(inventory_args)
    for path in sources:
        embedded.ensure_running(path, progress)
    inventory = inv.load(sources, vault, limit)
    others = [h.name for h in inventory.hosts if h.profile is None]
    if not inventory.gpu_hosts:
        raise ProvisionError(f"{inventory.label}: no GPU node to run on: no host{' in --limit' if limit else ''} "
                             "has provision_profile (see `provision inventory`)")
    checked: dict[int, profiles.Profile] = {}  # hosts of one profile and the same overrides share a view: once
    for host in inventory.gpu_hosts:  # a bad profile or site variable stops the run before any node is touched
        profile = profiles.for_host(str(host.profile), host.vars, host.name)
        if id(profile) in checked:
            continue
        try:
            references.validate(profile)
        except ProfileError as exc:
            raise ProfileError(f"host {host.name}: field 'provision_profile': {exc}") from None
        checked[id(profile)] = profile  # kept, so that no other view can take its id
    for warning in inventory.warnings:
        progress(f"provision: warning: {warning}")
    if others:
        progress(f"{len(others)} hosts without provision_profile are not GPU nodes, left out: "
                 f"{', '.join(others[:8])}{' ...' if len(others) > 8 else ''}")
    return inventory


def _install(inventory: inv.Inventory, hosts, rundir: RunDir, run: Run, tags, control: Control,
             forks: int | None = None) -> list:
    """Run the install playbook on ``hosts`` only (passed as its limit), on ``forks`` hosts at once (None:
    every host, so that no host waits for a free fork); record it; return the hosts that installed cleanly."""
    started, progress = time.monotonic(), control.progress
    forks = min(forks or len(hosts), len(hosts))
    progress(f"install: playbooks/site.yml on {len(hosts)} hosts, {forks} at once")
    result = ansible.run_playbook("site.yml", inventory.sources, rundir.ansible, limit=[h.name for h in hosts],
                                  tags=tags, vault_args=inventory.vault.args(), progress=progress,
                                  cancel=control.stop.is_set, events=control.events, forks=forks)
    run.install_wall_s = round(time.monotonic() - started, 1)
    run.install_artifacts = result.artifacts
    for host in hosts:
        entry = result.hosts.get(host.name)
        if entry is None:
            never = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) before it ran"
                                                 if control.stop.is_set() else "host never ran")])
            run.install[host.name] = HostInstall("unreachable", 0, {"play": never})
            continue
        status = "reboot_pending" if entry.status == "ok" and entry.reboot_pending else entry.status
        roles = {name: RoleResult(r["tasks"], r["changed"], [FailedTask(f["task"], f["msg"]) for f in r["failed"]])
                 for name, r in entry.roles.items()}
        if result.status == "canceled" and status == "ok":  # stopped part-way: not installed
            status = "failed"
            roles["play"] = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) during the install")])
        run.install[host.name] = HostInstall(status, entry.changed, roles)
        if status == "reboot_pending":
            progress(f"install: {host.name} waits for a reboot to load the new driver; not burned in")
    total = sum(e.changed for e in run.install.values())
    progress(f"install: done in {run.install_wall_s} s, changed={total}")
    return [h for h in hosts if run.install[h.name].status == "ok"]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# Bound on one live `ibnetdiscover` run: it sends a few SMPs per port found, one subnet at a time
# (rdma-core libibnetdisc); a bound chosen to cover large fabrics, not a measured figure.
IBNETDISCOVER_TIMEOUT_S = 300.0


def fabric(inventory_args: str | list[str] | None, files: list[str] | None = None, as_json: bool = False,
           limit: list[str] | None = None, vault: inv.Vault = inv.Vault(), out=print, err=print) -> ExitStatus:
    """Map the InfiniBand fabric, one plane per dump: from ``files`` (saved ``ibnetdiscover`` outputs),
    else live from the inventory's first GPU node (``ibnetdiscover -C <dev> -P 1`` per HCA of its
    profile). Prints per plane the leaves (hosts, uplinks, oversubscription), spines (downlinks) and
    every cable below the expected width and speed (the profile's ``hca.rate_Gbps``; without a profile
    the most common among the cables), or ``Fabric.to_dict(expected)`` with ``as_json``. Raises
    ProvisionError (exit 2) for an unreadable file or text that is not ibnetdiscover output,
    CommandError when a node cannot be reached or ibnetdiscover fails there."""
    from provision.fabric import discover

    if not inventory_args and not files:
        raise ProvisionError("fabric: give -i INVENTORY (discover live) or --ibnetdiscover FILE")
    hosts, node, profile = None, None, None
    if inventory_args:
        sources = inv.resolve_all(inventory_args)
        for path in sources if not files else ():
            embedded.ensure_running(path, err)
        inventory = inv.load(sources, vault, limit)
        hosts = [h.name for h in inventory.hosts]
        node = inventory.gpu_hosts[0] if inventory.gpu_hosts else None
        profile = profiles.for_host(str(node.profile), node.vars, node.name) if node else None
    if files:
        dumps, names = _read_dumps(files), None
    elif node is None or profile is None:
        raise ProvisionError("fabric: no host in the inventory has provision_profile, so no node to discover from")
    else:
        dumps, names = _live_dumps(node, profile)
    found = discover.fabric_from_dumps(dumps, hosts, names, warn=lambda line: err(f"provision: warning: {line}"))
    expected = _expected_width_speed(profile, found, err)
    if as_json:
        out(json.dumps({"expected_width_speed": expected, **found.to_dict(expected)}, indent=1))
    else:
        for line in _fabric_lines(found.to_dict(expected), expected):
            out(line)
    return ExitStatus.OK


def _read_dumps(files: list[str]) -> list[tuple[str, str]]:
    """(file, text) per file, read up to one character past the parsers' bound (so /dev/zero or a FIFO
    that never ends is refused by the parser's size check, not read into memory). Raises ProvisionError
    naming an unreadable one."""
    from provision.parsers import MAX_TEXT_CHARS

    dumps = []
    for file in files:
        try:
            with open(file, encoding="utf-8", errors="replace") as handle:
                dumps.append((file, handle.read(MAX_TEXT_CHARS + 1)))
        except OSError as exc:
            raise ProvisionError(f"{file}: cannot read: {exc.strerror or exc}") from None
    return dumps


def _live_dumps(host, profile) -> tuple[list[tuple[str, str]], list[str]]:
    """``ibnetdiscover -C <dev> -P 1`` on ``host`` per HCA device of ``profile``: (source, text) and plane names.
    The tool's stderr (ibwarn/SMP error lines) leads the text, so the parser reports it."""
    from provision.checks.ib_write_bw import hca_names
    from provision.errors import CommandError

    try:
        devices = hca_names(profile)
    except (KeyError, TypeError):
        raise ProfileError(f"host {host.name}: profile {host.profile} has no hca devices to discover from") from None
    conn = SshTransport().connect(host)
    dumps = []
    try:
        for dev in devices:
            argv = ["ibnetdiscover", "-C", dev, "-P", "1"]
            result = conn.run(argv, IBNETDISCOVER_TIMEOUT_S)
            if result.rc != 0:
                said = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1][:200]
                raise CommandError(f"host {host.name}: {' '.join(argv)} exited {result.rc}: {said}")
            dumps.append((f"{host.name}: {' '.join(argv)}", result.stderr + result.stdout))
    finally:
        conn.close()
    return dumps, devices


def _expected_width_speed(profile, found, err) -> str | None:
    """The profile's HCA rate as width and speed, else the cables' most common (and say so)."""
    from provision.fabric import discover, model

    rate = profile.hca.rate_Gbps if profile is not None else None
    if rate:
        try:
            return model.width_speed_for(float(rate))
        except ValueError as exc:
            raise ProfileError(f"profile {profile.name}: hca.rate_Gbps: {exc}") from None
    common = discover.common_width_speed(found)
    err(f"provision: note: no hardware profile: cables are judged against the most common width and speed "
        f"among them, {common}")
    return common


def _fabric_lines(view: dict, expected: str | None) -> list[str]:
    """The text report of ``Fabric.to_dict``: per plane its leaves, spines and degraded cables."""
    lines = []
    for plane in view["planes"]:
        name = plane["name"]
        leaves = [s for s in view["leaves"] if s["plane"] == name]
        spines = [s for s in view["spines"] if s["plane"] == name]
        bad = [lk for lk in view["degraded_links"] if lk["plane"] == name]
        lines.append(f"plane {name}: {plane['switches']} switches ({len(leaves)} leaves, {len(spines)} spines), "
                     f"{plane['hcas']} HCA ports, {plane['cables']} cables ({plane['self_loops']} self-loops); "
                     f"expected {expected or '-'}")
        for leaf in leaves:
            hosts = ", ".join(f"{h['host'] or '?'} {h['device'] or ''}".strip() + f" [{h['port']}] {h['width_speed']}"
                              for h in leaf["hosts"]) or "-"
            ups = ", ".join(f"[{u['port']}]->{u['to']}[{u['to_port']}] {u['width_speed']}" for u in leaf["uplinks"])
            over = leaf["oversubscription"]
            lines += [f"  leaf {leaf['guid']} \"{leaf['description']}\" lid {leaf['lid']}",
                      f"    hosts: {hosts}", f"    uplinks: {ups or '-'}",
                      f"    oversubscription: {over if over is not None else '- (no uplinks)'}"]
        for spine in spines:
            downs = ", ".join(f"[{d['port']}]->{d['to']}[{d['to_port']}] {d['width_speed']}"
                              for d in spine["downlinks"])
            lines += [f"  spine {spine['guid']} \"{spine['description']}\" lid {spine['lid']}",
                      f"    downlinks: {downs or '-'}"]
        lines.append(f"  degraded cables: {len(bad)}" if bad or expected else "  degraded cables: - (no expected rate)")
        lines += [f"    {lk['a']}[{lk['a_port']}] <-> {lk['b']}[{lk['b_port']}] {lk['width_speed']}"
                  f"{' (its two ends disagree)' if lk['mismatch'] else ''}" for lk in bad]
    return lines


PROMETHEUS_FILE = "burnin.prom"  # beside report.json; node_exporter's textfile collector reads *.prom
HTML_FILE = "report.html"


def report(run_arg: str, out: str | None = None, history: str | None = None, prometheus_out: str | None = None,
           progress=print) -> ExitStatus:
    """Write a run's HTML report (``provision.report.html``) at ``out`` (default RUN_DIR/report.html),
    with each host's trend from the history database ``history`` when given; with ``prometheus_out``
    ('' for RUN_DIR/burnin.prom, else a path: world-readable there, for node_exporter) the textfile too.
    ``out`` and ``prometheus_out`` are judged first (``provision.report.destination``: a folder, a
    symlink, standard output). Raises ProvisionError for a run folder without a readable report, a
    missing history file or a refused output; OutputError for an unwritable one."""
    from pathlib import Path

    from provision.report import destination
    from provision.report.destination import Destination

    rundir = RunStore(paths.RUNS).open(run_arg)
    page = Destination(path=rundir.path / HTML_FILE) if out is None else destination.resolve(out, HTML_FILE, "--out")
    prom = None
    if prometheus_out is not None:  # '': the run folder's own burnin.prom
        prom = destination.resolve(prometheus_out, PROMETHEUS_FILE, "--prometheus-out") if prometheus_out else \
            Destination(path=rundir.path / PROMETHEUS_FILE)
    if page.fd is not None and prom is not None and prom.fd == page.fd:
        raise ProvisionError(f"--out and --prometheus-out both name {page}: give one of them a file")
    run = rundir.load(rebuild=_rebuilt)
    if page.fd is not None and len(run.verdicts()) > html_report.INLINE_HOSTS:
        raise ProvisionError(f"--out {page}: the report of {len(run.verdicts())} hosts is a page per host: "
                             "name a file or a folder")
    said = (lambda line: None) if 1 in (page.fd, prom and prom.fd) else progress  # stdout holds the output
    trend = _history_trend(Path(history), run) if history else None
    try:
        _report_outputs(page, prom, run, rundir, trend, said)
    except OSError as exc:
        raise OutputError(f"report: cannot write {_cut(str(exc.filename or page))}: "
                               f"{exc.strerror or exc}") from None
    return ExitStatus.OK


def _report_outputs(page, prom, run: Run, rundir: RunDir, trend, said) -> None:
    """The HTML report at ``page`` and the Prometheus textfile at ``prom`` (when not None): a file, or an
    open descriptor (``provision.report.destination``). Raises OSError."""
    from provision.report import destination

    if page.path is None:
        destination.write_stream(page.fd, html_report.render(run, rundir, trend))
    else:
        html_report.write(page.path, run, rundir, trend)
        said(f"report: {page.path} ({page.path.stat().st_size} bytes)")
    if prom is not None and prom.path is None:
        destination.write_stream(prom.fd, prometheus.text(run))
    elif prom is not None:
        inside = rundir.path in prom.path.resolve().parents
        prometheus.write(prom.path, run, 0o600 if inside else 0o644)
        said(f"prometheus: {prom.path}")


def _cut(text: str, most: int = 200) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def _rebuilt(line: str) -> None:
    """Says on stderr that a run was rebuilt from its journal (``RunDir.load``)."""
    print(f"provision: warning: {line}", file=sys.stderr)


TREND_METRICS = ("busbw_GBps", "bw_avg_Gbps", "gflops")  # the report's per-host trend plots


def _history_trend(file, run: Run) -> dict:
    """{host: [(run id, series, value)]} of ``run``'s hosts and checks, in runs up to ``run``, from the
    history database ``file`` (read-only). Raises ProvisionError when the file does not exist (opening
    would create an empty one), is not a regular file or not a history database, or stays locked."""
    from provision.history import db

    checks = sorted({r.check for r in run.results})
    return db.read(file, lambda conn: db.trend(conn, sorted(run.verdicts()), TREND_METRICS, checks, run.started))


def _history_path(history_arg: str | None) -> None:
    """Refuses (ProvisionError, exit 2) a history path that is a FIFO, a device, a folder or a socket
    before any node is touched; the end of the burn-in looks again before it opens the file."""
    from provision.history import db, dbfile

    dbfile.checked(db.path(history_arg), create=False)


def _remember(run: Run, rundir: RunDir, history_arg: str | None, progress) -> str | None:
    """After a burn-in: gate ``run`` against the history (``provision.history.regress``), add its
    regression results, then store it there. Never raises: a history that cannot be opened or
    written (or stays locked by another process, ``dbfile.BUSY_BOUND_S``) costs the run its gates
    (one warning line, with the `provision history import` command that stores it later), never its
    report nor its exit status (the run is whole in its folder). Returns that line, None when stored."""
    import dataclasses

    from provision.history import db, dbfile, fingerprint, regress

    file = db.path(history_arg)

    def store(conn) -> list:
        prints = fingerprint.of_run(run, rundir.read)
        found = regress.gate(conn, run, prints)
        db.insert(conn, dataclasses.replace(run, finished=run.finished or _now(), results=[*run.results, *found]),
                  prints)
        return found

    try:
        regressions = db.write(file, store)
    except Exception as exc:  # noqa: BLE001 - this runs in job's finally, before the report is saved
        said = exc.reason if isinstance(exc, dbfile.HistoryBusy) else f"{type(exc).__name__}: {exc}"
        later = shlex.join(["provision", "history", "import", os.path.abspath(rundir.path), "--history",
                            os.path.abspath(file)])
        line = (f"provision: warning: history {file}: {said} (this run is not in the history; store it later "
                f"with `{later}`)")
        progress(line)
        return line
    run.results.extend(regressions)
    for result in regressions:
        progress(f"regression: {result.message}")
    return None


def history(history_arg: str | None, host: str | None = None, check: str | None = None, metric: str | None = None,
            since: str | None = None, as_json: bool = False, out=print) -> ExitStatus:
    """Print the stored measurements matching the filters, oldest run first: a table (run, time, host,
    check, device, metric, value, unit, outcome) or JSON rows. The file is opened read-only. Raises
    ProvisionError (exit 2) for a bad ``since``, a missing history file or one that is not a history
    database, or one that stays locked."""
    from provision.history import db

    when = _since(since) if since else None
    found = db.read(db.path(history_arg), lambda conn: db.rows(conn, host, check, metric, when))
    if as_json:
        out(json.dumps([vars(r) for r in found], indent=1))
    else:
        for line in db.table(found):  # a stored text value is a node's: one line, inert (provision.report.console)
            out(visible(line, newlines=False))
    return ExitStatus.OK


def _since(text: str) -> str:
    """``--since`` as the history compares it: an ISO date as given, a time in UTC. Raises ProvisionError."""
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ProvisionError(f"--since {text!r}: not an ISO date or time (2026-12-01, 2026-12-01T02:00)") from None
    when = when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def history_import(history_arg: str | None, run_args: list[str], progress=print) -> ExitStatus:
    """Load runs made before the history existed (their report.json, through provision.results.reading)
    into it; a run already there is replaced, so importing twice changes nothing. Raises ProvisionError
    (exit 2) naming the file and field for a run folder without a usable report."""
    from provision.history import db, fingerprint

    if not run_args:
        raise ProvisionError("history import: name at least one RUN_DIR")
    loaded = []
    for arg in run_args:  # every report read before the first write: bad input stores nothing
        rundir = RunStore(paths.RUNS).open(arg)
        run = rundir.load(rebuild=_rebuilt)
        if not run.started:
            raise ProvisionError(f"{rundir.report}: started: missing (the history orders runs by it)")
        loaded.append((rundir, run))
    stored = [(run, fingerprint.of_run(run, rundir.read)) for rundir, run in loaded]
    counts = db.write(db.path(history_arg), lambda conn: [db.insert(conn, run, prints) for run, prints in stored])
    for (run, _), rows in zip(stored, counts):
        progress(f"history: {run.run_id} ({run.started}): {len(run.hosts)} hosts, {rows} rows")
    return ExitStatus.OK


def _check_set(name: str, hosts: list, only_checks: list[str] | None) -> list[str]:
    """The checks tagged with set ``name`` (``Check.sets``) less those every one of ``hosts``' profiles
    excludes (``exclude_checks``; their union, in run order). Raises ProvisionError with --checks given
    too, for a set no check has, or naming the profile file of an exclusion of an unknown check."""
    if only_checks is not None:
        raise ProvisionError("--check-set and --checks: give one of them")
    registry = checks.registry()
    known = sorted({s for check in registry.values() for s in check.sets})
    if name not in known:
        raise ProfileError(f"--check-set {name}: no such check set (known: {', '.join(known) or 'none'})")
    wanted: set[str] = set()
    for profile_name in dict.fromkeys(str(host.profile) for host in hosts):
        profile = profiles.load(profile_name)
        unknown = sorted(set(profile.exclude_checks) - set(registry))
        if unknown:
            raise ProfileError(f"{profile.path}: exclude_checks: unknown check {', '.join(unknown)} "
                               f"(known: {', '.join(registry)})")
        wanted |= {c for c, check in registry.items() if name in check.sets and c not in profile.exclude_checks}
    return [c for c in registry if c in wanted]


DRAIN_FILE = "drain.txt"  # beside report.json: `<host> <reason>` per failing host (provision.slurm.drain)
SLURM_FILE = "slurm.txt"  # beside it with --drain slurm: what was drained, resumed and left alone


def _drain_options(drain: str | None, resume_passed: bool) -> None:
    """Raises ProvisionError for --resume-passed without --drain slurm (before any rack starts)."""
    if resume_passed and drain != "slurm":
        raise ProvisionError("--resume-passed needs --drain slurm")


def _drain(phases, rundir: RunDir, run: Run, slurm_nodes: dict[str, str], resume_passed: bool,
           control: Control, unwritten: list[str] | None = None) -> None:
    """After a burn-in (whose drain.txt ``_outputs`` wrote): say it; with ``slurm_nodes`` drain and resume
    in Slurm and write what was done to slurm.txt. A stopped run drains nothing (its verdicts are not the
    burn-in's). scontrol's failures are warning lines (``provision.slurm.drain.apply``), never the run's; a
    file that cannot be written is one line (``_attempt``, added to ``unwritten``)."""
    unwritten = [] if unwritten is None else unwritten
    if "burnin" not in phases:
        return
    lines = slurm_drain.drain_lines(run)
    control.progress(f"drain: {len(lines)} failing hosts in {rundir.path / DRAIN_FILE}")
    if not slurm_nodes:
        return
    if control.stop.is_set():
        said = [f"slurm: stopped by {control.reason}: nothing drained or resumed"]
        control.progress(said[0])
    else:
        said = slurm_drain.apply(run, slurm_nodes, resume_passed, Scontrol(), control.progress)
    _attempt(lambda: rundir.write(SLURM_FILE, "".join(f"{line}\n" for line in said)), control.progress, unwritten)
