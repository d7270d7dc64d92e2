"""``provision health``: the node-local health check slurmd runs between jobs (``provision.health``).

Prints nothing when the node is healthy (``-v``: a line per check), else one line as LBNL NHC's (``ERROR:  nhc:
Health check failed:  ...``); with ``--drain self`` the lines of what it did in Slurm, prefixed ``provision-health:
slurm:``. Exit statuses: ``provision.health.modes``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from provision import arguments, checks as checks_pkg
from provision.errors import CommandError, ExitStatus, ParseError, ProvisionError, not_written
from provision.health import modes, node as health_node, selfdrain, state
from provision.results.model import HostRecord, JUDGED_VARS, Outcome, Run, Scope

NAME = "provision-health"  # as NHC's "nhc" in its lines


class NotChecked(ProvisionError):
    """A tool the call needs before any check could not be run (``--ack-xid``'s dmesg): exit 7, not bad input."""

    exit_status = ExitStatus.UNCHECKED


def main(args: argparse.Namespace) -> int:
    """The call (module docstring). In prolog and epilog a failure of the health check itself, bad input included,
    is one line and exit 0 (Slurm drains a node whose prolog or epilog exits non-zero): ``provision.cli`` guards the
    whole command there, its import and options too (``provision.health.modes``)."""
    return _call(args, modes.MODES[args.mode], time.monotonic())


def _call(args: argparse.Namespace, mode: modes.Mode, began: float) -> int:
    budget = _budget(args.budget, mode)
    node = _node(args)
    from provision import targets

    target = targets.build([node.host], "health")[0]
    chosen = _checks(args.checks, target, mode)
    say = print if args.verbose else (lambda line: None)
    folder = Path(args.state_dir)
    last = state.previous(folder)
    boot_id = _boot_id(node.host.vars)
    after = _ack_xid(_left(began, budget)) if args.ack_xid else state.xid_after(last, boot_id)
    if after is not None:
        from provision.checks.xid import AFTER_VAR

        target = targets.build([_with_vars(node.host, {AFTER_VAR: after})], "health")[0]
    chosen, skipped = _idle_gpus(chosen, mode, target, _left(began, budget))
    started = datetime.now(timezone.utc)
    rundir = _kept_run(args) if args.keep_run or args.history is not None else None
    from provision.health import runner, xids

    outcome = runner.run(target, chosen, _left(began, budget), rundir, say)
    results = outcome.results + skipped
    xid, log = _xid_log(results, outcome.rundir)
    kept = [] if args.ack_xid else state.latched(last, boot_id)
    xids.carry(xid, log, kept)
    verdict = _verdict(results, node.host.name)
    status = modes.exit_status(mode, verdict, outcome.cut)
    run = Run(run_id=rundir.name if rundir is not None else f"health-{started:%Y%m%dT%H%M%SZ}", inventory=node.label,
              phases=["burnin"],
              started=started.isoformat(timespec="seconds"),
              hosts={node.host.name: HostRecord(node.host.profile, {k: target.host.vars[k] for k in JUDGED_VARS
                                                                    if target.host.vars.get(k) is not None})},
              results=results)
    try:
        done = _drain(args, node, run, verdict, outcome.cut, began + budget + modes.SLURM_S)
    except Exception as exc:  # noqa: BLE001 - the verdict stands whatever Slurm's side does (module docstring)
        done = selfdrain.Done(selfdrain.NOTHING, (f"warning: --drain self did not finish: {type(exc).__name__}: "
                                                  f"{' '.join(str(exc).split())[:200]}",))
    if done.action == selfdrain.HELD and mode.own_errors_pass and status == modes.UNHEALTHY:
        status = modes.OK  # the breaker holds: a shared cause, not this node; the job goes ahead (modes docstring)
    line = _line(run, node.host.name, verdict, outcome, budget)
    if line and status == modes.OK and verdict == "fail":
        line += " [not drained: the breaker holds; exit 0]"
    if line:
        print(line)
    for said in done.lines:  # what it did in Slurm on stdout (slurmd logs it); what it could not do on stderr
        print(f"{NAME}: slurm: {said}", file=sys.stderr if said.startswith("warning:") else sys.stdout)
    for result in results if args.verbose else ():
        print(f"{NAME}: {result.check}: {result.outcome.value}: {result.message}")
    record = {"node": node.host.name, "slurm_node": node.slurm_node, "mode": mode.name,
              "started": run.started, "wall_s": round(time.monotonic() - began, 3), "budget_s": budget,
              "verdict": verdict, "cut": outcome.cut, "exit_status": status, "line": line,
              "checks": [{"check": r.check, "outcome": r.outcome.value, "message": r.message,
                          "duration_s": r.duration_s} for r in results],
              "slurm": {"action": done.action, "lines": list(done.lines)}, "job_gpus": list(_job_gpus()),
              "boot_id": boot_id, "xid_after_s": _next_window(xid, log, after),
              "xid_failing": xids.latch(xid, log, kept),
              "ended_unix_s": round(time.time(), 3), **_cpu()}
    _keep(folder, args.textfile_dir, record)
    if rundir is not None:
        _publish(rundir, run, args.history)
    return status


def _left(began: float, budget: float) -> float:
    """Seconds left of the call's ``budget`` (at least half a second: a tool started then is cut by its timeout)."""
    return max(0.5, budget - (time.monotonic() - began))


def _budget(given: str | None, mode: modes.Mode) -> float:
    if given is None:
        return mode.budget_s
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise ProvisionError(f"--budget {given}: seconds, more than 0 and at most 3600")
    return value


def _node(args) -> health_node.Node:
    if args.inventory or args.profile:
        if args.config:
            raise ProvisionError("health: --config, or -i INVENTORY / --profile NAME: give one")
        from provision import inventory as inv

        sources = tuple(inv.resolve_all(args.inventory)) if args.inventory else ()
        return health_node.from_inventory(sources, args.host, args.profile, arguments.vault(args))
    if args.host:
        raise ProvisionError("health: --host goes with -i INVENTORY (the config file names its host)")
    return health_node.from_config(Path(args.config or health_node.CONFIG))


def _checks(given: str | None, target, mode: modes.Mode) -> list[str]:
    """The checks of the call: ``--checks`` (node checks whose loads the mode allows), else the ``health`` set less the
    profile's exclude_checks. Raises ProvisionError naming a check."""
    from provision.checks import sets

    registry = checks_pkg.registry()
    if given is None:
        return [c for c in sets.members("health", registry) if c not in target.profile.exclude_checks]
    wanted = [c.strip() for c in given.split(",") if c.strip()]
    if not wanted:
        raise ProvisionError(f"--checks {given!r}: no check id given (the health set runs when --checks is left out)")
    for check_id in wanted:
        check = registry.get(check_id)
        if check is None:
            raise ProvisionError(f"--checks: unknown check {check_id!r} (provision checks lists them)")
        if check.scope is not Scope.NODE:
            raise ProvisionError(f"--checks {check_id}: a {check.scope.value} check needs several nodes; a health "
                                 "check judges this node only")
        if check.budget.loads and check.budget.loads not in mode.loads:
            allowed = [m.name for m in modes.MODES.values() if check.budget.loads in m.loads]
            hint = f" (only in --mode {', '.join(allowed)}, when no process uses a GPU)" if allowed else ""
            raise ProvisionError(f"--checks {check_id}: it loads the {check.budget.loads.upper()}s, which a job on "
                                 f"this node would feel: not in --mode {mode.name}{hint}")
    return [c for c in registry if c in wanted]


def _idle_gpus(chosen: list[str], mode: modes.Mode, target, budget: float):
    """(the checks to run, skipped results): a check that loads the GPUs runs (in the epilog) only when the ending job
    held every GPU of the node (``SLURM_JOB_GPUS``: Slurm gives none of them to another job until its epilog ends)
    and nvidia-smi lists no compute process; otherwise it is skipped, saying why."""
    from provision.results.model import CheckResult

    registry = checks_pkg.registry()
    loading = [c for c in chosen if registry[c].budget.loads]
    if not loading:
        return chosen, []
    from provision.engine.local import LocalConnection
    from provision.health import gpus

    count = target.profile.gpu.count
    held = sorted(set(_job_gpus()))
    why = ""
    if held != list(range(count)):
        why = (f"the ending job held GPUs {','.join(map(str, held)) or 'none'} (SLURM_JOB_GPUS), not all {count}: "
               "another job may hold the others")
    else:
        result = LocalConnection(None).run(gpus.QUERY, min(10.0, budget))  # budget: what is left of the call's
        try:
            busy = gpus.compute_processes(result.stdout) if result.rc == 0 else None
        except ParseError:
            busy = None
        if busy:
            why = f"GPUs in use: {', '.join(f'pid {p.pid} ({p.name}) on {p.bus_id}' for p in busy[:4])}"
        elif busy is None:
            why = (f"cannot tell whether a GPU is in use (nvidia-smi exit {result.rc}: "
                   f"{' '.join((result.stderr or result.stdout).split())[:120]})")
    if not why:
        return chosen, []
    skipped = [CheckResult(c, (target.name,), Outcome.SKIPPED, f"not run: {why}; it loads the GPUs") for c in loading]
    return [c for c in chosen if c not in loading], skipped


def _verdict(results, host: str) -> str:
    """pass, fail or error for ``host``: a failure wins (it judged the node), then an error (not judged)."""
    mine = [r for r in results if host in r.hosts]
    if any(r.outcome is Outcome.FAIL for r in mine):
        return "fail"
    return "error" if any(r.outcome is Outcome.ERROR for r in mine) else "pass"


def _line(run: Run, host: str, verdict: str, outcome, budget: float) -> str:
    """NHC's one line: ``ERROR:  <name>:  Health check failed:  <check> <finding>``; for the health check's own
    failures ``... could not finish:`` or ``... timed out ...``; '' when healthy."""
    from provision.health import runner

    if verdict == "fail":
        return f"ERROR:  {NAME}:  Health check failed:  {selfdrain.reason(run, host)[len(selfdrain.PREFIX):].strip()}"
    if outcome.cut:
        cut = next((r.check for r in outcome.results if f"interrupted ({runner.BUDGET_REASON}) while" in r.message),
                   next((r.check for r in outcome.results if "interrupted" in r.message), "a check"))
        return f"ERROR:  {NAME}:  Health check timed out while running {cut} (budget {budget:g} s): not judged"
    if verdict == "error":
        first = next(r for r in run.results if r.outcome is Outcome.ERROR)
        return f"ERROR:  {NAME}:  Health check could not finish:  {first.check}: {first.message[:200]}"
    return ""


def _drain(args, node, run: Run, verdict: str, cut: bool, deadline: float) -> selfdrain.Done:
    """``--drain self`` (``provision.health.selfdrain``), every scontrol call bounded by ``deadline`` (the budget and
    ``modes.SLURM_S`` after the call began: slurmd kills a HealthCheckProgram at 60 s)."""
    if args.drain != "self":
        return selfdrain.Done(selfdrain.NOTHING)
    from provision.slurm.scontrol import Scontrol

    failing = verdict == "fail"
    call = selfdrain.Judged(verdict if not (cut and verdict == "pass") else "error",
                            selfdrain.reason(run, node.host.name) if failing else "",
                            frozenset(r.check for r in run.results if r.outcome is Outcome.PASS),
                            selfdrain.reasons(run, node.host.name) if failing else frozenset())
    return selfdrain.apply(Scontrol(deadline=deadline), node.slurm_node, call)


def _keep(folder: Path, textfile_dir: str | None, record: dict) -> None:
    """last.json and the textfile; a file that cannot be written is one warning line (NHC logs it and goes on)."""
    writes = [lambda: state.save(folder, record)]
    if textfile_dir:
        writes.append(lambda: state.textfile(Path(textfile_dir), record))
    for write in writes:
        try:
            write()
        except OSError as exc:
            print(f"{NAME}: warning: {not_written(exc)}; the health check's result stands", file=sys.stderr)
        except ImportError as exc:  # prometheus_client missing from the node's environment
            print(f"{NAME}: warning: --textfile-dir: {exc}; the health check's result stands", file=sys.stderr)


def _kept_run(args):
    from provision import paths
    from provision.results.store import RunStore

    return RunStore(paths.RUNS).create(args.run_id)


def _publish(rundir, run: Run, history: str | None) -> None:
    """``--keep-run``/``--history``: the run folder's report.json and JUnit, and the history. What cannot be done is
    one warning line: the health check's result stands."""
    try:
        from provision.commands._job import publish, remember

        unwritten: list[str] = []
        publish.outputs(["burnin"], rundir, run, print, unwritten)
        if history is not None:
            remember.remember(run, rundir, history or None, print)
            publish.outputs(["burnin"], rundir, run, print, unwritten)
    except ImportError as exc:  # the role's environment holds the health command's modules only
        print(f"{NAME}: warning: --keep-run/--history: report.json and JUnit not written: {exc} (the health_check "
              "role installs the health command's modules only; add provision's requirements to "
              f"health_check_requirements for them); the raw outputs are in {rundir.path}; the health check's "
              "result stands", file=sys.stderr)
        return
    except OSError as exc:
        print(f"{NAME}: warning: {not_written(exc)}; the health check's result stands", file=sys.stderr)
        return
    print(f"{NAME}: run kept in {rundir.path}")


def _xid_log(results, rundir) -> tuple:
    """(the xid check's result or None, the kernel log it read or '')."""
    xid = next((r for r in results if r.check == "xid"), None)
    if xid is None or not xid.raw:
        return xid, ""
    try:
        return xid, rundir.read(xid.raw[0].path, "xid")
    except ProvisionError:
        return xid, ""


def _next_window(xid, log: str, after: float | None) -> float | None:
    """The Xid window the next call judges from: the last kernel log stamp this call read when its xid check passed
    (its Xids are judged); else the window it had (a failing Xid keeps failing: ``provision.health.xids``)."""
    if xid is None or xid.outcome is not Outcome.PASS:
        return after
    from provision.checks.xid import last_stamp

    stamp = last_stamp(log)
    return stamp if stamp is not None else after


def _ack_xid(budget: float) -> float | None:
    """``--ack-xid``: the stamp of the kernel log's last line now: the Xids logged so far are not judged again."""
    from provision.checks.xid import last_stamp
    from provision.engine.local import LocalConnection

    try:
        result = LocalConnection(None).run(["dmesg"], min(10.0, budget))  # budget: what is left of the call's
    except CommandError as exc:  # it could not be started
        raise NotChecked(f"--ack-xid: {exc}: nothing acknowledged") from None
    if result.rc != 0 or result.timed_out:
        said = "timed out" if result.timed_out else f"exit {result.rc}"
        raise NotChecked(f"--ack-xid: dmesg {said}: {(result.stderr or result.stdout).strip()[:200]}: nothing "
                         "acknowledged")
    return last_stamp(result.stdout)


def _boot_id(variables: dict) -> str | None:
    """This boot's id (the file the inventory names, else the kernel's); None when it is no regular file (a FIFO
    would block the call), over 4 KiB, or unreadable."""
    from provision.inventory import bmcvars

    path = Path(str(variables.get(bmcvars.BOOT_ID_PATH) or bmcvars.DEFAULT_BOOT_ID_PATH))
    try:
        if not path.is_file() or path.stat().st_size > 4096:  # /proc's files are regular, of size 0
            return None
        with path.open("rb") as handle:
            return handle.read(4096).decode(errors="replace").strip() or None
    except OSError:
        return None


def _job_gpus() -> tuple[int, ...]:
    from provision.health import gpus

    try:
        return gpus.job_gpus(os.environ)
    except ParseError:
        return ()


def _cpu() -> dict:
    """CPU seconds (user + system) of this process (``cpu_s``) and of the tools it ran (``tools_cpu_s``)."""
    import resource

    mine, tools = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": round(mine.ru_utime + mine.ru_stime, 3), "tools_cpu_s": round(tools.ru_utime + tools.ru_stime, 3),
            "max_rss_kB": mine.ru_maxrss}


def _with_vars(host, more: dict):
    import dataclasses

    return dataclasses.replace(host, vars={**host.vars, **more})
