"""Issue 21 cause 9: a measured figure beyond what the hardware can do is an error naming the value, the
bound and its source (the profile's figures); Prometheus never exports +Inf for a figure; the HTML
report's charts survive any finite or non-finite value and an infinite reference."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from provision import checks, profiles
from provision.checks import plausible
from provision.checks.base import Check
from provision.engine.verdict import verdict
from tests.unit.checks import hosts_of
from provision.report import prometheus, svg
from provision.results.model import CheckResult, Finding, HostRecord, Outcome, Reference, Run, Scope

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.for_host("h100-sxm5-80g-ndr", {}, "n1")
HEALTHY = (DATA / "ib_write_bw" / "sim_h100_healthy.txt").read_text()


def judge_ib(figure: str):
    check = checks.registry()["ib_write_bw"]
    return verdict(check, ("n1",), Scope.NODE, H100, {"mlx5_0": HEALTHY.replace("395.75", figure), "mlx5_1": HEALTHY},
                   hosts_of(check, ("n1",), H100))


@pytest.mark.parametrize("figure,shown", [("1.7e308", "1.7e+308"), ("9" * 60, "1e+60"),
                                          ("800.01", "800.01")])
def test_perftest_above_twice_the_hca_line_rate_is_an_error_naming_value_bound_and_source(figure, shown):
    result = judge_ib(figure)
    assert result.outcome is Outcome.ERROR, result.message
    assert f"mlx5_0: bw_avg_Gbps = {shown} Gb/s, above 800 Gb/s" in result.message
    assert "twice hca.rate_Gbps 400 Gb/s of profile h100-sxm5-80g-ndr" in result.message


def test_twice_the_line_rate_itself_is_judged_as_usual():
    assert judge_ib("800.00").outcome is Outcome.PASS
    assert judge_ib("395.75").outcome is Outcome.PASS


@pytest.mark.parametrize("figure", ["inf", "nan", "1e999"])
def test_a_non_finite_figure_is_an_error(figure):
    result = judge_ib(figure)
    assert result.outcome is Outcome.ERROR and not result.findings


def test_the_ceilings_come_from_the_profiles_figures():
    ref = Reference(1.0, None, None, "GB/s", "x", {})
    def bound(check, metric, profile=H100):
        return plausible.ceiling(checks.registry()[check], Finding("d", metric, 1.0, True, "GB/s", ref), profile)
    assert bound("nvbandwidth", "h2d_GBps")[0] == pytest.approx(32 * 16 * 128 / 130 / 8)  # Gen5 x16: 63.0 GB/s
    assert bound("nvbandwidth", "d2d_GBps")[0] == pytest.approx(18 * 26.562)  # NVLink4: 478.1 GB/s
    assert "gpu.nvlink of profile h100-sxm5-80g-ndr" in bound("nvbandwidth", "d2d_GBps")[1]
    assert bound("nccl_allreduce", "busbw_GBps")[0] == pytest.approx(2 * 18 * 26.562)
    rtx = profiles.for_host("rtx4090-pcie", {}, "n1")  # no NVLink: its PCIe Gen4 x16 link, 31.5 GB/s
    assert bound("nvbandwidth", "d2d_GBps", rtx)[0] == pytest.approx(31.5, abs=0.1)
    assert bound("nccl_allreduce", "busbw_GBps", rtx)[0] == 100.0  # no NVLink: a hundred references
    assert bound("storage", "write_bw_MiBps")[0] == 100.0  # no hardware figure: a hundred references


def test_every_healthy_capture_of_every_profile_stays_below_its_ceilings():
    """The simulated rack's healthy figures (provision/sim/figures.yaml, measured hardware) pass the bounds."""
    import yaml

    figures = yaml.safe_load((Path(plausible.__file__).parents[1] / "sim" / "figures.yaml").read_text())
    names = {"nccl_allreduce_busbw_GBps": ("nccl_allreduce", "busbw_GBps"),
             "nvbandwidth_d2d_GBps": ("nvbandwidth", "d2d_GBps"), "nvbandwidth_h2d_GBps": ("nvbandwidth", "h2d_GBps")}
    checked = 0
    for profile_name, rows in figures.items():
        if profile_name not in profiles.names() or not isinstance(rows, dict):
            continue
        profile = profiles.load(profile_name)
        for key, (check, metric) in names.items():
            if key in rows:
                finding = Finding("d", metric, rows[key], True, "GB/s", profile.reference(check, metric))
                found = plausible.ceiling(checks.registry()[check], finding, profile)
                assert found is not None and rows[key] <= found[0], (profile_name, key, found)
                checked += 1
    assert checked >= 9


def test_a_negative_bandwidth_is_an_error():
    f = Finding("mlx5_0", "bw_avg_Gbps", -5.0, False, "Gb/s")
    assert plausible.beyond(checks.registry()["ib_write_bw"], [f], H100) == [
        "mlx5_0: bw_avg_Gbps = -5 Gb/s, below 0 Gb/s: no Gb/s figure is negative"]


def run_with(value: float, reference: float = 400.0) -> Run:
    ref = Reference(reference, -0.05, None, "Gb/s", "test", {})
    finding = Finding("mlx5_0", "bw_avg_Gbps", value, True, "Gb/s", ref)
    return Run(run_id="r1", hosts={"n1": HostRecord("h100-sxm5-80g-ndr")},
               results=[CheckResult("ib_write_bw", ("n1",), Outcome.PASS, "ok", findings=[finding])])


@pytest.mark.parametrize("value", [1.7e308, math.inf, -math.inf, math.nan])
def test_prometheus_never_exports_an_infinite_figure(value):
    text = prometheus.text(run_with(value))
    assert "Inf" not in text and "NaN" not in text
    assert "ib_write_bandwidth_bytes_per_second" not in text  # 1.7e308 Gb/s in bytes/s overflows: left out


@pytest.mark.parametrize("value", [1.7e308, -1.7e308, math.inf, -math.inf, math.nan, 5e-324, 0.0])
@pytest.mark.parametrize("reference", [400.0, math.inf, math.nan, 1.7e308])
def test_the_charts_survive_any_value_and_reference(value, reference):
    column = svg.Column("n1", (svg.Dot("mlx5_0", value, True), svg.Dot("mlx5_1", 395.0, True)))
    assert svg.strip([column], "Gb/s", reference, reference * 0.95).startswith("<svg")
    assert svg.heatmap({(0, 1): value, (1, 0): 300.0}, "GB/s", reference, reference * 0.95).startswith("<svg")
    assert svg.trend([("r1", value), ("r2", 396.0), ("r3", -1.7e308)], "Gb/s").startswith("<svg")


def test_the_html_report_of_an_infinite_reference_and_an_impossible_value(tmp_path):
    from provision.report import html
    from provision.results.store import RunStore

    rundir = RunStore(tmp_path).create("r1")
    run = run_with(1.7e308, math.inf)
    html.write(tmp_path / "report.html", run, rundir, None)
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_a_count_far_beyond_its_limit_is_a_failure_not_an_implausible_figure():
    """Only rates get the hundred-references ceiling: a count or a temperature has no hardware peak."""
    count = Finding("GPU0", "sbe_count", 1500, False, "", Reference(10.0, None, 0.0, "", "limit"))
    temperature = Finding("GPU0", "temp_C", 9000, False, "C", Reference(85.0, None, 0.0, "C", "limit"))
    gpu_health = checks.registry()["gpu_health"]
    assert plausible.ceiling(gpu_health, count, None) is None
    assert plausible.ceiling(gpu_health, temperature, None) is None
    assert plausible.beyond(gpu_health, [count, temperature], None) == []


# Issue 35 item 3: what bounds a metric is its check's declaration (``Check.peaks``: metric -> a hardware peak the
# profile gives), never a check id or a metric name in plausible.py, so a site's check is bounded as ours are.
SITE_RDMA = '''
"""site_rdma_read: a site's RDMA read bandwidth per HCA (a test)."""
from provision.checks.base import Check, Finding, Step


def parse(text):
    return {"tool": "rdma-read", "Gbps": float(text.split()[-1])}


CHECK = Check(id="site_rdma_read", tool="rdma-read", order=52, needs=("hca",), parsers={"rdma-read": parse},
              steps=lambda profile, host: [Step("mlx5_0", ["rdma-read", "-d", "mlx5_0"], parser="rdma-read")],
              judge=lambda ctx: [Finding("mlx5_0", "read_bw_Gbps", ctx.parsed["mlx5_0"]["Gbps"], True, "Gb/s")],
              metrics={"read_bw_Gbps": "Gb/s"}, peaks={"read_bw_Gbps": "hca_port"})
'''


def test_a_site_checks_gbps_metric_on_an_hca_is_bounded_by_the_hca_port(tmp_path, monkeypatch):
    (tmp_path / "site_rdma_read.py").write_text(SITE_RDMA)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    check = checks.registry()["site_rdma_read"]

    def run(figure: str):
        return verdict(check, ("n1",), Scope.NODE, H100, {"mlx5_0": f"read bandwidth {figure}"},
                       hosts_of(check, ("n1",), H100))
    assert run("800").outcome is Outcome.PASS
    result = run("800.5")
    assert result.outcome is Outcome.ERROR
    assert result.message == ("rdma-read output gave a value the hardware cannot reach: mlx5_0: read_bw_Gbps = 800.5 "
                              "Gb/s, above 800 Gb/s, the most the hardware can do (twice hca.rate_Gbps 400 Gb/s of "
                              "profile h100-sxm5-80g-ndr)")


def site_copy(peaks: dict[str, str]) -> Check:
    """A site's host-to-GPU copy check with the hardware peaks ``peaks`` (declared here, not in the package)."""
    return Check(id="site_pinned_copy", tool="copy", order=61, needs=("gpu",), steps=lambda profile, host: [],
                 judge=lambda ctx: [], metrics={"pinned_h2d_GBps": "GB/s"}, peaks=peaks)


def test_a_site_checks_h2d_like_metric_is_bounded_by_the_gpus_pcie_link_it_declares():
    ref = Reference(value=50.0, lower=-0.1, upper=None, unit="GB/s", source="test")
    copy = Finding(device="GPU0", metric="pinned_h2d_GBps", value=70.0, ok=True, unit="GB/s", reference=ref)
    assert plausible.beyond(site_copy({"pinned_h2d_GBps": "gpu_pcie"}), [copy], H100) == [
        "GPU0: pinned_h2d_GBps = 70 GB/s, above 63.0154 GB/s, the most the hardware can do (PCIe Gen5 x16 peak per "
        "direction 63.0 GB/s (gpu.pcie of profile h100-sxm5-80g-ndr))"]
    # undeclared, the same figure has only its reference's bound; on a GB200 (NVLink-C2C) no PCIe peak applies
    assert plausible.beyond(site_copy({}), [copy], H100) == []
    assert plausible.ceiling(site_copy({}), copy, H100) == (
        5000.0, "100 times the reference 50 GB/s of profile h100-sxm5-80g-ndr "
                "(references.site_pinned_copy.pinned_h2d_GBps; no hardware peak for it)")
    gb200 = profiles.load("gb200-nvl72")
    assert plausible.ceiling(site_copy({"pinned_h2d_GBps": "gpu_pcie"}), copy, gb200)[0] == 5000.0  # type: ignore[index]


def test_the_package_checks_declare_the_peaks_plausible_looked_up_by_check_id_before():
    declared = {(c.id, metric): peak for c in checks.registry().values() for metric, peak in c.peaks.items()}
    assert declared == {
        ("ib_ports", "rate_Gbps"): "hca_port", ("ib_write_bw", "bw_avg_Gbps"): "hca_port",
        ("ib_pairs", "bw_avg_Gbps"): "hca_port", ("nvbandwidth", "h2d_GBps"): "gpu_pcie",
        ("nvbandwidth", "d2d_GBps"): "gpu_nvlink_or_pcie", ("nccl_allreduce", "busbw_GBps"): "nvlink_busbw",
        ("nccl_cluster", "busbw_GBps"): "nvlink_busbw", ("nvlink_domain", "busbw_GBps"): "nvlink_busbw"}


@pytest.mark.parametrize("peaks,said", [
    ({"pinned_h2d_GBps": "pcie"}, "pinned_h2d_GBps: no hardware peak 'pcie' (known: hca_port, gpu_pcie, "),
    ({"pinned_h2d_GBps": "hca_port"}, "pinned_h2d_GBps: in GB/s, its peak hca_port in Gb/s"),
    ({"d2h_GBps": "gpu_pcie"}, "d2h_GBps: not one of its metrics"),
])
def test_a_misdeclared_peak_is_refused_with_the_check(peaks, said):
    with pytest.raises(ValueError, match="check site_pinned_copy: peaks ") as caught:
        site_copy(peaks)
    assert said in str(caught.value)


def test_a_flat_site_check_measuring_busbw_is_bounded_by_nvlink_as_before_the_peaks():
    """A site's check written before ``peaks`` (no declaration) that reports nccl-tests' ``busbw_GBps`` keeps the
    bound the field's name always gave it (``plausible.CONVENTIONAL``): 5,000 GB/s on an H100 is a forged figure."""
    ref = Reference(value=480.0, lower=-0.1, upper=None, unit="GB/s", source="test")
    busbw = Finding(device="node", metric="busbw_GBps", value=5000.0, ok=True, unit="GB/s", reference=ref)
    site = Check(id="site_nccl", tool="t", steps=lambda profile, host: [], judge=lambda ctx: [], order=95,
                 metrics={"busbw_GBps": "GB/s"})
    [said] = plausible.beyond(site, [busbw], H100)
    assert "above 956" in said and "NVLink SHARP at most halves a ring's traffic" in said
