"""The runs folder and ``runs/latest`` (issue 21, causes 16, 17, 18): a ``latest`` that is a file, a folder
or a link elsewhere is said in one line and left as it is; a read-only runs folder is one line and exit 5,
never an internal error; an empty run or inventory name is refused, never the current folder; a run with no
host says so instead of "Every host passed."."""
import os

import pytest

from provision import cli, paths
from provision.commands import evaluate as evaluate_command
from provision.commands import report as report_command
from provision.errors import ExitStatus, OutputError, ProvisionError
from provision.report import html, summary
from provision.results.model import HostRecord, Run
from provision.results.store import LATEST, RunStore
from tests.unit.mounts import read_only


def a_run(name):
    return Run(run_id=name, inventory="inv", phases=["burnin"], started="2026-12-01T01:00:00",
               hosts={"n1": HostRecord("h100-sxm5-80g-ndr")})


def made(store, name, said):
    rundir = store.create(name, warn=said.append)
    rundir.save(a_run(rundir.name))
    return rundir


@pytest.mark.parametrize("kind", ["file", "folder", "link elsewhere"])
def test_a_latest_that_is_not_ours_is_said_once_and_left_alone(tmp_path, kind):
    store = RunStore(tmp_path / "runs")
    store.root.mkdir()
    latest = store.root / LATEST
    if kind == "file":
        latest.write_text("an operator's note\n")
    elif kind == "folder":
        latest.mkdir()
        (latest / "kept.txt").write_text("kept\n")
    else:
        os.symlink("/etc", latest)
    said: list[str] = []
    made(store, "r1", said)
    made(store, "r2", said)
    expected = {"file": "a file", "folder": "a folder", "link elsewhere": "a symlink to '/etc'"}[kind]
    assert said == [f"provision: warning: {latest} is {expected}, not the link provision writes: left as it is, so "
                    "it will not name this run (remove it and the next run makes it)"] * 2
    if kind == "file":
        assert latest.read_text() == "an operator's note\n"
    elif kind == "folder":
        assert [p.name for p in latest.iterdir()] == ["kept.txt"]
    else:
        assert os.readlink(latest) == "/etc"


def test_a_latest_we_wrote_moves_to_the_newest_run_without_a_word(tmp_path):
    store = RunStore(tmp_path / "runs")
    said: list[str] = []
    made(store, "r1", said)
    assert os.readlink(store.root / LATEST) == "r1"
    made(store, "r2", said)
    assert os.readlink(store.root / LATEST) == "r2" and said == []
    (store.root / "r2").rename(store.root / "gone")  # a dangling link of ours is ours too
    made(store, "r3", said)
    assert os.readlink(store.root / LATEST) == "r3" and said == []


def test_a_read_only_runs_folder_is_one_line_and_its_own_exit_status(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    made(RunStore(runs), "shard", [])
    monkeypatch.setattr(paths, "RUNS", runs)
    with read_only(runs):
        with pytest.raises(OutputError, match=f"runs folder {runs}: cannot make the run folder m in it: "
                                              "Read-only file system"):
            RunStore(runs).create("m")
        assert cli.main(["merge", "shard", "--run-id", "m"]) == ExitStatus.NOT_WRITTEN == 5
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("provision: error: runs folder") and "internal" not in err[0]
        assert cli.main(["report", "shard"]) == 5  # report.html in the run folder: the same state, the same status
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Read-only file system" in err[0] and "internal" not in err[0]
    assert sorted(p.name for p in runs.iterdir()) == ["latest", "shard"]


@pytest.mark.parametrize("argv", [["inventory", "-i", ""], ["burnin", "-i", "", "--run-id", "x"],
                                  ["inventory", "-i", "  "]])
def test_an_empty_inventory_is_refused_never_the_current_folder(tmp_path, monkeypatch, capsys, argv):
    """An unset variable (`-i "$INV"`) once read the inventory in the current folder."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    n1:\n      ansible_host: 127.0.0.1\n"
                                        "      provision_profile: h100-sxm5-80g-ndr\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"provision: error: -i {argv[2]!r}: not an inventory: name an inventory folder or file"]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", ["report", "evaluate"])
def test_an_empty_run_name_is_refused(tmp_path, monkeypatch, command):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProvisionError, match="'': not a run"):
        commands = {"report": report_command.report, "evaluate": evaluate_command.evaluate}
        commands[command]("", progress=lambda line: None)


def test_a_run_with_no_host_says_so(tmp_path):
    run = Run(run_id="empty", inventory="inv", phases=["burnin"], started="2026-12-01T01:00:00")
    page = html.render(run)
    assert "Every host passed." not in page and "No host in this run: nothing was judged." in page
    assert summary.render(run) == "no host in this run: nothing was judged"
    assert "Every host passed." in html.render(a_run("one"))  # a run with a host still says it
