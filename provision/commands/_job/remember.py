"""The job's remember phase: a burn-in gated against the history database, then stored in it."""
from __future__ import annotations

import os
import shlex

from provision.commands._common import now
from provision.results.model import Run
from provision.results.store import RunDir


def history_path(history_arg: str | None) -> None:
    """Refuses (ProvisionError, exit 2) a history path that is a FIFO, a device, a folder or a socket
    before any node is touched; the end of the burn-in looks again before it opens the file."""
    from provision.history import db, dbfile

    dbfile.checked(db.path(history_arg), create=False)


def remember(run: Run, rundir: RunDir, history_arg: str | None, progress) -> str | None:
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
        db.insert(conn, dataclasses.replace(run, finished=run.finished or now(), results=[*run.results, *found]),
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
