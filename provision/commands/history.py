"""``provision history``: per node a summary of its runs (verdicts, regressions with their baseline, stack
changes), its stored measurements with ``--rows``, or ``history import RUN_DIR...`` to load runs made before
the history existed."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
import datetime as dt
import json

from provision import paths
from provision.commands._common import rebuilt, say
from provision.errors import ExitStatus, ProvisionError
from provision.report.console import visible
from provision.results.store import RunStore


def main(args: argparse.Namespace) -> int:
    if not args.action:
        return history(args.history, HistoryQuery(args.host, args.check, args.metric, args.since), args.json,
                       out=say, rows=args.rows)
    if args.action[0] != "import":
        raise ProvisionError(f"history: unknown action {args.action[0]!r} (use `history import RUN_DIR...` "
                             "or filters such as --host)")
    return history_import(args.history, args.action[1:], progress=say)


@dataclass(frozen=True)
class HistoryQuery:
    """The filters of ``provision history``: a ``host``, a ``check``, a ``metric``, runs ``since`` (a date or a
    duration such as 7d); None: any."""

    host: str | None = None
    check: str | None = None
    metric: str | None = None
    since: str | None = None


def history(history_arg: str | None, query: HistoryQuery = HistoryQuery(), as_json: bool = False, out=print,
            rows: bool = False) -> ExitStatus:
    """Print per host (``host``, else every host stored) a summary (``provision.history.summary``): its
    last runs and verdicts, its regressions with their baseline (the median and the gate), its stack
    changes, and the series where the own-median gate cannot fire (its gate line, ``own_pct`` below the
    median, at or under the check's lower bound: an H100's ib_write_bw at the default 5 %, whose lower
    bound is itself 5 % under line rate), as text or JSON. With ``rows``, the stored measurements matching
    the filters instead, oldest run first: a table (run, time, host, check, device, metric, value, unit,
    outcome) or JSON rows. The file is opened read-only. Raises ProvisionError (exit 2) for a bad
    ``since``, a missing history file or one that is not a history database, or one that stays locked."""
    from provision.history import db, summary

    host, check, metric, since = query.host, query.check, query.metric, query.since
    when = _since(since) if since else None
    if not rows:
        found_hosts = db.read(db.path(history_arg), lambda conn: [
            summary.summarize(conn, name, check, metric, when) for name in summary.hosts(conn, host, when)])
        text = ([json.dumps([s.to_dict() for s in found_hosts], indent=1)] if as_json
                else summary.lines(found_hosts) or [f"no run of {host or 'any host'} in the history"])
        for line in text:
            out(visible(line, newlines=False) if not as_json else line)
        return ExitStatus.OK
    found = db.read(db.path(history_arg), lambda conn: db.rows(conn, host, check, metric, when))
    if as_json:
        out(json.dumps([vars(r) for r in found], indent=1))
    else:
        # a stored text value is a node's: one line, inert (provision.report.console), escaped cell by cell so the
        # columns still line up
        for line in db.table(found, escape=lambda text: visible(text, newlines=False)):
            out(line)
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
        run = rundir.load(rebuild=rebuilt)
        if not run.started:
            raise ProvisionError(f"{rundir.report}: started: missing (the history orders runs by it)")
        loaded.append((rundir, run))
    stored = [(run, fingerprint.of_run(run, rundir.read)) for rundir, run in loaded]
    counts = db.write(db.path(history_arg), lambda conn: [db.insert(conn, run, prints) for run, prints in stored])
    for (run, _), rows in zip(stored, counts):
        progress(f"history: {run.run_id} ({run.started}): {len(run.hosts)} hosts, {rows} rows")
    return ExitStatus.OK
