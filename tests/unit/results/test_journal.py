"""The journal (results.jsonl): a writer killed with SIGKILL keeps every result it recorded; fsync is
batched (every JOURNAL_SYNC_EVERY results or JOURNAL_SYNC_S seconds, and at the end), not per result;
a short write is continued, never left as a cut line."""
import os
import signal
import subprocess
import sys
import textwrap

from provision.results import store
from provision.results.model import CheckResult, Outcome, Run
from provision.results.store import RunDir, RunStore

WRITER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from provision.results.model import CheckResult, Outcome
    from provision.results.store import RunDir
    rundir, n = RunDir(Path(sys.argv[1])), int(sys.argv[2])
    for i in range(n):
        rundir.record(CheckResult("xid", (f"n{i}",), Outcome.PASS, "ok " * 50))
    os.kill(os.getpid(), signal.SIGKILL)  # killed at once: no sync_journal, no save, no exit handlers
""")


def test_a_writer_killed_with_sigkill_keeps_every_recorded_result(tmp_path):
    rundir = RunStore(tmp_path / "runs").create("killed")
    rundir.save(Run(run_id="killed"))
    proc = subprocess.run([sys.executable, "-c", WRITER, str(rundir.path), "150"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    kept = rundir.load().results
    assert [r.hosts for r in kept] == [(f"n{i}",) for i in range(150)]


def test_fsync_is_batched_and_done_at_the_end(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(store.os, "fsync", lambda fd: synced.append(fd))
    clock = [0.0]
    monkeypatch.setattr(store.time, "monotonic", lambda: clock[0])
    rundir = RunDir(tmp_path / "run")
    rundir.path.mkdir()
    for i in range(store.JOURNAL_SYNC_EVERY * 2 + 5):  # all within one second
        rundir.record(CheckResult("xid", (f"n{i}",), Outcome.PASS, "ok"))
    assert len(synced) == 2
    clock[0] += store.JOURNAL_SYNC_S
    rundir.record(CheckResult("xid", ("late",), Outcome.PASS, "ok"))
    assert len(synced) == 3  # a second since the last fsync
    rundir.record(CheckResult("xid", ("last",), Outcome.PASS, "ok"))
    rundir.sync_journal()
    assert len(synced) == 4
    rundir.sync_journal()
    assert len(synced) == 4  # nothing new to sync
    assert len(rundir.journal.read_text().splitlines()) == store.JOURNAL_SYNC_EVERY * 2 + 7


def test_a_short_write_is_continued_to_the_whole_line(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(store.os, "write", lambda fd, data: real(fd, bytes(data[:7])))  # 7 bytes at a time
    rundir = RunDir(tmp_path / "run")
    rundir.path.mkdir()
    rundir.record(CheckResult("xid", ("n1",), Outcome.PASS, "a message longer than seven bytes"))
    rundir.record(CheckResult("xid", ("n2",), Outcome.PASS, "ok"))
    lines = rundir.journal.read_text().splitlines()
    assert [line.count('"check": "xid"') for line in lines] == [1, 1]


def test_a_line_of_the_wrong_shape_is_named_with_its_number_and_a_torn_last_line_is_not(tmp_path):
    """issue 36: valid JSON that is no result nor run header (type-confused) is left out and named by file and
    line; the good lines around it still load; a last line cut by a kill stays tolerated without a word."""
    rundir = RunStore(tmp_path / "runs").create("mixed")
    rundir.save(Run(run_id="mixed"), latest=False)
    rundir.record(CheckResult("xid", ("n1",), Outcome.PASS, "ok"))
    good = store.dumps(CheckResult("xid", ("n2",), Outcome.PASS, "ok").to_dict(), indent=None)
    confused = good.replace('"hosts": ["n2"]', '"hosts": "n2"').replace('"outcome": "pass"', '"outcome": 3')
    with rundir.journal.open("a") as journal:
        journal.write(confused + "[1, 2]\n" + good + '{"run": "not a header"}\n' + good.replace("n2", "n3")[:40])
    said: list[str] = []
    assert [r.hosts for r in rundir.load(warn=said.append).results] == [("n1",), ("n2",)]
    assert len(said) == 3, said
    assert [line.split(": ", 1)[0] for line in said] == [f"{rundir.journal}:{n}" for n in (2, 3, 5)]
    assert all(line.endswith("; line left out") and "not a result nor a run header (" in line for line in said)
    assert "'n2' is not of type 'array'" in said[0] or "3 is not one of" in said[0]
    rebuilt: list[str] = []  # the commands pass one callable (provision.commands._common.rebuilt): it gets them
    rundir.load(rebuild=rebuilt.append)
    assert rebuilt == said
