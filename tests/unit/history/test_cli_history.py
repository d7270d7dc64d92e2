"""`provision history`, `provision history import`, the job's history step and check sets."""
import json

import pytest
import yaml

from provision import checks, cli
from provision.commands import history as history_command
from provision.commands._job import remember, select
from provision.errors import ProfileError, ProvisionError
from provision.history import db
from provision.results.store import RunStore
from tests.unit.history.runs import bw_run


def saved_runs(tmp_path, nights=(1, 2, 3)):
    """Run folders with a report.json each (as runs made before the history existed)."""
    store, out = RunStore(tmp_path / "runs"), []
    for night in nights:
        rundir = store.create(f"night{night}")
        rundir.save(bw_run(rundir.name, night, {"node01": 396.0, "node03": 400.0 - 3 * night}), latest=False)
        out.append(str(rundir.path))
    return out


def test_import_then_the_table_and_json(tmp_path, capsys):
    history = str(tmp_path / "h.db")
    folders = saved_runs(tmp_path)
    assert cli.main(["history", "import", *folders, "--history", history]) == 0
    assert "night1 (2026-11-01T02:00:00+00:00): 2 hosts, 6 rows" in capsys.readouterr().out
    assert cli.main(["history", "import", *folders, "--history", history]) == 0  # again: nothing changes
    capsys.readouterr()
    # issue 23: the stored rows with --rows (the default is the per-host summary)
    assert cli.main(["history", "--history", history, "--host", "node03", "--metric", "bw_avg_Gbps", "--rows"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "time", "host", "check", "device", "metric", "value", "unit", "outcome"]
    assert [line.split()[6] for line in lines[1:]] == ["397", "394", "391"]
    assert cli.main(["history", "--history", history, "--check", "stack", "--since", "2026-11-03", "--json",
                     "--rows"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["run"], r["host"], r["metric"]) for r in rows} == {
        ("night3", h, m) for h in ("node01", "node03") for m in ("driver_version", "version")}


@pytest.mark.parametrize("argv,message", [
    (["history", "--since", "yesterday"], "--since 'yesterday': not an ISO date or time"),
    (["history", "frobnicate"], "history: unknown action 'frobnicate'"),
    (["history", "import"], "history import: name at least one RUN_DIR"),
    (["history", "import", "/nonexistent/run"], "/nonexistent/run/report.json: not a readable run report"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    history = tmp_path / "h.db"
    with db.connect(history):
        pass
    assert cli.main([*argv, "--history", str(history)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_missing_history_file_is_named_and_not_created(tmp_path, capsys):
    assert cli.main(["history", "--history", str(tmp_path / "none.db")]) == 2
    assert "none.db: no such history database" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_a_report_without_its_start_time_is_refused(tmp_path, capsys):
    rundir = RunStore(tmp_path / "runs").create("old")
    run = bw_run("old", 1, {"node01": 396.0})
    run.started = ""
    rundir.save(run, latest=False)
    assert cli.main(["history", "import", str(rundir.path), "--history", str(tmp_path / "h.db")]) == 2
    assert "report.json: started: missing" in capsys.readouterr().err


def test_the_job_step_gates_then_stores_and_a_broken_history_is_one_warning(tmp_path):
    history = tmp_path / "h.db"
    history_command.history_import(str(history), saved_runs(tmp_path, (1, 2)), progress=lambda _: None)
    rundir = RunStore(tmp_path / "runs").create("night3")
    run = bw_run("night3", 3, {"node01": 396.0, "node03": 371.0}, regression={"own_pct": 4})
    lines = []
    remember.remember(run, rundir, str(history), lines.append)
    assert [r.host for r in run.results if r.check == "regression"] == ["node03"]
    assert lines == [next(r.message for r in run.results if r.check == "regression").join(["regression: ", ""])]
    with db.connect(history) as conn:
        assert {r.check for r in db.rows(conn, host="node03", since="2026-11-03")} == {"stack", "ib_write_bw",
                                                                                       "regression"}
    broken = tmp_path / "broken.db"
    broken.write_text("garbage " * 200)
    lines, before = [], len(run.results)
    remember.remember(run, rundir, str(broken), lines.append)
    assert len(lines) == 1 and lines[0].startswith(f"provision: warning: history {broken}: ProvisionError")
    assert len(run.results) == before


def host(name, profile="h100-sxm5-80g-ndr"):
    """The target of a host of ``profile`` (a name, or a profile file's path)."""
    from provision import targets
    from provision.inventory import Host

    [target] = targets.build([Host(name, "127.0.9.1", 22, "root", None, None, profile)])
    return target


def test_check_sets_are_tags_on_the_checks():
    """A set is the checks tagged with it (Check.sets), in run order, over the whole registry: no list kept here."""
    registry = checks.registry()
    for name in ("quick", "deep"):
        tagged = [c for c, check in registry.items() if name in check.sets]
        assert select.check_set(name, [host("n1"), host("n2", "rtx4090-pcie")], None) == tagged
    # deep: every check but the optional ones (dcgm_mndiag: only the acceptance set names it)
    assert select.check_set("deep", [host("n1")], None) == [c for c, check in registry.items() if not check.optional]
    quick = select.check_set("quick", [host("n1")], None)
    assert quick and set(quick) < set(registry) and {"gpu_health", "xid"} <= set(quick)
    # quick: minutes, no cluster procedure: node checks, and firmware_fleet, which runs no tool (it compares outputs)
    assert all(registry[c].scope.value == "node" or registry[c].gathers for c in quick)
    known = r"\(known: acceptance, deep, health, quick\)"  # issue 23 item 4 added acceptance, issue 38 health
    with pytest.raises(ProfileError, match=rf"--check-set nightly: no such check set {known}"):
        select.check_set("nightly", [host("n1")], None)
    with pytest.raises(ProvisionError, match="--check-set and --checks"):
        select.check_set("quick", [host("n1")], ["xid"])


def test_a_profile_only_excludes_checks_from_a_set(tmp_path):
    from provision.profiles import DATA_DIR

    data = yaml.safe_load((DATA_DIR / "h100-sxm5-80g-ndr.yaml").read_text())
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({**data, "exclude_checks": ["xid", "nvlink"]}))
    quick = select.check_set("quick", [host("n1", str(tmp_path / "x.yaml"))], None)
    assert quick == [c for c in select.check_set("quick", [host("n1")], None) if c not in ("xid", "nvlink")]
    both = select.check_set("quick", [host("n1", str(tmp_path / "x.yaml")), host("n2")], None)
    assert both == select.check_set("quick", [host("n2")], None)  # the union over the hosts' profiles
    (tmp_path / "y.yaml").write_text(yaml.safe_dump({**data, "exclude_checks": ["xdi"]}))
    with pytest.raises(ProfileError, match=r"y.yaml: exclude_checks: unknown check xdi \(known: gpu_health, "):
        select.check_set("quick", [host("n1", str(tmp_path / "y.yaml"))], None)


def test_the_profile_schema_refuses_a_bad_exclusion():
    from provision.profiles import load, schema

    data = dict(load("h100-sxm5-80g-ndr").data)
    for bad, said in ((["Gpu Health"], "exclude_checks.0"), (["xid", "xid"], "exclude_checks"),
                      ("xid", "exclude_checks")):
        with pytest.raises(ProfileError, match=said.replace(".", r"\.")):
            schema.validate({**data, "exclude_checks": bad}, "profile", "p.yaml")
    with pytest.raises(ProfileError, match=r"check_sets: unknown key"):
        schema.validate({**data, "check_sets": {"quick": ["xid"]}}, "profile", "p.yaml")


def test_a_reevaluation_keeps_the_regression_rows(tmp_path):
    from provision.engine.reevaluate import reevaluate
    from provision.results.model import CheckResult, HostRecord, Outcome, Run

    rundir = RunStore(tmp_path).create("r")
    result = CheckResult("regression", ("n1",), Outcome.PASS, "warning: n1 mlx5_0 ...")
    run = Run("r", hosts={"n1": HostRecord("h100-sxm5-80g-ndr")}, results=[result])
    assert reevaluate(rundir, run, None) == [result]
