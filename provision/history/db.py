"""The history database: every run's measurements in one SQLite file (Python's ``sqlite3``).

Default ``<runs>/history.db`` (``provision.paths.RUNS``), else ``--history PATH`` or the
environment's ``PROVISION_HISTORY`` (``path``). Created 0600: it names a cluster's nodes.

Tables (after every migration)::

    runs(run_id PK, started, finished, inventory)          started/finished: ISO 8601 UTC
    hosts(run_id, host, profile, driver, cuda, cudnn, nccl, hca_fw, kernel)   one row per run and host:
                                                           its stack fingerprint (provision.history.fingerprint)
    results(run_id, host, check_id, device, metric, value, unit, outcome)    one row per finding
                                                           (value REAL for numbers, TEXT otherwise); a
                                                           result without findings is one row, device and
                                                           metric '' and value NULL
    refs(run_id, host, check_id, device, metric, reference, lower, detail)   per finding judged against a
                                                           reference or carrying a detail: the reference and
                                                           its absolute lower bound (a regression's: the
                                                           baseline median and the gate), from version 3

The schema version is SQLite's ``PRAGMA user_version``; ``MIGRATIONS[n - 1]`` takes a file from
version n - 1 to n, in one transaction, so a file is never left half migrated. ``insert`` replaces
a run's rows in one transaction: inserting the same run twice leaves the file as one insert did.
Every function raises ProvisionError naming the file for a file that is not such a database.
The file itself (what the path is, read-only opening, another process's lock): ``dbfile``; ``write``
and ``read`` run a unit of work on it, tried again while another process holds its lock.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from provision import paths
from provision.errors import OutputError, ProvisionError
from provision.history import dbfile
from provision.results.model import REGRESSION, Run
from provision.results.store import HISTORY

ENV = "PROVISION_HISTORY"
T = TypeVar("T")
FINGERPRINT = ("driver", "cuda", "cudnn", "nccl", "hca_fw", "kernel")  # hosts' fingerprint columns

MIGRATIONS = (
    # 1: runs, their hosts' stack fingerprint, their findings
    """
    CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT NOT NULL,
                       inventory TEXT NOT NULL);
    CREATE TABLE hosts (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
                        profile TEXT, driver TEXT, cuda TEXT, cudnn TEXT, nccl TEXT, hca_fw TEXT,
                        PRIMARY KEY (run_id, host));
    CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
                          check_id TEXT NOT NULL, device TEXT NOT NULL, metric TEXT NOT NULL, value,
                          unit TEXT NOT NULL, outcome TEXT NOT NULL);
    """,
    # 2: the kernel joins the fingerprint (read by `uname -r` from this version on); the per-host
    # series the regression gates and `provision history --host` read
    """
    ALTER TABLE hosts ADD COLUMN kernel TEXT;
    CREATE INDEX results_series ON results (host, check_id, metric, device);
    """,
    # 3: what each finding was judged against (a regression's baseline: the median and the gate), and
    # its detail, so `provision history` can say a regression's baseline and where a gate cannot fire
    """
    CREATE TABLE refs (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
                       check_id TEXT NOT NULL, device TEXT NOT NULL, metric TEXT NOT NULL, reference REAL,
                       lower REAL, detail TEXT NOT NULL);
    CREATE INDEX refs_series ON refs (host, check_id, metric, device);
    """,
)


def path(given: str | os.PathLike | None = None) -> Path:
    """The database file: ``given``, else $PROVISION_HISTORY, else ``<runs>/history.db``."""
    return Path(given or os.environ.get(ENV) or paths.RUNS / HISTORY)


def migrate(conn: sqlite3.Connection, origin: str, upto: int = len(MIGRATIONS)) -> int:
    """Apply the migrations after the file's version, up to ``upto``, each in its own write transaction
    (BEGIN IMMEDIATE: a second process opening the same new file waits, then finds it migrated); return
    the version now. Raises ProvisionError for a file newer than this code."""
    version = _version(conn, origin)
    if version >= upto:
        return version
    saved, conn.isolation_level = conn.isolation_level, None  # explicit transactions only, while migrating
    try:
        for number in range(version + 1, upto + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                if _version(conn, origin) < number:
                    for statement in filter(str.strip, MIGRATIONS[number - 1].split(";")):  # no ';' inside them
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        conn.isolation_level = saved
    return upto


def _version(conn: sqlite3.Connection, origin: str) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > len(MIGRATIONS):
        raise ProvisionError(f"{origin}: history schema version {version} is newer than this provision's "
                             f"{len(MIGRATIONS)}")
    return version


@contextmanager
def connect(file: Path, upto: int = len(MIGRATIONS)) -> Iterator[sqlite3.Connection]:
    """An open, migrated database (created 0600 with its folder when missing), closed on exit.
    Raises ProvisionError naming ``file`` when it is not a regular file, cannot be opened or is not
    a history database; HistoryBusy when another process held its lock past SQLite's busy timeout."""
    conn = dbfile.open_for_writing(file)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, str(file), upto)
        yield conn
    except sqlite3.Error as exc:
        raise _error(file, exc, writing=True) from None
    finally:
        conn.close()


@contextmanager
def reader(file: Path) -> Iterator[sqlite3.Connection]:
    """``file`` opened read-only (a read-only mount, a file without write permission), closed on exit;
    a file SQLite has not written yet reads as an empty history. Raises ProvisionError naming ``file``
    when it does not exist, is not a regular file or is not a history database (a newer one too);
    HistoryBusy as ``connect``."""
    conn = dbfile.open_read_only(file)
    if conn is None:
        raise ProvisionError(f"--history {file}: no such history database (a burn-in or `provision history "
                             "import RUN_DIR` makes it)")
    try:
        if _version(conn, str(file)) == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            conn.close()  # created by a write that got no further: no tables to read
            conn = sqlite3.connect(":memory:")
            migrate(conn, str(file))
        yield conn
    except sqlite3.Error as exc:
        raise _error(file, exc, writing=False) from None
    finally:
        conn.close()


def _error(file: Path, exc: sqlite3.Error, writing: bool) -> ProvisionError:
    """A lock, a refused write (exit 5: the file is healthy, the write was not taken) or a bad file."""
    if dbfile.is_busy(exc):
        return dbfile.HistoryBusy(file, dbfile.BUSY_TIMEOUT_S, writing)
    if writing and dbfile.not_stored(exc):
        return OutputError(f"{file}: history not written: {exc} (the file is kept as it was)")
    return ProvisionError(f"{file}: not a usable history database ({type(exc).__name__}: {exc})")


def write(file: Path, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work(conn)`` on ``connect(file)``, all of it tried again while another process holds the
    lock (``dbfile.retrying``): make ``work`` safe to repeat (one transaction, nothing printed)."""
    def attempt() -> T:
        with connect(file) as conn:
            return work(conn)
    return dbfile.retrying(file, attempt)


def read(file: Path, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work(conn)`` on ``reader(file)``, tried again as ``write``."""
    def attempt() -> T:
        with reader(file) as conn:
            return work(conn)
    return dbfile.retrying(file, attempt)


def insert(conn: sqlite3.Connection, run: Run, prints: dict[str, dict[str, str | None]]) -> int:
    """Store ``run`` (its results, and per host the fingerprint ``prints`` {host: {column: value}}),
    replacing any earlier insert of the same run id; return the number of result rows."""
    rows = list(_result_rows(run))
    with conn:  # one transaction: the run is in whole or not at all
        conn.execute("DELETE FROM runs WHERE run_id = ?", (run.run_id,))
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?)", (run.run_id, run.started, run.finished, run.inventory))
        hosts = sorted(set(run.hosts) | {r[1] for r in rows})
        conn.executemany(f"INSERT INTO hosts (run_id, host, profile, {', '.join(FINGERPRINT)}) "
                         f"VALUES (?, ?, ?{', ?' * len(FINGERPRINT)})",
                         [(run.run_id, h, run.hosts[h].profile if h in run.hosts else None,
                           *(prints.get(h, {}).get(c) for c in FINGERPRINT)) for h in hosts])
        conn.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO refs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", list(_ref_rows(run)))
    return len(rows)


def _ref_rows(run: Run) -> Iterator[tuple]:
    for result in run.results:
        for f in result.findings:
            if f.reference is not None or f.detail:
                ref, low = (f.reference.value, f.reference.bounds()[0]) if f.reference is not None else (None, None)
                yield (run.run_id, f.host or result.host, result.check, f.device, f.metric, _real(ref), _real(low),
                       f.detail or "")


def _real(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _result_rows(run: Run) -> Iterator[tuple]:
    for result in run.results:
        host = result.host  # joined once per result, not once per finding
        if not result.findings:
            yield (run.run_id, host, result.check, "", "", None, "", result.outcome.value)
        for f in result.findings:
            yield (run.run_id, f.host or host, result.check, f.device, f.metric, _value(f.value), f.unit,
                   "pass" if f.ok else "fail")


def _value(value: object) -> float | str | None:
    """A finding's value as a column holds it: finite numbers as REAL, None as NULL, the rest as text."""
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else str(value)
    return str(value)


@dataclass(frozen=True)
class Row:
    """One measurement as ``provision history`` prints it; ``time`` is its run's start (ISO 8601)."""

    run: str
    time: str
    host: str
    check: str
    device: str
    metric: str
    value: float | str | None
    unit: str
    outcome: str


def rows(conn: sqlite3.Connection, host: str | None = None, check: str | None = None, metric: str | None = None,
         since: str | None = None) -> list[Row]:
    """Every stored measurement matching the filters (``since``: an ISO date or time, compared with
    the run's start as text), oldest run first."""
    where, args = ["1 = 1"], []
    for column, value in (("r.host", host), ("r.check_id", check), ("r.metric", metric)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if since is not None:
        where.append("u.started >= ?")
        args.append(since)
    found = conn.execute("SELECT r.run_id, u.started, r.host, r.check_id, r.device, r.metric, r.value, r.unit, "
                         f"r.outcome FROM results r JOIN runs u USING (run_id) WHERE {' AND '.join(where)} "
                         "ORDER BY u.started, r.run_id, r.rowid", args)
    return [Row(*row) for row in found]


def series(conn: sqlite3.Connection, host: str, check: str, device: str, metric: str, before: str,
           window: int) -> list[tuple[str, float]]:
    """(run id, value) of ``host``'s passing numeric measurements of one metric in its last
    ``window`` runs that started before ``before`` (ISO time), newest first."""
    found = conn.execute(
        "SELECT r.run_id, r.value FROM results r JOIN runs u USING (run_id) WHERE r.host = ? AND r.check_id = ? "
        "AND r.device = ? AND r.metric = ? AND r.outcome = 'pass' AND typeof(r.value) IN ('real', 'integer') "
        "AND u.started < ? ORDER BY u.started DESC LIMIT ?", (host, check, device, metric, before, window))
    return [(run_id, float(value)) for run_id, value in found]


def series_of_host(conn: sqlite3.Connection, host: str, before: str,
                   window: int) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """``series`` for every metric of ``host`` at once: {(check, device, metric): [(run id, value),
    ...] newest first, at most ``window`` each}. One query per host (SQLite window functions, 3.25+)
    instead of one per metric: the gate of a 1,250-host run asked 100,000 questions (bench/report_scale.py)."""
    found = conn.execute(
        "SELECT check_id, device, metric, run_id, value FROM (SELECT r.check_id, r.device, r.metric, r.run_id, "
        "r.value, u.started, ROW_NUMBER() OVER (PARTITION BY r.check_id, r.device, r.metric "
        "ORDER BY u.started DESC) AS n FROM results r JOIN runs u USING (run_id) WHERE r.host = ? "
        "AND r.outcome = 'pass' AND typeof(r.value) IN ('real', 'integer') AND u.started < ?) WHERE n <= ? "
        "ORDER BY started DESC", (host, before, window))
    out: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for check, device, metric, run_id, value in found:
        out.setdefault((check, device, metric), []).append((run_id, float(value)))
    return out


def fingerprint(conn: sqlite3.Connection, run_id: str, host: str) -> dict[str, str | None]:
    """The stack fingerprint stored for ``host`` in ``run_id`` ({} when there is none)."""
    found = conn.execute(f"SELECT {', '.join(FINGERPRINT)} FROM hosts WHERE run_id = ? AND host = ?",
                         (run_id, host)).fetchone()
    return dict(zip(FINGERPRINT, found)) if found else {}


def last_good_run(conn: sqlite3.Connection, host: str, before: str) -> str | None:
    """The newest run of ``host`` started before ``before`` without a regression result for it, else None."""
    found = conn.execute(
        "SELECT h.run_id FROM hosts h JOIN runs u USING (run_id) WHERE h.host = ? AND u.started < ? AND NOT EXISTS "
        "(SELECT 1 FROM results r WHERE r.run_id = h.run_id AND r.host = h.host AND r.check_id = ?) "
        "ORDER BY u.started DESC LIMIT 1", (host, before, REGRESSION)).fetchone()
    return found[0] if found else None


def trend(conn: sqlite3.Connection, hosts: list[str], metrics: tuple[str, ...], checks: list[str] | None = None,
          upto: str | None = None, upto_run: str | None = None) -> dict[str, list[tuple]]:
    """{host: [(run id, "<check> <device> <metric>", value), ...]} oldest first, numeric values of
    ``metrics`` only: the shape provision.report.html's ``Trend`` takes. ``checks``: only these
    checks; ``upto``: only runs started then or before (ISO time); ``upto_run``: the report's run id,
    so that a run started in the same second but ordered after it (the order is start, then run id) is
    left out too, and its stored start replaces ``upto`` when the report has none. Filtered by SQLite on
    the ``results_series`` index, so a report of a few hosts reads their rows only, however large the
    history."""
    out: dict[str, list[tuple]] = {h: [] for h in hosts}
    where, args = ["r.host IN (SELECT value FROM json_each(?))", "r.metric IN (SELECT value FROM json_each(?))",
                   "typeof(r.value) = 'real'"], [json.dumps(hosts), json.dumps(list(metrics))]
    if checks is not None:
        where.append("r.check_id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(checks))
    stored = conn.execute("SELECT started FROM runs WHERE run_id = ?", (upto_run,)).fetchone() if upto_run else None
    upto = stored[0] if stored else upto
    if upto and upto_run:
        where.append("(u.started < ? OR (u.started = ? AND r.run_id <= ?))")
        args += [upto, upto, upto_run]
    elif upto:
        where.append("u.started <= ?")
        args.append(upto)
    found = conn.execute("SELECT r.host, r.run_id, r.check_id, r.device, r.metric, r.value FROM results r "
                         f"JOIN runs u USING (run_id) WHERE {' AND '.join(where)} "
                         "ORDER BY u.started, r.run_id, r.rowid", args)
    for host, run_id, check, device, metric, value in found:
        out[host].append((run_id, f"{check} {device} {metric}", value))
    return out


COLUMNS = ("run", "time", "host", "check", "device", "metric", "value", "unit", "outcome")


def table(found: list[Row], escape: Callable[[str], str] = str) -> list[str]:
    """``provision history``'s table: a header, then one aligned line per row ('-' for an empty cell).
    Each cell is escaped first (``escape``: the command passes provision.report.console's ``visible``; a tab
    is written ``\\t`` here), then the columns are measured by the escaped text's width on a terminal
    (``width``): escaped after padding, a value's escapes pushed the rest of its line out of its columns."""
    cells = [list(COLUMNS)] + [[escape(_cell(getattr(r, c))).replace("\t", "\\t") for c in COLUMNS] for r in found]
    widths = [max(width(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return ["  ".join(c + " " * (w - width(c)) for c, w in zip(row, widths)).rstrip() for row in cells]


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal: 2 for a wide or full-width character (East Asian Width W
    or F: CJK, most emoji), 0 for a combining mark or a format character (a zero-width space), else 1."""
    return sum(0 if unicodedata.combining(ch) or unicodedata.category(ch) in ("Me", "Cf")
               else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)
