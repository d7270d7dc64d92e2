"""`provision history`'s default view (issue 23 item 2): per host its last runs and verdicts, its
regressions with their baseline and the stack changes; the stored rows with --rows; and the own-median
gate said where it cannot fire (an H100's ib_write_bw, whose lower bound is itself 5 % under line rate)."""
from __future__ import annotations

import json

from provision import cli, profiles
from provision.commands._job import remember
from provision.history import db, regress, summary
from provision.results.model import CheckResult, Finding, Outcome
from provision.results.store import RunStore
from tests.unit.history.runs import bw_run


def nights(tmp_path, values: dict[int, dict[str, float]], drivers: dict[int, dict[str, str]] | None = None) -> str:
    """Runs stored through the job's own history step (gates, then the insert): night -> {host: Gb/s}."""
    history, store = str(tmp_path / "h.db"), RunStore(tmp_path / "runs")
    for night, per_host in values.items():
        run = bw_run(f"night{night}", night, per_host, (drivers or {}).get(night))
        remember.remember(run, store.create(run.run_id), history, lambda _: None)
    return history


def test_the_default_is_a_summary_with_the_regressions_baseline_and_the_stack_change(tmp_path, capsys):
    values = {n: {"node01": 396.0, "node02": 395.0, "node03": 397.0, "node04": 396.0} for n in (1, 2, 3)}
    values[3]["node03"] = 371.0  # above its 342 Gb/s gate, 6.5 % under its median
    history = nights(tmp_path, values, {3: {"node03": "550.90.07"}})
    assert cli.main(["history", "--history", history, "--host", "node03"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "node03: 3 runs from 2026-11-01 to 2026-11-03; last night3: pass (regression)"
    assert out[1] == "  last runs: night1 pass, night2 pass, night3 pass (regression)"
    assert out[2] == "  regressions: 2"  # the own median and the rack's
    assert out[3] == ("    night3 (2026-11-03): mlx5_0 bw_avg_Gbps 371 Gb/s, baseline 397 Gb/s, gate 377.15 Gb/s; "
                      "a warning")
    assert "is 6.5% below its median 397 of the last 2 runs" in out[4]
    assert "  stack changes: 1" in out and "    night3 (2026-11-03): driver 550.54.15 -> 550.90.07" in out
    assert max(len(line) for line in out) <= summary.WIDTH
    assert cli.main(["history", "--history", history, "--host", "node03", "--rows"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:3] == ["run", "time", "host"] and len(rows) == 1 + 3 * 3 + 2  # was the default
    assert cli.main(["history", "--history", history, "--json"]) == 0
    hosts = json.loads(capsys.readouterr().out)
    assert [h["host"] for h in hosts] == ["node01", "node02", "node03", "node04"]
    [node03] = [h for h in hosts if h["host"] == "node03"]
    assert node03["runs"][-1] == {"run": "night3", "started": "2026-11-03T02:00:00+00:00", "verdict": "pass"}
    assert {(r["baseline"], r["outcome"]) for r in node03["regressions"]} >= {(397.0, "warning")}


def test_a_failing_run_is_a_fail(tmp_path, capsys):
    history = nights(tmp_path, {1: {"node01": 396.0}, 2: {"node01": 300.0}})
    assert cli.main(["history", "--history", history]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "node01: 2 runs from 2026-11-01 to 2026-11-02; last night2: fail", "  last runs: night1 pass, night2 fail"]


def h100_run(run_id: str, night: int, value: float):
    """One H100 ib_write_bw result judged against the profile's own reference (400 Gb/s, lower bound 380)."""
    ref = profiles.load("h100-sxm5-80g-ndr").references["ib_write_bw"]["bw_avg_Gbps"]
    run = bw_run(run_id, night, {"gpu01": value})
    run.results = [CheckResult("ib_write_bw", ("gpu01",), Outcome.PASS if value >= 380 else Outcome.FAIL, "",
                               findings=[Finding("mlx5_0", "bw_avg_Gbps", value, value >= 380, "Gb/s", ref)])]
    return run


def test_the_own_median_gate_cannot_fire_on_an_h100s_ib_write_bw_and_says_so(tmp_path, capsys):
    file = tmp_path / "h.db"
    with db.connect(file) as conn:
        for night, value in enumerate((393.0, 395.5, 394.0, 392.5, 394.5), 1):
            db.insert(conn, h100_run(f"n{night}", night, value), {})
        # the lowest passing value, 380.5 Gb/s, is 3.5 % under the median 394: no gate at 5 % can see it
        later = h100_run("n6", 6, 380.5)
        assert regress.gate(conn, later, {}) == []
        later.hosts["gpu01"].vars["provision_regression"] = {"own_pct": 3}  # what the summary proposes
        assert [r.check for r in regress.gate(conn, later, {})] == ["regression"]
    assert cli.main(["history", "--history", str(file), "--host", "gpu01"]) == 0
    out = capsys.readouterr().out
    assert ("own-median gate cannot fire on ib_write_bw mlx5_0 bw_avg_Gbps: 5% below its median 394 Gb/s is "
            "374.3 Gb/s, at or under the lower bound 380 Gb/s") in " ".join(out.split())
    assert "it would fire with own_pct under 3.5" in " ".join(out.split())
    assert "(gates read at their defaults: own_pct 5, window 7;" in out
    assert max(len(line) for line in out.splitlines()) <= summary.WIDTH
    assert summary.reach(394.0, 380.0) == 3.5


def test_a_history_not_yet_at_schema_3_is_summarized_without_baselines(tmp_path, capsys):
    file = tmp_path / "h.db"
    with db.connect(file, upto=2) as conn:
        conn.execute("INSERT INTO runs VALUES ('old', '2026-10-01T02:00:00+00:00', '', 'rack12')")
        conn.execute("INSERT INTO hosts (run_id, host) VALUES ('old', 'node01')")
        conn.execute("INSERT INTO results VALUES ('old', 'node01', 'regression', 'mlx5_0', 'bw_avg_Gbps', 371.0, "
                     "'Gb/s', 'pass')")
        conn.commit()
    file.chmod(0o400)  # read-only: `provision history` does not migrate it
    assert cli.main(["history", "--history", str(file)]) == 0
    out = capsys.readouterr().out
    assert "mlx5_0 bw_avg_Gbps 371 Gb/s, baseline not stored (run stored before history schema 3)" in " ".join(
        out.split())
