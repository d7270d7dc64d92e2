"""A full disk loses nothing (issue 21, causes 1 and 2): every write of the run store, the journal,
Prometheus and the reports is whole or raises, keeps the previous file and leaves no temp file; a cut
journal line never takes the next one with it; a run whose report.json is lost is rebuilt from
results.jsonl; the burn-in job writes its files before the history and names each one it could not
write (exit 5). The disk-full cases run on a small tmpfs the test mounts (as root); where it cannot
mount they are skipped, saying why."""
import errno
import json
import os
from pathlib import Path

import pytest

from provision import cli, paths
from provision import inventory as inv
from provision.commands import _job
from provision.commands import evaluate as evaluate_command
from provision.commands import history as history_command
from provision.commands import report as report_command
from provision.engine import burnin as burnin_engine
from provision.results.store import HTML
from provision.errors import ExitStatus, ProvisionError
from provision.report import prometheus
from provision.results import store
from provision.results.model import CheckResult, Outcome, Run
from provision.results.store import RunDir, atomic_write
from provision.runner import ansible
from tests.unit.mounts import fill, small_tmpfs
from tests.unit.engine.test_reevaluate import make_run
from tests.unit.report.burnin_run import failing_run

INVENTORIES = paths.ROOT / "tests" / "data" / "inventories"


@pytest.fixture
def tmpfs(tmp_path):
    """A 256 KiB tmpfs, unmounted afterwards."""
    with small_tmpfs(tmp_path / "mnt") as mount:
        yield mount


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def short_then_full(monkeypatch, short: int = 10) -> None:
    """os.write takes ``short`` bytes once, then fails with ENOSPC once (a disk filling), then works."""
    real, calls = os.write, []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:short]))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(store.os, "write", write)


def test_a_short_write_is_looped_to_the_whole_file(tmp_path, monkeypatch):
    real, calls = os.write, []
    monkeypatch.setattr(store.os, "write", lambda fd, data: calls.append(1) or real(fd, bytes(data[:3])))
    atomic_write(tmp_path / "f", "0123456789" * 10)
    assert (tmp_path / "f").read_text() == "0123456789" * 10
    assert len(calls) == 34
    monkeypatch.setattr(store.os, "write", lambda fd, data: 0)  # takes nothing: an error, never an endless loop
    with pytest.raises(OSError) as caught:
        atomic_write(tmp_path / "f", "new")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "0123456789" * 10 and temp_files(tmp_path) == []


def test_a_write_failing_part_way_keeps_the_previous_file(tmp_path, monkeypatch):
    atomic_write(tmp_path / "report.json", "previous")
    short_then_full(monkeypatch)
    with pytest.raises(OSError, match="No space left on device") as caught:
        atomic_write(tmp_path / "report.json", "a new report, longer than ten bytes")
    assert caught.value.filename == str(tmp_path / "report.json")
    assert (tmp_path / "report.json").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temp file


def test_a_cut_journal_line_loses_only_itself(tmp_path, monkeypatch):
    rundir = RunDir(tmp_path / "run")
    rundir.path.mkdir()
    rundir.record(CheckResult("xid", ("a",), Outcome.PASS, "ok"))
    short_then_full(monkeypatch)
    with pytest.raises(OSError) as caught:
        rundir.record(CheckResult("xid", ("cut",), Outcome.PASS, "ok"))
    assert caught.value.filename == str(rundir.journal)
    rundir.record(CheckResult("xid", ("b",), Outcome.PASS, "ok"))
    lines = rundir.journal.read_text().splitlines()
    assert len(lines) == 3 and lines[1] == '{"check": ' and lines[2].startswith('{"check": "xid"')
    rundir.save(Run(run_id="run"), latest=False)
    assert [r.hosts for r in rundir.load().results] == [("a",), ("b",)]


def test_a_result_glued_to_a_cut_line_by_an_older_journal_is_kept(tmp_path):
    rundir = RunDir(tmp_path / "run")
    rundir.path.mkdir()
    rundir.save(Run(run_id="run"), latest=False)
    whole = store.dumps(CheckResult("xid", ("b",), Outcome.PASS, "ok").to_dict(), indent=None)
    rundir.journal.write_text(store.dumps(CheckResult("xid", ("a",), Outcome.PASS, "ok").to_dict(), indent=None)
                              + '{"check": "xid", "hos' + whole)
    assert [r.hosts for r in rundir.load().results] == [("a",), ("b",)]


def test_the_journal_on_a_full_tmpfs_keeps_every_finished_result(tmpfs):
    rundir = RunDir(tmpfs / "run")
    rundir.path.mkdir()
    rundir.save(Run(run_id="run"), latest=False)
    fill(tmpfs, 4096)
    recorded = []
    with pytest.raises(OSError, match="No space left on device"):
        for i in range(100):
            rundir.record(CheckResult("xid", (f"h{i}",), Outcome.PASS, "m" * 700))
            recorded.append((f"h{i}",))
    assert 0 < len(recorded) < 100
    (tmpfs / "filler").unlink()
    rundir.record(CheckResult("xid", ("after",), Outcome.PASS, "ok"))
    assert [r.hosts for r in rundir.load().results] == [*recorded, ("after",)]


def big_run(root: Path) -> RunDir:
    """make_run's run with 40 more results: a report.json of about 23 KB."""
    rundir = RunDir(make_run(root))
    run = rundir.load()
    run.results += [CheckResult("xid", ("n1",), Outcome.ERROR, f"timed out {i} " + "y" * 300, run_error=True)
                    for i in range(40)]
    rundir.save(run, latest=False)
    return rundir


def test_evaluate_without_room_keeps_report_json_and_says_so(tmpfs, capsys):
    rundir = big_run(tmpfs)
    before = rundir.report.read_bytes()
    assert len(before) > 16384
    fill(tmpfs, 8192)
    assert cli.main(["evaluate", str(rundir.path)]) == ExitStatus.NOT_WRITTEN
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"provision: error: {rundir.report}: not written: No space left on device "
                   "(any file it would replace is kept)"]
    assert rundir.report.read_bytes() == before
    assert temp_files(tmpfs) == []


def test_report_without_room_keeps_the_previous_html(tmpfs, capsys):
    rundir = big_run(tmpfs)
    assert cli.main(["report", str(rundir.path)]) == ExitStatus.OK
    html = (rundir.path / HTML).read_bytes()
    fill(tmpfs, 0)
    assert cli.main(["report", str(rundir.path)]) == ExitStatus.NOT_WRITTEN
    assert "No space left on device" in capsys.readouterr().err
    assert (rundir.path / HTML).read_bytes() == html
    assert temp_files(tmpfs) == []


def test_prometheus_write_on_a_full_tmpfs(tmpfs):
    target = tmpfs / "burnin.prom"
    prometheus.write(target, failing_run())
    before = target.read_bytes()
    run = failing_run()
    run.results *= 40  # more text than the room left
    assert len(prometheus.text(run)) > 8192
    fill(tmpfs, 4096)
    with pytest.raises(OSError, match="No space left on device") as caught:
        prometheus.write(target, run)
    assert caught.value.filename == str(target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmpfs.iterdir()) == ["burnin.prom", "filler"]


def test_prometheus_write_loops_a_short_write(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(store.os, "write", lambda fd, data: real(fd, bytes(data[:100])))
    prometheus.write(tmp_path / "burnin.prom", failing_run())
    assert (tmp_path / "burnin.prom").read_text() == prometheus.text(failing_run())


def journaled_run(root: Path) -> RunDir:
    """make_run's run with its header and results journaled, as the burn-in journals them."""
    rundir = RunDir(make_run(root))
    run = rundir.load()
    run.started = "2026-12-01T10:00:00+00:00"
    rundir.begin(run)
    for result in run.results:
        rundir.record(result)
    rundir.save(run, latest=False)
    return rundir


@pytest.mark.parametrize("damage", ["cut", "missing"])
def test_a_lost_report_is_rebuilt_from_the_journal(tmp_path, capsys, damage):
    rundir = journaled_run(tmp_path)
    saved = json.loads(rundir.report.read_text())
    if damage == "cut":
        rundir.report.write_bytes(rundir.report.read_bytes()[:1000])
    else:
        rundir.report.unlink()
    assert report_command.report(str(rundir.path), progress=lambda _: None) == ExitStatus.OK
    history = str(tmp_path / "history.db")
    assert history_command.history_import(history, [str(rundir.path)], progress=lambda _: None) == 0
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 2 and all(line.startswith(f"provision: warning: {rundir.report}: ") for line in said)
    assert said[0].endswith("; rebuilt from results.jsonl (3 results)")
    assert evaluate_command.evaluate(str(rundir.path), progress=lambda _: None) == ExitStatus.NODE_FAILED  # xid errored
    again = json.loads(rundir.report.read_text())  # evaluate wrote it back
    assert again["results"] == saved["results"] and again["hosts"] == saved["hosts"]
    assert again["started"] == saved["started"]


def test_a_run_without_report_or_journal_is_still_refused(tmp_path):
    rundir = RunDir(tmp_path / "run")
    rundir.path.mkdir()
    with pytest.raises(ProvisionError, match="not a readable run report"):
        report_command.report(str(rundir.path), progress=lambda _: None)


def test_the_job_on_a_full_runs_folder_names_each_file_and_exits_5(tmpfs, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RUNS", tmpfs / "runs")
    monkeypatch.setattr(ansible, "run_playbook", lambda *a, **k: pytest.fail("no install in a burn-in"))
    events = []

    def engine(chosen, request, transport, sink, oob=None):
        results = [CheckResult("xid", (t.name,), Outcome.PASS, "ok") for t in chosen]
        for result in results:
            sink.journal(result)  # journaled, and report.json saved once
        fill(tmpfs, 0)
        return burnin_engine.BurninOutcome(results)

    monkeypatch.setattr(burnin_engine, "run", engine)
    import provision.history.db as db
    connect = db.connect
    monkeypatch.setattr(db, "connect", lambda *a, **k: events.append("history opened") or connect(*a, **k))
    vault = inv.Vault(password_files=(str(INVENTORIES / "homelab-vault-password.txt"),))
    rc = _job.run(_job.JobOptions(("burnin",), inventory=(str(INVENTORIES / "homelab"),), run_id="rj",
                                  history=str(tmp_path / "h.db"), vault=vault), progress=events.append)
    assert rc == ExitStatus.NOT_WRITTEN
    run = tmpfs / "runs" / "rj"
    unwritten = [e for e in events if e.startswith("provision: error:")]
    assert [line.split(": ")[2] for line in unwritten] == [
        str(run / "report.json"), str(run / "junit" / "gpubox.xml"), str(run / "burnin.prom")]
    assert all(line.endswith("not written: No space left on device (any file it would replace is kept)")
               for line in unwritten)
    assert events.index(unwritten[-1]) < events.index("history opened")  # the files before the history
    assert (run / "drain.txt").read_text() == ""  # no failing host: an empty file fits
    assert json.loads((run / "report.json").read_text())["run_id"] == "rj"  # the save during the burn-in
    assert temp_files(run) == []
    (tmpfs / "filler").unlink()
    (run / "report.json").unlink()
    rebuilt = RunDir(run).load(rebuild=events.append)
    assert rebuilt.hosts["gpubox"].profile and [r.hosts for r in rebuilt.results] == [("gpubox",)]
    assert events[-1].endswith("rebuilt from results.jsonl (1 results)")
