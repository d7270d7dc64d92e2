"""The history database's file: what the path is before anything opens it, opening it for writing
or read-only, and a lock held by another process.

A path is looked at with ``os.stat`` first (which neither opens nor blocks): a regular file is
handed to SQLite, a missing one is created 0600 (``O_CREAT | O_EXCL``: never through something
that appeared meanwhile), anything else (FIFO, character or block device, directory, socket) is
refused naming the path. Opening a FIFO for writing blocks until a reader comes, with no timeout and
no way for SIGTERM to stop it; SQLite would also leave ``<path>-journal`` beside a device.

Reads open the file read-only (SQLite URI ``mode=ro``), so a history on a read-only mount or
without write permission can be read. A lock held by another writer is waited for with SQLite's
busy handler, ``BUSY_TIMEOUT_S`` at a time, and the whole unit of work is tried again until
``BUSY_BOUND_S``; then ``HistoryBusy``: never "not a usable history database", which would have an
operator delete a healthy file.
"""
from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Callable, TypeVar

from provision.errors import NOT_WRITABLE, ExitStatus, OutputError, ProvisionError

# Bounds on waiting for another process's lock. 30 s in all: what the end of a burn-in waited before
# (sqlite3's timeout then); another run holds the lock for one transaction (its migration, or its
# insert). A judgment, not a measured worst case. 5 s per attempt leaves room for more
# than one attempt: SQLite refuses at once, without its busy handler, a lock upgrade that would deadlock.
BUSY_TIMEOUT_S = 5.0
BUSY_BOUND_S = 30.0
RETRY_PAUSE_S = 0.5

KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))
T = TypeVar("T")


class HistoryBusy(ProvisionError):
    """Another process held the history's lock for longer than ``BUSY_BOUND_S``. ``writing``: what was
    to be stored was not (exit 5, NOT_WRITTEN, as any result file not written); else exit 2."""

    def __init__(self, file: Path, waited: float, writing: bool) -> None:
        self.reason = f"history busy (locked by another process; still locked after {waited:.0f} s)"
        self.writing = writing
        if writing:
            self.exit_status = ExitStatus.NOT_WRITTEN
        super().__init__(f"{file}: {self.reason}")


# SQLite's primary result codes for a write the file system refused: full (SQLITE_FULL), read-only
# (SQLITE_READONLY: a read-only mount or file), I/O error, no permission, a journal it could not create
NOT_STORED = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_PERM,
                        sqlite3.SQLITE_CANTOPEN})


def not_stored(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is the file system refusing a write (``NOT_STORED``), not a damaged file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in NOT_STORED


def checked(file: Path, create: bool) -> bool:
    """Whether ``file`` exists as a regular file (a symlink to one counts); with ``create`` a missing
    one is created, empty and 0600, with its folder. Raises ProvisionError naming ``file`` for
    anything else, or for a path that cannot be looked at or created."""
    try:
        mode = os.stat(file).st_mode
    except FileNotFoundError:
        if not create:
            if os.path.islink(file):
                raise ProvisionError(f"{file}: a symlink to nothing, not a history database") from None
            return False
        return _create(file)
    except OSError as exc:
        raise ProvisionError(f"{file}: cannot look at the history database: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in KINDS if test(mode)), "not a regular file")
        raise ProvisionError(f"{file}: {kind}, not a history database (give a regular file, or a path where one "
                             "can be created)")
    return True


def _create(file: Path) -> bool:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NONBLOCK, 0o600))
    except FileExistsError:  # something appeared since the stat (or a symlink to nothing): look again
        return checked(file, create=False)
    except OSError as exc:
        error = OutputError if exc.errno in NOT_WRITABLE else ProvisionError
        raise error(f"{file}: cannot create the history database: {exc.strerror or exc}") from None
    return True


def open_for_writing(file: Path) -> sqlite3.Connection:
    """A connection to ``file`` (checked, created when missing). Raises ProvisionError."""
    checked(file, create=True)
    try:
        return sqlite3.connect(file, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise ProvisionError(f"{file}: cannot open the history database: {exc}") from None


def open_read_only(file: Path) -> sqlite3.Connection | None:
    """A read-only connection to ``file``; None when it does not exist. Raises ProvisionError."""
    if not checked(file, create=False):
        return None
    uri = Path(os.path.abspath(file)).as_uri() + "?mode=ro"  # as_uri escapes '?', '#' and '%' in the path
    try:
        return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise ProvisionError(f"{file}: cannot open the history database: {exc}") from None


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's SQLITE_BUSY or SQLITE_LOCKED (any extended code)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(exc, sqlite3.OperationalError) and code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def retrying(file: Path, work: Callable[[], T]) -> T:
    """``work()``, tried again while it fails on another process's lock, while another attempt (its busy
    timeout included) ends within ``BUSY_BOUND_S`` of the first. Raises HistoryBusy after that;
    ``work``'s other errors as they are."""
    start = time.monotonic()
    while True:
        try:
            return work()
        except HistoryBusy as exc:
            waited = time.monotonic() - start
            if waited + RETRY_PAUSE_S + BUSY_TIMEOUT_S > BUSY_BOUND_S:  # another attempt could outlast the bound
                raise HistoryBusy(file, waited, exc.writing) from None
        time.sleep(RETRY_PAUSE_S)
