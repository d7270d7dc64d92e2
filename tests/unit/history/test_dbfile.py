"""The history file: paths that are not regular files refused before anything opens them (issue 21
causes 4 and 18), reads that need no write access (cause 12), and a lock held by another process
said as such, retried, and the run's `history import` command given (cause 11)."""
import os
import shlex
import shutil
import socket
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest

from provision import cli
from provision.commands import _job
from provision.commands import history as history_command
from provision.commands import report as report_command
from provision.commands._job import remember
from provision.errors import ProvisionError
from provision.history import db, dbfile
from provision.results.store import RunStore
from tests.unit.history.runs import bw_run
from tests.unit.history.test_cli_history import saved_runs
from tests.unit.mounts import fill, read_only, small_tmpfs

HANG_GUARD_S = 120  # only catches a call that never returns (a FIFO's open blocks forever); not a timing check


def returns(call):
    """``call()``'s outcome (("ok", value) or ("raised", exc)) from a thread; fails the test when it is
    still running after HANG_GUARD_S."""
    outcome = []

    def target():
        try:
            outcome.append(("ok", call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(("raised", exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert outcome, f"the call was still blocked after {HANG_GUARD_S} s (a FIFO opened blindly)"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "history.fifo"
    os.mkfifo(path)
    yield path
    # a blocked writer (the bug) would still hang on this FIFO: a reader releases it
    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))


def test_a_fifo_as_history_is_refused_without_opening_it(tmp_path, fifo, capsys):
    folders = saved_runs(tmp_path, (1,))
    kind, exc = returns(lambda: history_command.history_import(str(fifo), folders, progress=lambda _: None))
    assert kind == "raised" and isinstance(exc, ProvisionError)
    assert str(exc) == (f"{fifo}: a FIFO, not a history database (give a regular file, or a path where one can "
                        "be created)")
    kind, status = returns(lambda: cli.main(["history", "--history", str(fifo)]))
    assert (kind, status) == ("ok", 2)
    err = capsys.readouterr().err
    assert "history.fifo: a FIFO, not a history database" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.fifo", "runs"]  # no -journal beside it


def test_the_burn_ins_history_step_on_a_fifo_is_one_warning_and_returns(tmp_path, fifo):
    rundir = RunStore(tmp_path / "runs").create("night3")
    run = bw_run("night3", 3, {"node01": 396.0})
    before, lines = list(run.results), []
    kind, _ = returns(lambda: remember.remember(run, rundir, str(fifo), lines.append))
    assert kind == "ok" and run.results == before
    assert len(lines) == 1 and "a FIFO, not a history database" in lines[0]
    assert f"`provision history import {rundir.path} --history {fifo}`" in lines[0]


def test_a_fifo_as_the_jobs_history_is_refused_before_any_node_is_touched(fifo):
    # the inventory named does not exist: the history's refusal comes first, before anything is read
    with pytest.raises(ProvisionError, match=r"history\.fifo: a FIFO, not a history database"):
        _job.run(_job.JobOptions(("burnin",), inventory=("no-such-inventory",), history=str(fifo)),
                 progress=lambda _: None)
    # a path that does not exist yet passes, and is not created before the burn-in has a result
    remember.history_path(str(fifo.parent / "new.db"))
    assert not (fifo.parent / "new.db").exists()


@pytest.fixture
def char_device(tmp_path):
    """A character device in tmp_path (/dev/null's twin, as root), else /dev/null itself: refused
    before any open, so nothing is created beside it either way."""
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o600 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        return Path(os.devnull)
    return path


def test_a_character_device_is_refused_and_leaves_no_journal(tmp_path, char_device, capsys):
    folders = saved_runs(tmp_path, (1,))
    beside = set(os.listdir(char_device.parent))
    assert cli.main(["history", "import", *folders, "--history", str(char_device)]) == 2
    assert f"{char_device}: a character device, not a history database" in capsys.readouterr().err
    assert set(os.listdir(char_device.parent)) == beside


def test_a_folder_a_socket_and_a_dangling_symlink_are_named(tmp_path):
    folder = tmp_path / "dir.db"
    folder.mkdir()
    short = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))  # an AF_UNIX path has at most 107 bytes
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(short / "s.db"))
        dangling = tmp_path / "gone.db"
        dangling.symlink_to(tmp_path / "nowhere" / "h.db")
        for path, said in ((folder, "a directory"), (short / "s.db", "a socket")):
            with pytest.raises(ProvisionError, match=f"{path}: {said}, not a history database"):
                with db.connect(path):
                    pass
            with pytest.raises(ProvisionError, match=f"{path}: {said}, not a history database"):
                history_command.history(str(path), out=lambda _: None)
        with pytest.raises(ProvisionError, match="gone.db: a symlink to nothing, not a history database"):
            with db.connect(dangling):
                pass
        sock.close()
    finally:
        shutil.rmtree(short)


def test_a_symlink_to_a_history_is_followed(tmp_path):
    with db.connect(tmp_path / "real.db"):
        pass
    (tmp_path / "link.db").symlink_to(tmp_path / "real.db")
    history_command.history_import(str(tmp_path / "link.db"), saved_runs(tmp_path, (1,)), progress=lambda _: None)
    with db.reader(tmp_path / "real.db") as conn:
        assert len(db.rows(conn)) == 6


def test_reads_open_the_file_read_only(tmp_path):
    file = tmp_path / "h.db"
    history_command.history_import(str(file), saved_runs(tmp_path, (1,)), progress=lambda _: None)
    with db.reader(file) as conn:
        assert len(db.rows(conn)) == 6
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM runs")


def test_an_empty_file_reads_as_an_empty_history(tmp_path, capsys):
    (tmp_path / "h.db").touch(mode=0o600)
    assert cli.main(["history", "--history", str(tmp_path / "h.db"), "--rows"]) == 0  # issue 23: rows by --rows
    assert capsys.readouterr().out.split() == list(db.COLUMNS)
    assert cli.main(["history", "--history", str(tmp_path / "h.db")]) == 0
    assert capsys.readouterr().out == "no run of any host in the history\n"
    assert (tmp_path / "h.db").stat().st_size == 0


@pytest.fixture
def read_only_history(tmp_path):
    """A history of nights 1 and 2 that this process cannot write: a read-only bind mount as root, else
    the file 0444 in a folder 0555."""
    folder = tmp_path / "ro"
    folder.mkdir()
    file = folder / "h.db"
    history_command.history_import(str(file), saved_runs(tmp_path, (1, 2)), progress=lambda _: None)
    if os.geteuid() == 0:
        with read_only(folder):
            yield file
    else:
        file.chmod(0o444)
        folder.chmod(0o555)
        yield file
        folder.chmod(0o755)


def test_a_history_that_cannot_be_written_is_read(tmp_path, read_only_history, capsys):
    with pytest.raises(OSError):  # the premise: this process cannot write there
        (read_only_history.parent / "probe").touch()
    assert cli.main(["history", "--history", str(read_only_history), "--host", "node03", "--metric",
                     "bw_avg_Gbps", "--rows"]) == 0  # issue 23: the stored rows by --rows
    assert [line.split()[6] for line in capsys.readouterr().out.splitlines()[1:]] == ["397", "394"]
    assert cli.main(["history", "--history", str(read_only_history), "--host", "node03"]) == 0
    assert capsys.readouterr().out.startswith("node03: 2 runs from 2026-11-01 to 2026-11-02; last night2: pass\n")
    night2 = str(RunStore(tmp_path / "runs").open("night2").path)
    assert report_command.report(night2, history=str(read_only_history), out=str(tmp_path / "r.html"),
                       progress=lambda _: None) == 0
    assert "bw_avg_Gbps over 2 runs" in (tmp_path / "r.html").read_text()
    night3 = saved_runs(tmp_path, (3,))
    assert cli.main(["history", "import", *night3, "--history", str(read_only_history)]) == 5
    err = capsys.readouterr().err
    assert f"{read_only_history}: history not written: attempt to write a readonly database" in err
    assert "not a usable" not in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def quick_busy(monkeypatch):
    """Busy bounds of a fraction of a second, so a held lock runs out quickly (nothing is timed)."""
    monkeypatch.setattr(dbfile, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(dbfile, "BUSY_BOUND_S", 0.2)
    monkeypatch.setattr(dbfile, "RETRY_PAUSE_S", 0.05)


def holding(file: Path, how: str = "IMMEDIATE") -> sqlite3.Connection:
    """Another connection holding the write lock (IMMEDIATE) or every lock (EXCLUSIVE) on ``file``."""
    other = sqlite3.connect(file, isolation_level=None, check_same_thread=False)
    other.execute(f"BEGIN {how}")
    return other


def test_a_locked_history_is_said_busy_with_the_import_command_and_nothing_is_lost(tmp_path, quick_busy, capsys):
    file = tmp_path / "h.db"
    history_command.history_import(str(file), saved_runs(tmp_path, (1, 2)), progress=lambda _: None)
    rundir = RunStore(tmp_path / "runs").create("night3")
    run = bw_run("night3", 3, {"node01": 396.0, "node03": 391.0})
    rundir.save(run, latest=False)
    other, lines = holding(file), []
    remember.remember(run, rundir, str(file), lines.append)
    assert len(lines) == 1 and "not a usable" not in lines[0]
    assert lines[0].startswith(f"provision: warning: history {file}: history busy (locked by another process; "
                               "still locked after ")
    command = shlex.split(lines[0].split("`")[1])
    assert command[:3] == ["provision", "history", "import"] and Path(command[3]) == rundir.path.absolute()
    assert cli.main(command[1:]) == 5  # still locked: the import says so too, and stored nothing (NOT_WRITTEN)
    assert "history busy (locked by another process" in capsys.readouterr().err
    other.execute("ROLLBACK")
    other.close()
    assert cli.main(command[1:]) == 0
    with db.reader(file) as conn:
        assert {r.run for r in db.rows(conn)} == {"night1", "night2", "night3"}


def test_a_read_while_another_process_writes_is_said_busy(tmp_path, quick_busy, capsys):
    file = tmp_path / "h.db"
    history_command.history_import(str(file), saved_runs(tmp_path, (1,)), progress=lambda _: None)
    other = holding(file, "EXCLUSIVE")
    assert cli.main(["history", "--history", str(file)]) == 2
    err = capsys.readouterr().err
    assert "history busy (locked by another process" in err and "not a usable" not in err
    other.execute("ROLLBACK")
    assert cli.main(["history", "--history", str(file)]) == 0


def test_a_lock_released_while_waiting_is_retried_and_the_run_stored(tmp_path, quick_busy, monkeypatch):
    file = tmp_path / "h.db"
    history_command.history_import(str(file), saved_runs(tmp_path, (1,)), progress=lambda _: None)
    other, pauses = holding(file), []

    def pause(seconds):  # the other process commits while this one waits between attempts
        pauses.append(seconds)
        if other.in_transaction:
            other.execute("COMMIT")

    monkeypatch.setattr(dbfile.time, "sleep", pause)
    monkeypatch.setattr(dbfile, "BUSY_BOUND_S", 3600.0)  # room for the retry however slow this machine is
    rundir = RunStore(tmp_path / "runs").create("night2")
    lines = []
    remember.remember(bw_run("night2", 2, {"node01": 396.0}), rundir, str(file), lines.append)
    assert lines == [] and pauses == [dbfile.RETRY_PAUSE_S]
    with db.reader(file) as conn:
        assert {r.run for r in db.rows(conn)} == {"night1", "night2"}


def test_a_full_disk_is_said_not_written_and_the_history_is_kept(tmp_path, capsys):
    with small_tmpfs(tmp_path / "small") as small:
        file = small / "h.db"
        history_command.history_import(str(file), saved_runs(tmp_path, (1,)), progress=lambda _: None)
        filler = fill(small)  # every block left taken
        assert cli.main(["history", "import", *saved_runs(tmp_path, (2,)), "--history", str(file)]) == 5
        err = capsys.readouterr().err
        assert f"{file}: history not written: " in err and "not a usable" not in err
        filler.unlink()
        with db.reader(file) as conn:
            assert {r.run for r in db.rows(conn)} == {"night1"}
        assert cli.main(["history", "import", *saved_runs(tmp_path, (2,)), "--history", str(file)]) == 0


@pytest.fixture
def hung(tmp_path, monkeypatch):
    """A history path on a "hung mount": os.stat of it blocks until the test ends (an Event, never a real hang);
    looks are bounded at 0.2 s. Yields the path and the number of stats that reached it."""
    file, release, calls, real = tmp_path / "nfs" / "history.db", threading.Event(), [], os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) == os.fspath(file):
            calls.append(path)
            release.wait(HANG_GUARD_S)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(dbfile, "LOOK_BOUND_S", 0.2)
    yield file, calls
    release.set()  # the stuck look returns; its thread ends
    for thread in list(dbfile._stuck.values()):
        thread.join(HANG_GUARD_S)
    dbfile._stuck.clear()


def test_a_hung_mount_under_the_history_costs_the_run_its_history_in_one_line(tmp_path, hung, capsys):
    """issue 36: the end of a burn-in no longer waits for ever on a history path whose stat never returns: one
    warning line naming the path and the bound, the run's results and exit status as for any unwritable history;
    a second look while the first is still stuck fails at once, leaving no second thread behind."""
    file, calls = hung
    rundir = RunStore(tmp_path / "runs").create("night3")
    run = bw_run("night3", 3, {"node01": 396.0})
    before, lines = list(run.results), []
    kind, said = returns(lambda: remember.remember(run, rundir, str(file), lines.append))
    assert kind == "ok" and said == lines[0] and len(lines) == 1 and run.results == before
    assert lines[0].startswith(f"provision: warning: history {file}: HistoryHung: {file}: history path hung: "
                               "no answer from the file system in 0.2 s (a hung network mount?)")
    assert f"`provision history import {rundir.path} --history {file}`" in lines[0]
    assert cli.main(["history", "--history", str(file)]) == 2  # a read: bad input's exit
    assert cli.main(["history", "import", *saved_runs(tmp_path, (1,)), "--history", str(file)]) == 5  # not written
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("still no answer from the earlier look" in line for line in err)
    assert len(calls) == 1  # one stuck thread, not one per look
    with pytest.raises(dbfile.HistoryHung, match="history path hung"):  # the job's check before any node
        remember.history_path(str(file))
