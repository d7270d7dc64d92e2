"""The regression gates on synthetic runs: a node degrading 3% a night, a changed driver, the rack MAD."""
import pytest

from provision.errors import ProfileError
from provision.history import db, regress
from provision.history.fingerprint import of_run
from provision.results import schema
from provision.results.model import REGRESSION, Finding, Outcome
from tests.unit.history.runs import bw_run

NIGHTS = (395.3, 383.4, 371.9)  # node03: 3% less a night; the absolute gate is 342 Gb/s


def nightly(conn, values, regression=None, drivers=None, start=1):
    """Gate and store one run per value of node03 (node01 steady at 396); return each run's regression rows."""
    out = []
    for i, value in enumerate(values):
        run = bw_run(f"night{start + i}", start + i, {"node01": 396.0, "node03": value},
                     drivers=(drivers or [{}] * 9)[i], regression=regression)
        prints = of_run(run, None)
        found = regress.gate(conn, run, prints)
        run.results += found
        db.insert(conn, run, prints)
        out.append((run, found))
    return out


def test_the_third_night_is_flagged_by_the_own_median_while_the_threshold_passes(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, NIGHTS, regression={"own_pct": 4})
    assert [len(found) for _, found in runs] == [0, 0, 1]
    run, [result] = runs[2]
    assert next(r for r in run.results if r.check == "ib_write_bw" and r.host == "node03").outcome is Outcome.PASS
    assert result.check == REGRESSION and result.hosts == ("node03",) and result.outcome is Outcome.PASS
    assert result.message.startswith("warning: node03 mlx5_0 bw_avg_Gbps 371.9 Gb/s is 4.5% below its median "
                                     "389.35 of the last 2 runs; stack unchanged since run night2")
    [finding] = result.findings
    assert finding.ok and finding.reference.value == pytest.approx(389.35)
    assert finding.reference.bounds()[0] == pytest.approx(389.35 * 0.96)
    assert run.verdicts() == {"node01": "pass", "node03": "pass"}  # a warning changes no verdict
    assert schema.problems(run.to_dict()) == []


def test_at_the_defaults_the_fourth_night_is_flagged(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, (*NIGHTS, 360.8))
    assert [len(found) for _, found in runs] == [0, 0, 0, 1]  # 4.5% is within 5%; 5.9% below 383.4 is not
    assert "is 5.9% below its median 383.4 of the last 3 runs" in runs[3][1][0].message


def test_a_changed_driver_is_named(tmp_path):
    drivers = [{}, {}, {"node03": "550.90.07"}]
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, NIGHTS, regression={"own_pct": 4}, drivers=drivers)
    [result] = runs[2][1]
    assert "stack since run night2: driver 550.54.15 -> 550.90.07" in result.message
    assert "driver 550.54.15 -> 550.90.07" in result.findings[0].detail


def test_as_failure_fails_the_host_with_the_fault_code(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, NIGHTS, regression={"own_pct": 4, "as": "failure"})
    run, [result] = runs[2]
    assert result.outcome is Outcome.FAIL and not result.message.startswith("warning")
    assert result.findings[0].fault == "PERF_REGRESSION" and result.findings[0].action
    assert run.verdicts() == {"node01": "pass", "node03": "fail"}
    assert schema.problems(run.to_dict()) == []


def test_the_baseline_is_the_last_good_run_after_a_regression(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, (*NIGHTS, 360.0), regression={"own_pct": 4},
                       drivers=[{}, {}, {"node03": "550.90.07"}, {"node03": "550.90.07"}])
    assert "stack since run night2: driver 550.54.15 -> 550.90.07" in runs[3][1][0].message  # night3 regressed


def test_the_rack_mad_gate_needs_four_hosts(tmp_path):
    rack = {"node01": 395.0, "node02": 396.0, "node03": 394.0, "node04": 395.5, "node05": 370.0}
    with db.connect(tmp_path / "h.db") as conn:
        [result] = regress.gate(conn, bw_run("r1", 1, rack), {})
        assert result.hosts == ("node05",)
        assert "node05 mlx5_0 bw_avg_Gbps 370 Gb/s is 3.2 MAD below the rack median 395 (MAD 7.9 Gb/s, 5 hosts)" \
            in result.message  # scaled MAD 1.48, floored at 2% of 395
        small = {h: v for h, v in rack.items() if h in ("node01", "node02", "node05")}
        assert regress.gate(conn, bw_run("r2", 2, small), {}) == []
        other = bw_run("r3", 3, rack, regression={"mad_k": 4})
        assert regress.gate(conn, other, {}) == []


def test_a_bad_setting_is_refused_with_its_key():
    with pytest.raises(ProfileError, match=r"host node01: provision_regression.as: 'maybe' is not one of"):
        regress.config({"provision_regression": {"as": "maybe"}}, "host node01")
    with pytest.raises(ProfileError, match="provision_regression.windw: unknown key"):
        regress.config({"provision_regression": {"windw": 3}}, "host node01")
    assert regress.config({}, "x") == regress.Config(5.0, 7, 3.0, False)


def test_a_passing_device_of_a_failing_result_is_still_gated(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        runs = nightly(conn, NIGHTS[:2], regression={"own_pct": 4})
        run = bw_run("night3", 3, {"node01": 396.0, "node03": 371.9}, regression={"own_pct": 4})
        bw = next(r for r in run.results if r.check == "ib_write_bw" and r.host == "node03")
        bw.findings.append(Finding("mlx5_1", "bw_avg_Gbps", 300.0, False, "Gb/s", bw.findings[0].reference,
                                   fault="IB_BW_LOW", action="x"))
        bw.outcome = Outcome.FAIL
        [result] = regress.gate(conn, run, {})
    assert len(runs) == 2 and [f.device for f in result.findings] == ["mlx5_0"]


@pytest.mark.parametrize("window", [1, 2, 3, 10])
def test_a_host_s_series_read_at_once_equal_each_metric_s_series(tmp_path, window):
    """The gate reads a host's series in one query (db.series_of_host); each is db.series' answer."""
    with db.connect(tmp_path / "h.db") as conn:
        nightly(conn, (*NIGHTS, 360.8, 380.0))
        before = "9999-12-31T00:00:00"
        for host in ("node01", "node03"):
            every = db.series_of_host(conn, host, before, window)
            assert every  # ib_write_bw at least
            keys = {(r.check, r.device, r.metric) for r in db.rows(conn)
                    if r.host == host and r.outcome == "pass" and isinstance(r.value, float)}
            assert set(every) == keys
            for (check, device, metric), past in every.items():
                assert past == db.series(conn, host, check, device, metric, before, window)
                assert len(past) <= window
