"""`provision merge` and the shards' raw paths (issue 21, causes 3, 14, 18): every path is checked before
anything is made; a path that leaves a shard's raw/ refuses the merge and leaves nothing; a file that cannot
be copied safely (a symlink out of its run, a FIFO) is one warning line and left out; the merged folder is
whole or gone; merged raw files are 0600 in 0700 folders, as the shards' own."""
import errno
import json
import os
import stat

import pytest

from provision import cli, paths
from provision.commands import merge as merge_command
from provision.report import junit
from provision.errors import OutputError, ProvisionError
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Run
from tests.unit.mounts import small_tmpfs


@pytest.fixture
def runs(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    return tmp_path / "runs"


def shard(runs, name, host, raws, journal=()):
    """A shard's run folder: report.json naming ``raws`` (each written 0600 when it is a plain raw/ path)."""
    folder = runs / name
    folder.mkdir(parents=True, mode=0o700)
    result = CheckResult("xid", (host,), Outcome.PASS, "ok",
                         raw=[RawOutput(str(i), host, p) for i, p in enumerate(raws)])
    run = Run(run_id=name, inventory="inv", phases=["burnin"], started="2026-12-01T01:00:00",
              finished="2026-12-01T02:00:00", hosts={host: HostRecord("h100-sxm5-80g-ndr")}, results=[result])
    (folder / "report.json").write_text(json.dumps(run.to_dict()))
    for path in raws:
        if ".." not in path.split("/"):
            (folder / path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            (folder / path).write_text(f"{name} {path}\n")
            (folder / path).chmod(0o600)
    if journal:
        (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in journal))
    return folder


def everything(runs):
    return sorted((str(p.relative_to(runs)), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                  for p in runs.rglob("*"))


@pytest.mark.parametrize("bad", ["raw/../../outside.txt", "raw/../report.json", "raw/../results.jsonl",
                                 "raw/n2/../../junit/all.xml", "raw//n2.txt", "raw/./n2.txt", "raw/n2/.."])
def test_a_raw_path_leaving_raw_refuses_the_merge_and_makes_nothing(runs, bad):
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    shard(runs, "b", "n2", ["raw/n2/xid.txt", bad])
    (runs / "outside.txt").write_text("the operator's file\n")
    before = everything(runs)
    with pytest.raises(ProvisionError, match=f"merge: .*/b: raw output path '{bad}' is not a file under the run's "
                                             "raw/.*refused, nothing merged"):
        merge_command.merge(["a", "b"], "m", progress=lambda line: None)
    assert everything(runs) == before  # no merged folder, no latest, nothing copied, nothing overwritten


def test_a_path_the_journal_alone_names_is_checked_too(runs):
    """A journal line naming an absolute raw path never gets it copied: the line breaks the result
    schema (read back checked) and is left out, so the merged run holds neither it nor the file."""
    crafted = CheckResult("stack", ("n2",), Outcome.PASS, "ok", raw=[RawOutput("", "n2", "/etc/passwd")])
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    shard(runs, "b", "n2", ["raw/n2/xid.txt"], journal=[crafted])
    try:
        merge_command.merge(["a", "b"], "m", progress=lambda line: None)
    except ProvisionError as exc:
        assert "/etc/passwd" in str(exc)
        assert sorted(p.name for p in runs.iterdir()) == ["a", "b"]
        return
    merged = runs / "m"
    assert not any("passwd" in p.name for p in merged.rglob("*"))
    assert "/etc/passwd" not in (merged / "report.json").read_text()


def test_a_symlink_out_of_its_run_and_a_fifo_are_left_out_with_one_warning_each(runs, tmp_path):
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    b = shard(runs, "b", "n2", ["raw/n2/xid.txt", "raw/n2/out.txt", "raw/n2/in.txt", "raw/n2/fifo.txt"])
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET\n")
    for name, target in (("out.txt", secret), ("in.txt", b / "raw/n2/xid.txt")):
        (b / "raw/n2" / name).unlink()
        os.symlink(target, b / "raw/n2" / name)
    (b / "raw/n2/fifo.txt").unlink()
    os.mkfifo(b / "raw/n2/fifo.txt")  # opened non-blocking and refused by fstat: never waited on
    said = []
    assert merge_command.merge(["a", "b"], "m", progress=said.append) == 0
    warnings = sorted(line for line in said if "warning" in line)  # in path order: fifo.txt, out.txt
    assert len(warnings) == 2, said
    assert warnings[0].endswith("b/report.json: raw/n2/fifo.txt: not a regular file: not copied")
    assert f"raw/n2/out.txt: a symlink out of its run folder (to {secret}): not copied" in warnings[1]
    merged = runs / "m"
    assert not (merged / "raw/n2/out.txt").exists() and not (merged / "raw/n2/fifo.txt").exists()
    assert b"SECRET" not in b"".join(p.read_bytes() for p in merged.rglob("*") if p.is_file())
    inside = merged / "raw/n2/in.txt"  # a link inside its own run is copied as the file it names
    assert not inside.is_symlink() and inside.read_text() == "b raw/n2/xid.txt\n"
    assert os.readlink(runs / "latest") == "m"


def test_merged_raw_files_are_0600_in_0700_folders(runs):
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    shard(runs, "b", "n2", ["raw/n2/xid.txt", "raw/fabric/x.txt"])
    old = os.umask(0)  # the modes below are the store's, whatever the umask lets through
    try:
        assert merge_command.merge(["a", "b"], "m", progress=lambda line: None) == 0
    finally:
        os.umask(old)
    merged = runs / "m"
    files = [p for p in (merged / "raw").rglob("*") if p.is_file()]
    folders = [p for p in (merged / "raw").rglob("*") if p.is_dir()] + [merged / "raw"]
    assert len(files) == 3 and {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    assert (merged / "raw/n1/xid.txt").read_text() == "a raw/n1/xid.txt\n"


def test_a_failure_on_the_way_leaves_no_half_merged_folder(runs, monkeypatch):
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    shard(runs, "b", "n2", ["raw/n2/xid.txt"])

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(runs / "m" / "junit"))

    monkeypatch.setattr(junit, "write", full)
    with pytest.raises(OutputError, match=f"merge: cannot write {runs}/m/junit: No space left on device; nothing "
                                          f"merged .{runs}/m removed."):
        merge_command.merge(["a", "b"], "m", progress=lambda line: None)
    assert OutputError.exit_status == 5
    assert sorted(p.name for p in runs.iterdir()) == ["a", "b"]  # no m/, no latest


def test_a_disk_filling_up_on_the_way_leaves_no_half_merged_folder(tmp_path, monkeypatch):
    """A real full disk: the runs folder on a 256 KiB tmpfs this test mounts, shards of 100 KB raw files."""
    with small_tmpfs(tmp_path / "runs") as runs:
        monkeypatch.setattr(paths, "RUNS", runs)
        shards = [shard(tmp_path, name, host, [f"raw/{host}/xid.txt"]) for name, host in (("a", "n1"), ("b", "n2"),
                                                                                           ("c", "n3"))]
        for folder, host in zip(shards, ("n1", "n2", "n3")):
            (folder / f"raw/{host}/xid.txt").write_bytes(b"x" * 100_000)
        with pytest.raises(OutputError, match=f"merge: cannot write {runs}/m/raw/n3/xid.txt: No space left on device; "
                                              f"nothing merged .{runs}/m removed."):
            merge_command.merge([str(f) for f in shards], "m", progress=lambda line: None)
        assert list(runs.iterdir()) == []


def test_merge_of_an_empty_name_is_refused_never_the_current_folder(runs, tmp_path, monkeypatch, capsys):
    here = shard(tmp_path, "here", "n9", ["raw/n9/xid.txt"])  # a shard's run in the current folder
    monkeypatch.chdir(here)
    shard(runs, "a", "n1", ["raw/n1/xid.txt"])
    assert cli.main(["merge", "a", "", "--run-id", "m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["provision: error: RUN_DIR '': an empty value (give one, or leave the argument out)"]
    assert sorted(p.name for p in runs.iterdir()) == ["a"]
