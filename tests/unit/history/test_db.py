"""The history database: migrations, idempotent inserts, queries, the table."""
import sqlite3

import pytest

from provision.errors import ProvisionError
from provision.history import db
from tests.unit.history.runs import bw_run


def test_a_database_made_by_migration_1_is_upgraded_and_keeps_its_rows(tmp_path):
    file = tmp_path / "history.db"
    with db.connect(file, upto=1) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert "kernel" not in [r[1] for r in conn.execute("PRAGMA table_info(hosts)")]
        conn.execute("INSERT INTO runs VALUES ('old', '2026-10-01T02:00:00+00:00', '', 'rack12')")
        conn.execute("INSERT INTO hosts (run_id, host, driver) VALUES ('old', 'node01', '535.183.01')")
        conn.execute("INSERT INTO results VALUES ('old', 'node01', 'ib_write_bw', 'mlx5_0', 'bw_avg_Gbps', 390.5, "
                     "'Gb/s', 'pass')")
        conn.commit()
    with db.connect(file) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(db.MIGRATIONS) == 3  # 3: refs (issue 23)
        assert db.fingerprint(conn, "old", "node01") == {"driver": "535.183.01", "cuda": None, "cudnn": None,
                                                         "nccl": None, "hca_fw": None, "kernel": None}
        assert [r.value for r in db.rows(conn, host="node01")] == [390.5]
        indexes = [r[1] for r in conn.execute("PRAGMA index_list(results)")]
        assert "results_series" in indexes
    assert file.stat().st_mode & 0o777 == 0o600


def test_a_newer_schema_and_a_file_that_is_no_database_are_bad_input(tmp_path):
    newer = tmp_path / "newer.db"
    sqlite3.connect(newer).execute("PRAGMA user_version = 99").connection.close()
    with pytest.raises(ProvisionError, match="newer.db: history schema version 99 is newer"):
        with db.connect(newer):
            pass
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite at all, " * 100)
    with pytest.raises(ProvisionError, match="junk.db: not a usable history database"):
        with db.connect(junk):
            pass


def test_inserting_the_same_run_twice_is_idempotent(tmp_path):
    run = bw_run("n1", 1, {"node01": 395.0, "node02": 396.0})
    with db.connect(tmp_path / "h.db") as conn:
        first = db.insert(conn, run, {"node01": {"driver": "550.54.15"}})
        dump = list(conn.iterdump())
        second = db.insert(conn, run, {"node01": {"driver": "550.54.15"}})
        assert first == second == 6  # per host: driver, libnccl2, bandwidth
        assert list(conn.iterdump()) == dump
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_rows_filter_by_host_check_metric_and_since(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        for night in (1, 2, 3):
            db.insert(conn, bw_run(f"n{night}", night, {"node01": 390.0 + night, "node02": 380.0}), {})
        rows = db.rows(conn, host="node01", metric="bw_avg_Gbps", since="2026-11-02")
        assert [(r.run, r.value, r.unit, r.outcome) for r in rows] == [("n2", 392.0, "Gb/s", "pass"),
                                                                       ("n3", 393.0, "Gb/s", "pass")]
        assert {r.check for r in db.rows(conn, check="stack")} == {"stack"}
        assert db.series(conn, "node01", "ib_write_bw", "mlx5_0", "bw_avg_Gbps", "2026-11-03", 7) == [
            ("n2", 392.0), ("n1", 391.0)]


def test_the_table_aligns_its_columns():
    lines = db.table([db.Row("n1", "2026-11-01T02:00:00+00:00", "node01", "ib_write_bw", "mlx5_0", "bw_avg_Gbps",
                             371.25, "Gb/s", "pass"),
                      db.Row("n1", "2026-11-01T02:00:00+00:00", "node01", "xid", "", "", None, "", "pass")])
    assert lines[0].split() == list(db.COLUMNS)
    assert lines[1].split() == ["n1", "2026-11-01T02:00:00+00:00", "node01", "ib_write_bw", "mlx5_0", "bw_avg_Gbps",
                                "371.25", "Gb/s", "pass"]
    assert lines[2].split() == ["n1", "2026-11-01T02:00:00+00:00", "node01", "xid", "-", "-", "-", "-", "pass"]
    assert lines[0].index("value") == lines[1].index("371.25") == lines[2].index("-   ", lines[0].index("value"))


def test_the_table_lines_up_once_a_value_is_escaped():
    """issue 36: a node's text value with control characters (written as escapes, ``\\x1b`` four columns for one
    character), a tab and wide characters still leaves every later column where the header's is."""
    from provision.report.console import visible

    rows = [db.Row("n1", "2026-11-01T02:00:00+00:00", "node01", "stack", "", "driver_version", "550.54", "", "pass"),
            db.Row("n1", "2026-11-01T02:00:00+00:00", "node01", "stack", "", "driver_version",
                   "\x1b[2J5\t50\u202e", "", "pass"),
            db.Row("n1", "2026-11-01T02:00:00+00:00", "node01", "stack", "", "driver_version", "版本550", "", "pass")]
    lines = db.table(rows, escape=lambda text: visible(text, newlines=False))
    assert lines[2].split()[6] == "\\x1b[2J5\\t50\\u202e" and "\x1b" not in lines[2] and "\t" not in lines[2]
    starts = [db.width(line[:line.index(" pass")]) for line in lines[1:]]  # the outcome column, in terminal columns
    assert starts[0] == starts[1] == starts[2] == db.width(lines[0][:lines[0].index(" outcome")])
    assert db.width("版本550") == 7 and db.width("e\u0301") == 1


def test_a_failing_migration_leaves_the_file_at_its_version(tmp_path, monkeypatch):
    file = tmp_path / "h.db"
    with db.connect(file, upto=1):
        pass
    monkeypatch.setattr(db, "MIGRATIONS", (db.MIGRATIONS[0], "ALTER TABLE hosts ADD COLUMN kernel TEXT; "
                                                             "CREATE INDEX broken ON nowhere (x)"))
    with pytest.raises(ProvisionError, match="no such table: main.nowhere|no such table: nowhere"):
        with db.connect(file):
            pass
    monkeypatch.undo()
    with db.connect(file) as conn:  # still version 1: the good migrations 2 and 3 (issue 23: refs) apply cleanly
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3


def whole_history_trend(conn, hosts, metrics):
    """The trend as it was read before issue 21: every row of the history into Python, then filtered."""
    out = {h: [] for h in hosts}
    for row in db.rows(conn):
        if row.host in out and row.metric in metrics and isinstance(row.value, float):
            out[row.host].append((row.run, f"{row.check} {row.device} {row.metric}", row.value))
    return out


def trend_history(conn):
    """Nights 1-4 of five hosts, with an nccl busbw finding on nights 2-3, a text value, a NaN (stored as
    text) and an integer-typed value in the bandwidth column."""
    from provision.results.model import CheckResult, Finding, Outcome

    for night in (1, 2, 3, 4):
        run = bw_run(f"n{night}", night, {f"node0{i}": 380.0 + night + i for i in range(1, 6)})
        if night in (2, 3):
            run.results.append(CheckResult("nccl_allreduce", ("node01",), Outcome.PASS, "", findings=[
                Finding("8 GPUs", "busbw_GBps", 360.5 + night, True, "GB/s"),
                Finding("8 GPUs", "busbw_GBps", "n/a", False, "GB/s"),
                Finding("8 GPUs", "busbw_GBps", float("nan"), False, "GB/s")]))
        db.insert(conn, run, {})
    conn.execute("INSERT INTO results VALUES ('n4', 'node02', 'ib_write_bw', 'mlx5_1', 'bw_avg_Gbps', 7, 'Gb/s', "
                 "'pass')")
    conn.commit()


METRICS = ("busbw_GBps", "bw_avg_Gbps", "gflops")


def test_the_trend_filtered_in_sql_is_the_trend_read_whole(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        trend_history(conn)
        hosts = ["node01", "node02", "node09"]
        expected = whole_history_trend(conn, hosts, METRICS)
        assert db.trend(conn, hosts, METRICS) == expected
        assert [p[1] for p in expected["node01"]].count("nccl_allreduce 8 GPUs busbw_GBps") == 2
        assert len(expected["node02"]) == 4 and expected["node09"] == []  # the integer-typed row: not a float
        # the report's checks and runs up to its own: the same rows, less those
        checks, upto = ["ib_write_bw", "stack"], "2026-11-03T02:00:00+00:00"
        assert db.trend(conn, hosts, METRICS, checks, upto) == {
            h: [p for p in found if p[1].startswith(tuple(checks)) and p[0] in ("n1", "n2", "n3")]
            for h, found in expected.items()}


def test_the_trend_reads_through_the_series_index(tmp_path):
    with db.connect(tmp_path / "h.db") as conn:
        trend_history(conn)
        said = []
        conn.set_trace_callback(said.append)  # the statement as SQLite ran it, its values bound
        db.trend(conn, ["node01"], METRICS, ["ib_write_bw"], "2026-11-03")
        conn.set_trace_callback(None)
        query = next(s for s in said if s.lstrip().startswith("SELECT"))
        plan = " ".join(str(row) for row in conn.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "USING INDEX results_series" in plan


def test_a_reports_trend_holds_its_hosts_and_checks_up_to_its_own_run(tmp_path):
    from provision.commands import report as report_command

    with db.connect(tmp_path / "h.db") as conn:
        trend_history(conn)
    report = bw_run("n2", 2, {"node01": 383.0, "node03": 385.0})  # no nccl_allreduce in this run
    trend = report_command.history_trend(tmp_path / "h.db", report)
    assert sorted(trend) == ["node01", "node03"]
    assert trend["node01"] == [("n1", "ib_write_bw mlx5_0 bw_avg_Gbps", 382.0),
                               ("n2", "ib_write_bw mlx5_0 bw_avg_Gbps", 383.0)]


def test_a_reports_trend_leaves_out_a_run_started_in_the_same_second_after_it(tmp_path):
    """Runs are ordered by start, then run id: a run started in the same second but ordered after the
    report's is newer than it; a report without a start time is cut at its run's stored start."""
    from provision.commands import report as report_command

    with db.connect(tmp_path / "h.db") as conn:
        for run_id in ("n2-a", "n2-b"):  # both started 2026-11-02T02:00:00
            db.insert(conn, bw_run(run_id, 2, {"node01": 383.0}), {})
        db.insert(conn, bw_run("n3", 3, {"node01": 384.0}), {})
    report = bw_run("n2-a", 2, {"node01": 383.0})
    assert [p[0] for p in report_command.history_trend(tmp_path / "h.db", report)["node01"]] == ["n2-a"]
    report.started = ""
    assert [p[0] for p in report_command.history_trend(tmp_path / "h.db", report)["node01"]] == ["n2-a"]
    report.run_id = "n2-b"
    assert [p[0] for p in report_command.history_trend(tmp_path / "h.db", report)["node01"]] == ["n2-a", "n2-b"]
