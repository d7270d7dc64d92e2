"""The HTML report: one self-contained file (no script, no external load), untrusted text escaped,
failing hosts first with fault codes and actions, bandwidth plots against the reference, the
GPU x GPU heatmap from findings or raw output, the cluster section, trends when a history is
given; `provision report`; and the page as headless Chromium draws it."""
import re
import shutil
import stat
import subprocess

import pytest

from provision import cli, paths
from provision.commands import report as report_command
from provision.errors import ProvisionError
from provision.history import db
from provision.report import html, svg
from provision.results.store import RunDir, RunStore
from tests.unit.report.burnin_run import EVIL, failing_run

TREND = {"n1": [("r0", "nccl_allreduce 8 GPUs busbw_GBps", 470.0), ("r1", "nccl_allreduce 8 GPUs busbw_GBps", 474.5),
                ("r2", "nccl_allreduce 8 GPUs busbw_GBps", 468.0)]}


@pytest.fixture
def rundir(tmp_path):
    folder = RunDir(tmp_path / "r-html")
    folder.path.mkdir()
    return folder


def _section(page: str, name: str) -> str:
    return page.split(f'<section id="{name}">', 1)[1].split("\n</section>", 1)[0]


def test_the_page_is_self_contained_and_escapes_untrusted_text(rundir):
    page = html.render(failing_run(rundir), rundir)
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    assert not re.search(r"\bsrc\s*=", page, re.I)  # no image, frame or script source at all
    outside = page.replace(_section(page, "sources"), "")
    assert not re.search(r"https?://", outside)  # web addresses only as the sources' plain links
    assert "default-src 'none'" in page  # the browser refuses any load the escaping missed
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt; &amp; &#34;quoted&#34;" in page
    assert EVIL not in page


def test_failing_hosts_come_first_with_fault_and_action(rundir):
    page = html.render(failing_run(rundir), rundir)
    failing = _section(page, "failing")
    assert page.index('id="failing"') < page.index('id="plots"') < page.index('id="hosts"')
    rows = re.findall(r'<tr class="failure"><td>([^<]*)</td><td>([^<]*)</td>', failing)
    assert rows == [("n2", "ib_write_bw"), ("n2", "nvbandwidth"), ("n2", "nccl_allreduce"), ("n2", "localize"),
                    ("n3", "nccl_allreduce"), ("n3", "nvbandwidth")]
    assert "mlx5_1: bw_avg_Gbps = 271.1 Gb/s, reference 400 Gb/s" in failing
    assert '<span class="code">HCA_SLOW</span>: Check the HCA' in failing
    assert failing.count('<span class="code">D2D_SLOW</span>') == 1  # one row per code, not per cell
    assert "[HCA_SLOW:" not in failing and "[D2D_SLOW:" not in failing  # the action is in its column, once
    hosts = re.findall(r'<section class="host host-(\w+)" id="host-\d+">\n<h3>(\w+)', page)
    assert hosts == [("error", "n3"), ("fail", "n2"), ("pass", "n1")]


def test_plots_draw_every_node_against_reference_and_lower_bound(rundir):
    plots = html.plots(failing_run(rundir))
    assert [(p["title"], p["unit"]) for p in plots] == [
        ("NCCL all-reduce bus bandwidth in each node", "GB/s"),
        ("InfiniBand write bandwidth per HCA (loopback)", "Gb/s"),
        ("InfiniBand write bandwidth between nodes (IB pairs)", "Gb/s")]
    assert [(p["reference"], p["lower"]) for p in plots] == [(480.0, pytest.approx(460.8)), (400.0, 380.0),
                                                             (400.0, 380.0)]
    ib, pairs = str(plots[1]["svg"]), str(plots[2]["svg"])
    assert ib.count("<circle") == 4 and pairs.count("<circle") == 1  # n1: 2 HCAs, n2: 2 HCAs; the n1+n3 pair: 1 rail
    assert ib.count(f'fill="{svg.FAIL}"') == 1 and "n2 mlx5_1: 271.1 Gb/s" in ib
    assert "reference 400 Gb/s" in ib and "lower bound 380 Gb/s" in ib


def test_heatmap_from_findings_outlines_the_slow_pair_and_falls_back_to_raw_output(rundir):
    run = failing_run(rundir)
    n2 = next(r for r in run.results if r.check == "nvbandwidth" and r.hosts == ("n2",))
    map2 = str(html._heatmap(n2, rundir))
    assert map2.count('stroke-width="3"') == 2  # GPU2->GPU5 and GPU5->GPU2
    assert "GPU2 -&gt; GPU5: 223.31 GB/s" in map2 and map2.count("<rect") == 64
    n3 = next(r for r in run.results if r.check == "nvbandwidth" and r.hosts == ("n3",))
    assert not n3.findings
    map3 = str(html._heatmap(n3, rundir))
    assert map3.count("<rect") == 64 and 'stroke-width="3"' not in map3
    assert html._heatmap(n3, None) is None  # no run folder, no raw output to read


def test_a_heatmap_reads_the_direction_of_a_caption():
    text = ("Running device_to_device_memcpy_read_ce.\nmemcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
            "          0         1\n0       N/A    100.00\n1    200.00       N/A\n")
    from provision.results.model import CheckResult, Outcome, RawOutput

    class Dir:
        def read(self, rel, origin):
            return text

    result = CheckResult("nvbandwidth", ("n1",), Outcome.ERROR, "x", raw=[RawOutput("", "n1", "raw/n1/x.txt")])
    cells = html._raw_matrix(result, Dir())
    assert cells[(1, 0)] == 100.0 and cells[(0, 1)] == 200.0  # row 0 <- column 1: GPU1 copies to GPU0


def test_cluster_section_and_trends_appear_only_when_there_is_data(rundir):
    run = failing_run(rundir)
    page = html.render(run, rundir, TREND)
    cluster = _section(page, "cluster")
    assert '<tr class="suspect"><td>hca</td><td>n2</td><td>mlx5_1 rail 1</td><td>0.9</td>' in cluster
    assert "round 1 pair n1+n2 rail 1 -30%" in cluster
    assert "nccl_allreduce 8 GPUs busbw_GBps over 3 runs" in page and page.count("<polyline") == 1
    run.cluster = None
    plain = html.render(run, rundir)
    assert 'id="cluster"' not in plain and "<polyline" not in plain


def test_report_command_writes_the_file_and_names_bad_input(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    folder = RunStore(paths.RUNS).create("r-cli")
    folder.save(failing_run(folder))
    assert cli.main(["report", "latest"]) == 0
    written = folder.path / "report.html"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600 and "n2" in written.read_text()
    out = tmp_path / "elsewhere.html"
    assert cli.main(["report", str(folder.path), "--out", str(out), "--prometheus"]) == 0
    assert out.is_file() and stat.S_IMODE((folder.path / "burnin.prom").stat().st_mode) == 0o600
    collector = tmp_path / "textfile" / "burnin.prom"
    collector.parent.mkdir()
    assert cli.main(["report", "r-cli", "--prometheus-out", str(collector)]) == 0
    assert stat.S_IMODE(collector.stat().st_mode) == 0o644  # node_exporter reads it as its own user
    with pytest.raises(ProvisionError, match="no such history database"):
        report_command.report("r-cli", history=str(tmp_path / "missing.db"), progress=lambda *_: None)
    with pytest.raises(ProvisionError, match="not a readable run report"):
        report_command.report("no-such-run", progress=lambda *_: None)
    assert cli.main(["report", "r-cli", "--out", str(tmp_path / "no" / "such" / "dir.html")]) == 2


def test_history_database_plugs_in_as_the_trend(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    store = RunStore(paths.RUNS)
    for name, day in (("r-old", "2026-11-30"), ("r-new", "2026-12-01")):
        folder = store.create(name)
        run = failing_run()
        run.run_id, run.started = folder.name, f"{day}T10:00:00+00:00"
        folder.save(run)
        with db.connect(tmp_path / "history.db") as conn:
            db.insert(conn, run, {})
    assert report_command.report("r-new", history=str(tmp_path / "history.db"), progress=lambda *_: None) == 0
    page = (store.root / "r-new" / "report.html").read_text()
    assert "busbw_GBps over 2 runs" in page
    assert report_command.report("r-old", history=str(tmp_path / "history.db"), progress=lambda *_: None) == 0
    old = (store.root / "r-old" / "report.html").read_text()
    assert "busbw_GBps over 1 runs" in old and "r-new" not in old  # the newer run is not in the older report


CHROMIUM = shutil.which("chromium")  # Debian's package (TEST_APT_PACKAGES)


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    argv = [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


def test_chromium_draws_the_failing_host_and_its_message(rundir, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs it: TEST_APT_PACKAGES)")
    page = html.write(rundir.path / "report.html", failing_run(rundir), rundir)
    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a blank 1280x2000 page is ~10 kB
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    failing = _section(dom, "failing")
    assert "<td>n2</td><td>ib_write_bw</td>" in failing
    assert "mlx5_1: bw_avg_Gbps = 271.1 Gb/s" in failing and "tool said &lt;script&gt;alert" in failing
    assert "<script" not in dom  # the message stayed text: the browser built no script element


def test_a_failed_install_is_a_failing_row():
    from provision.results.model import FailedTask, HostInstall, RoleResult

    run = failing_run()
    run.install["n4"] = HostInstall("failed", 1, {"nvidia_driver": RoleResult(3, 1, [
        FailedTask("Install the driver packages", "no package <nvidia-driver>")])})
    failing = _section(html.render(run), "failing")
    assert ('<tr class="failure"><td>n4</td><td>install.nvidia_driver</td><td><span class="badge failed">failed'
            in failing)
    assert "Install the driver packages: no package &lt;nvidia-driver&gt;" in failing


def test_a_large_run_puts_each_host_on_a_page_of_its_own(rundir, monkeypatch):
    monkeypatch.setattr(html, "INLINE_HOSTS", 1)  # the failing run (3 hosts, 2 after one leaves) is a large run
    run = failing_run(rundir)
    first = html.write(rundir.path / "report.html", run, rundir, TREND)
    page = first.read_text()
    assert '<section class="host' not in page and "<polyline" not in page  # the hosts' detail is elsewhere
    assert _section(page, "failing") == _section(html.render(run, rundir), "failing")  # the same failures
    links = re.findall(r'<a href="(report/hosts/\w+\.html)"><span class="badge (\w+)">', page)
    assert links == [("report/hosts/n3.html", "error"), ("report/hosts/n2.html", "fail"),
                     ("report/hosts/n1.html", "pass")]
    n2 = (rundir.path / "report" / "hosts" / "n2.html").read_text()
    assert stat.S_IMODE((rundir.path / "report" / "hosts" / "n2.html").stat().st_mode) == 0o600
    assert '<a href="../../report.html">' in n2 and "GPU2 -&gt; GPU5: 223.31 GB/s" in n2
    assert "<script" not in n2.lower() and "default-src 'none'" in n2 and not re.search(r"\bsrc\s*=", n2, re.I)
    assert "nccl_allreduce 8 GPUs busbw_GBps over 3 runs" in (rundir.path / "report/hosts/n1.html").read_text()
    run.hosts.pop("n1")
    run.results = [r for r in run.results if "n1" not in r.hosts]
    html.write(first, run, rundir)
    assert sorted(p.name for p in (rundir.path / "report" / "hosts").iterdir()) == ["n2.html", "n3.html"]
