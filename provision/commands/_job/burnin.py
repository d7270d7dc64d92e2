"""The job's burn-in phase: the hosts taken (their locks), then every check through the engine, each
result journaled as it ends."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from provision import paths
from provision.engine import burnin as burnin_engine
from provision.engine import hostlock
from provision.engine.control import Control
from provision.engine.local import LocalTransport
from provision.engine.ssh import SshTransport
from provision.errors import not_written
from provision.report import hostlist
from provision.results.model import Run
from provision.results.store import RunDir

SAVE_EVERY_S = 2.0  # report.json is rewritten at most this often during a burn-in (the journal has every result)
SAVE_SHARE = 10  # ... and at most once per this many times its last save took (1,250 x 15 results: ~5 s a save)


def take_hosts(hosts, phases, rundir: RunDir, local: bool, wait: float | None, progress,
               keep: bool = False) -> hostlock.Held:
    """Take the hosts for the run in ``rundir`` (``provision.engine.hostlock``): their controller locks, then,
    for a burn-in, their node locks (over SSH, the connections kept for the burn-in; in-process with ``local``).
    Raises HostsBusy (exit 6) naming the runs that hold some and those hosts, after ``wait`` seconds, having
    removed the run's folder (still empty: a refused run leaves nothing; ``keep``: a resumed run's, kept)."""
    line = json.dumps(hostlock.holder(rundir.name, phases))
    names = [h.name for h in hosts]
    held = hostlock.Held()
    try:
        held = hostlock.take_controller(paths.RUNS / hostlock.LOCKS, names, line, wait or 0.0, hostlist.fold,
                                        progress)
        held.line = line
        if "burnin" in phases and local:
            hostlock.take_local(line, hostlist.fold, names[0], held)
        elif "burnin" in phases:
            hostlock.mark_nodes(hosts, SshTransport(), line, wait or 0.0, hostlist.fold, progress, held)
    except BaseException:
        held.release()
        try:
            if not keep:
                rundir.path.rmdir()
        except OSError:
            pass
        raise
    return held


@dataclass(frozen=True)
class Reach:
    """How the run reaches its nodes: ``local`` (``burnin --local``: this machine itself, as local processes; no
    BMC), else over SSH and through their BMCs, whose TLS certificates are verified unless ``insecure_bmc``."""

    local: bool = False
    insecure_bmc: bool = False


def burnin(targets, rundir: RunDir, run: Run, request: burnin_engine.BurninRequest, control: Control,
           reach: Reach = Reach(), held: hostlock.Held | None = None) -> None:
    """Burn in ``targets`` (``provision.targets``) as ``request`` asks (over SSH, or as local processes with
    ``local``); each result is journaled as it ends, and report.json refreshed."""
    started, saved = time.monotonic(), [0.0, 0.0]  # when report.json was last saved, how long that took
    control.progress(f"burnin: {len(targets)} hosts")

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
        if result.attempt < request.attempt:  # an earlier attempt's, already in the journal (a resumed run)
            return
        keeping(lambda: rundir.record(result))
        if time.monotonic() - saved[0] >= max(SAVE_EVERY_S, SAVE_SHARE * saved[1]):  # the scheduler waits for it
            began = time.monotonic()
            keeping(lambda: rundir.save(run))
            saved[:] = [time.monotonic(), time.monotonic() - began]

    run.results = []
    keeping(lambda: rundir.begin(run))  # the journal alone can rebuild the run (RunDir.load)
    transport = hostlock.Reusing(LocalTransport() if reach.local else SshTransport(), held or hostlock.Held())
    oob = None
    if not reach.local:
        from provision.bmc import outofband  # the BMC client's libraries: only for a run over SSH

        oob = outofband.BmcAccess(reach.insecure_bmc, datetime.now(timezone.utc),
                                  outofband.ssh_boot_id(SshTransport()))
    if reach.insecure_bmc:
        control.progress("bmc: --insecure-bmc: the BMCs' TLS certificates are NOT verified in this run")
    outcome = burnin_engine.run(targets, request, transport, burnin_engine.Sink(rundir, run.hosts, control, record),
                                oob)
    run.results = outcome.results
    run.cluster = outcome.cluster or None
    run.power_actions = outcome.power_actions or None
    run.burnin_wall_s = round(time.monotonic() - started, 1)
    keeping(rundir.sync_journal)
