"""Issue 21 cause 15: a report read back (`provision report`, `evaluate`, `history import`) is checked
against the published schema (report.schema.json) first: a type-confused one is exit 2 naming the file
and the key path, and is never stored as a pass."""
from __future__ import annotations

import json

import pytest

from provision import cli
from provision.results import schema
from provision.results.store import RunStore
from tests.unit.history.runs import bw_run


def confused(tmp_path, mutate) -> str:
    rundir = RunStore(tmp_path / "runs").create("r1")
    rundir.save(bw_run("r1", 1, {"n1": 300.0}))  # n1 fails: 300 Gb/s below the 342 gate
    data = json.loads(rundir.report.read_text())
    mutate(data)
    rundir.report.write_text(json.dumps(data))
    return str(rundir.path)


def bw(data: dict) -> dict:
    return next(r for r in data["results"] if r["check"] == "ib_write_bw")


CASES = [
    (lambda d: bw(d)["findings"][0].update(ok="false"), "results.1.findings.0.ok: 'false' is not of type 'boolean'"),
    (lambda d: bw(d).update(message=42), "results.1.message: 42 is not of type 'string'"),
    (lambda d: d["hosts"].update(n1="x" * 10_000), "hosts.n1: 'xxxxx"),
    (lambda d: d.update(results={"0": "pass"}), "results: {'0': 'pass'} is not of type 'array'"),
]


@pytest.mark.parametrize("mutate,key", CASES)
def test_report_evaluate_and_history_import_refuse_a_type_confused_report(tmp_path, capsys, mutate, key):
    folder = confused(tmp_path, mutate)
    history = tmp_path / "h.db"
    for argv in (["report", folder], ["evaluate", folder], ["history", "import", folder, "--history", str(history)]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{folder}/report.json: report.json breaks report.schema.json" in err
        assert key in err and len(err) < 1000
    assert not history.exists() or cli.main(["history", "--history", str(history)]) == 0
    assert "n1" not in capsys.readouterr().out  # nothing of it stored


def test_a_journal_line_of_the_wrong_types_is_not_read_as_a_result(tmp_path):
    rundir = RunStore(tmp_path).create("r1")
    run = bw_run("r1", 1, {"n1": 300.0})
    row = run.results[1].to_dict()
    run.results = run.results[:1]
    rundir.save(run)
    row["findings"][0]["ok"] = "false"
    rundir.journal.write_text(json.dumps(row) + "\n")
    assert [r.check for r in rundir.load().results] == ["stack"]
    assert schema.result_problems(row) == ["findings.0.ok: 'false' is not of type 'boolean'"]


def test_a_finding_of_a_shape_seen_before_is_checked_once_and_a_bad_one_named_where_it_is():
    data = bw_run("r1", 1, {f"n{i}": 396.0 for i in range(50)}).to_dict()
    assert schema.problems(data) == []
    bw_rows = [r for r in data["results"] if r["check"] == "ib_write_bw"]
    bw_rows[40]["findings"][0]["unit"] = 7
    bw_rows[41]["findings"][0]["ok"] = False  # a failing finding must name its fault and action
    index = data["results"].index(bw_rows[40])
    assert schema.problems(data) == sorted([f"results.{index}.findings.0.unit: 7 is not of type 'string'",
                                            f"results.{index + 2}.findings.0: 'action' is a required property",
                                            f"results.{index + 2}.findings.0: 'fault' is a required property"])


def test_the_finding_schema_judges_only_what_the_shape_sampling_keeps():
    """schema._sample checks one finding per shape (its keys, their JSON types, ok false or not): sound only
    while $defs/finding constrains nothing else. A keyword that looks into a value (pattern, enum, minLength,
    minimum...) must come with a shape that carries it, or the sampling would pass findings never checked."""
    import json

    from provision.results import schema as report_schema

    finding = json.loads(report_schema.SCHEMA.read_text())["$defs"]["finding"]
    assert set(finding) <= {"type", "additionalProperties", "required", "properties", "dependentRequired", "if",
                            "then"}
    assert finding["if"] == {"properties": {"ok": {"const": False}}}
    for name, rule in finding["properties"].items():
        assert set(rule) <= {"type"}, f"$defs/finding {name}: {sorted(rule)} look into the value"
