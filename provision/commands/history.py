"""``provision history``: the nodes' stored measurements across runs, or ``history import RUN_DIR...`` to
load runs made before the history existed."""
from __future__ import annotations

import argparse
import datetime as dt
import json

from provision import paths
from provision.commands._common import rebuilt, say
from provision.errors import ExitStatus, ProvisionError
from provision.report.console import visible
from provision.results.store import RunStore


def main(args: argparse.Namespace) -> int:
    if not args.action:
        return history(args.history, args.host, args.check, args.metric, args.since, args.json, out=say)
    if args.action[0] != "import":
        raise ProvisionError(f"history: unknown action {args.action[0]!r} (use `history import RUN_DIR...` "
                             "or filters such as --host)")
    return history_import(args.history, args.action[1:], progress=say)


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
        run = rundir.load(rebuild=rebuilt)
        if not run.started:
            raise ProvisionError(f"{rundir.report}: started: missing (the history orders runs by it)")
        loaded.append((rundir, run))
    stored = [(run, fingerprint.of_run(run, rundir.read)) for rundir, run in loaded]
    counts = db.write(db.path(history_arg), lambda conn: [db.insert(conn, run, prints) for run, prints in stored])
    for (run, _), rows in zip(stored, counts):
        progress(f"history: {run.run_id} ({run.started}): {len(run.hosts)} hosts, {rows} rows")
    return ExitStatus.OK
