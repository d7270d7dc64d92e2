"""`provision report --out` and `--prometheus-out` (issue 21, cause 8): a symlink is written through or
refused, never replaced by a regular file; a folder gets the output's own name inside it and no temp file
anywhere; a FIFO or a device is refused without being opened; standard output is written, never replaced."""
import os
import stat

import pytest

from provision import cli, paths
from provision.commands import report as report_command
from provision.errors import ProvisionError
from provision.report import destination
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Run
from provision.results.store import RunStore

QUIET = {"progress": lambda line: None}


@pytest.fixture
def run_id(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    folder = RunStore(paths.RUNS).create("r")
    folder.write("raw/n1/xid.txt", "no Xid\n")
    folder.save(Run(run_id="r", inventory="inv", phases=["burnin"], started="2026-12-01T01:00:00",
                    hosts={"n1": HostRecord("h100-sxm5-80g-ndr")},
                    results=[CheckResult("xid", ("n1",), Outcome.PASS, "ok",
                                         raw=[RawOutput("", "n1", "raw/n1/xid.txt")])]))
    return "r"


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_symlink_is_written_through_and_stays_a_symlink(run_id, tmp_path):
    html, prom = tmp_path / "site" / "report.html", tmp_path / "site" / "burnin.prom"
    html.parent.mkdir()
    html.write_text("old\n")
    os.symlink(html, tmp_path / "out.html")
    os.symlink("site/burnin.prom", tmp_path / "out.prom")  # relative, to a file not there yet: its folder is
    prom.write_text("old\n")
    assert report_command.report(run_id, out=str(tmp_path / "out.html"), prometheus_out=str(tmp_path / "out.prom"),
                                 **QUIET) == 0
    assert (tmp_path / "out.html").is_symlink() and os.readlink(tmp_path / "out.html") == str(html)
    assert (tmp_path / "out.prom").is_symlink() and os.readlink(tmp_path / "out.prom") == "site/burnin.prom"
    assert "<html" in html.read_text() and "provision_burnin_run_info" in prom.read_text()
    assert names(tmp_path) == ["out.html", "out.prom", "runs", "site"] and names(html.parent) == ["burnin.prom",
                                                                                                   "report.html"]


def test_a_dangling_symlink_is_refused_and_nothing_is_made(run_id, tmp_path):
    os.symlink(tmp_path / "nowhere" / "x.html", tmp_path / "out.html")
    with pytest.raises(ProvisionError, match=r"--out .*out.html: a symlink to .*nowhere/x.html, which does not exist"):
        report_command.report(run_id, out=str(tmp_path / "out.html"), **QUIET)
    assert (tmp_path / "out.html").is_symlink() and names(tmp_path) == ["out.html", "runs"]


def test_a_folder_gets_the_outputs_own_name_inside_and_no_temp_file(run_id, tmp_path):
    out, collector = tmp_path / "out", tmp_path / "textfile"
    out.mkdir()
    collector.mkdir()
    assert report_command.report(run_id, out=str(out), prometheus_out=str(collector), **QUIET) == 0
    assert names(out) == ["report.html"] and names(collector) == ["burnin.prom"]
    assert names(tmp_path) == ["out", "runs", "textfile"]  # no .out.<pid>.tmp beside it
    assert stat.S_IMODE((collector / "burnin.prom").stat().st_mode) == 0o644  # node_exporter reads it


def test_a_folder_in_the_folder_where_the_file_goes_is_refused(run_id, tmp_path):
    (tmp_path / "out" / "report.html").mkdir(parents=True)
    with pytest.raises(ProvisionError, match="report.html in that folder is not a file"):
        report_command.report(run_id, out=str(tmp_path / "out"), **QUIET)


def test_a_fifo_is_refused_without_being_opened(run_id, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for writing would wait for a reader: the check never opens it
    os.symlink(fifo, tmp_path / "to-fifo")
    for given, said in ((fifo, f"--out {fifo}: a FIFO: refused"), (tmp_path / "to-fifo", f"{fifo} is a FIFO: refused")):
        assert cli.main(["report", run_id, "--out", str(given)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and (tmp_path / "to-fifo").is_symlink()
    assert names(tmp_path) == ["fifo", "runs", "to-fifo"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (mknod)")
def test_a_device_is_refused_and_stays_a_device(run_id, tmp_path):
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # as /dev/null: renaming over it replaced the node
    with pytest.raises(ProvisionError, match="null: a character device: refused"):
        report_command.report(run_id, prometheus_out=str(null), **QUIET)
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_standard_output_is_written_never_replaced(run_id, tmp_path, capfd):
    link = tmp_path / "stdout"
    os.symlink("/proc/self/fd/1", link)  # what /dev/stdout is, in a folder of the test's own
    for given in ("-", str(link), "/dev/stdout", "/dev/fd/1"):
        assert report_command.report(run_id, out=given, progress=print) == 0
        out = capfd.readouterr().out
        assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
        assert "report:" not in out  # no progress line mixed into the page
    assert os.readlink(link) == "/proc/self/fd/1" and os.readlink("/dev/stdout") == "/proc/self/fd/1"
    assert report_command.report(run_id, prometheus_out="/dev/stderr", **QUIET) == 0
    assert "provision_burnin_run_info" in capfd.readouterr().err
    with pytest.raises(ProvisionError, match="--out and --prometheus-out both name standard output"):
        report_command.report(run_id, out="-", prometheus_out="/dev/stdout", **QUIET)


@pytest.mark.skipif(os.geteuid() != 0, reason="a link owned by another user needs root (lchown)")
def test_a_link_someone_else_left_in_a_shared_sticky_folder_is_not_followed(run_id, tmp_path):
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    victim = tmp_path / "victim.conf"
    victim.write_text("keep\n")
    os.symlink(victim, shared / "report.html")
    os.lchown(shared / "report.html", 65534, 65534)  # nobody's link, root's folder
    with pytest.raises(ProvisionError, match="a symlink another user .uid 65534. owns in the shared folder"):
        report_command.report(run_id, out=str(shared / "report.html"), **QUIET)
    assert victim.read_text() == "keep\n"


@pytest.mark.parametrize("given", ["", "  ", "a\0b"])
def test_an_empty_path_is_refused(given):
    with pytest.raises(ProvisionError, match="not a path"):
        destination.resolve(given, "report.html", "--out")


def test_cli_refuses_an_empty_prometheus_out(run_id, capsys):
    assert cli.main(["report", run_id, "--prometheus-out", ""]) == 2
    assert "--prometheus-out '': an empty value" in capsys.readouterr().err
