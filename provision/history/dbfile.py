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

Looking at the path and opening it (``os.stat``, creating a missing file, SQLite's open) is done in a worker
thread and waited for ``LOOK_BOUND_S`` at most: on a hung network mount (an NFS server gone, a ``hard`` mount)
``stat`` never returns, and the end of a burn-in waited for it forever. A hung system call cannot be
interrupted from Python, so the thread is left behind (a daemon: it holds no lock and does not keep the process
from exiting) and the caller gets ``HistoryHung`` naming the path and the bound; another look at the same path
while that thread is still stuck fails at once rather than leaving one more thread behind. Only the look and
the open are bounded: a mount that hangs after a prompt open still blocks SQLite's reads and writes.
"""
from __future__ import annotations

import os
import sqlite3
import stat
import threading
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
# How long looking at and opening the history's path may take. A local disk answers in microseconds and a
# healthy NFS server in milliseconds; a server that is gone is retried by a `hard` mount for ever (nfs(5):
# each try waits timeo, 60 s over TCP, before "server not responding"). 10 s is far above any healthy answer
# and short next to the end of an hour's burn-in. A judgment, not a measurement.
LOOK_BOUND_S = 10.0

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


class HistoryHung(ProvisionError):
    """Looking at or opening the history's path did not return within ``LOOK_BOUND_S`` (a hung network
    mount). ``writing``: what was to be stored was not (exit 5, as ``HistoryBusy``); else exit 2."""

    def __init__(self, file: Path, bound: float, writing: bool, again: bool = False) -> None:
        self.reason = (f"history path hung: no answer from the file system in {bound:g} s (a hung network mount?)"
                       + ("; still no answer from the earlier look" if again else ""))
        self.writing = writing
        if writing:
            self.exit_status = ExitStatus.NOT_WRITTEN
        super().__init__(f"{file}: {self.reason}")


_stuck: dict[str, threading.Thread] = {}  # path -> a look that never returned (its thread is still in the call)
_stuck_lock = threading.Lock()


def bounded(file: Path, work: Callable[[], T], writing: bool) -> T:
    """``work()`` (a look at ``file`` or its opening) run in a daemon thread and waited for ``LOOK_BOUND_S``
    at most; its result, or its exception raised here. Raises HistoryHung when it has not returned by then,
    or at once while an earlier look at ``file`` is still stuck (module docstring)."""
    key = os.path.abspath(file)  # text only: abspath asks no file system
    with _stuck_lock:
        earlier = _stuck.get(key)
        if earlier is not None and earlier.is_alive():
            raise HistoryHung(file, LOOK_BOUND_S, writing, again=True)
        _stuck.pop(key, None)
    outcome: list[tuple[bool, object]] = []

    def look() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, raised there
            outcome.append((False, exc))

    thread = threading.Thread(target=look, name=f"history look {key}", daemon=True)
    thread.start()
    thread.join(LOOK_BOUND_S)
    if thread.is_alive():
        with _stuck_lock:
            _stuck[key] = thread
        raise HistoryHung(file, LOOK_BOUND_S, writing)
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]


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
    anything else, or for a path that cannot be looked at or created; HistoryHung (``create``: writing)
    when the file system does not answer within ``LOOK_BOUND_S``."""
    return bounded(file, lambda: _checked(file, create), writing=create)


def _checked(file: Path, create: bool) -> bool:
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
        return _checked(file, create=False)
    except OSError as exc:
        error = OutputError if exc.errno in NOT_WRITABLE else ProvisionError
        raise error(f"{file}: cannot create the history database: {exc.strerror or exc}") from None
    return True


def open_for_writing(file: Path) -> sqlite3.Connection:
    """A connection to ``file`` (checked, created when missing). Raises ProvisionError; HistoryHung."""
    def opening() -> sqlite3.Connection:
        _checked(file, create=True)
        try:  # opened in the look's thread, used in the caller's: one at a time, never both
            return sqlite3.connect(file, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        except sqlite3.Error as exc:
            raise ProvisionError(f"{file}: cannot open the history database: {exc}") from None
    return bounded(file, opening, writing=True)


def open_read_only(file: Path) -> sqlite3.Connection | None:
    """A read-only connection to ``file``; None when it does not exist. Raises ProvisionError; HistoryHung."""
    def opening() -> sqlite3.Connection | None:
        if not _checked(file, create=False):
            return None
        uri = Path(os.path.abspath(file)).as_uri() + "?mode=ro"  # as_uri escapes '?', '#' and '%' in the path
        try:
            return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        except sqlite3.Error as exc:
            raise ProvisionError(f"{file}: cannot open the history database: {exc}") from None
    return bounded(file, opening, writing=False)


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
