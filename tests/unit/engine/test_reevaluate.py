"""`provision evaluate`: a saved run judged again gives the same report; a new threshold flips it;
a report written before the results model (no schema_version) is read and rewritten as v3."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from provision import profiles
from provision.checks import registry
from provision.engine.verdict import verdict
from tests.unit.checks import hosts_of
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Run, Scope
from provision.results.store import RunDir

DATA = Path(__file__).resolve().parents[2] / "data"
PROFILE = "h100-sxm5-80g-ndr"


def make_run(tmp_path: Path, overrides=None) -> Path:
    run = tmp_path / "runs" / "r1"
    raw = run / "raw" / "n1"
    raw.mkdir(parents=True)
    shutil.copy(DATA / "nccl_allreduce/sim_h100_healthy.txt", raw / "nccl_allreduce.txt")
    shutil.copy(DATA / "ib_write_bw/sim_h100_healthy.txt", raw / "ib_write_bw.mlx5_5.txt")
    variables = {"provision_reference_overrides": overrides} if overrides else {}
    profile = profiles.for_host(PROFILE, variables, "n1")
    results = []
    cases = (("nccl_allreduce", "", "nccl_allreduce.txt"), ("ib_write_bw", "mlx5_5", "ib_write_bw.mlx5_5.txt"))
    for check, key, rel in cases:
        result = verdict(registry()[check], ("n1",), Scope.NODE, profile, {key: (raw / rel).read_text()},
                         hosts_of(registry()[check], ("n1",), profile))
        result.raw, result.duration_s = [RawOutput(key, "n1", f"raw/n1/{rel}")], 1.5
        results.append(result)
    results.append(CheckResult("xid", ("n1",), Outcome.ERROR, "dmesg timed out after 30 s", duration_s=30,
                               raw=[RawOutput("", "n1", "raw/n1/xid.txt")], run_error=True))
    RunDir(run).save(Run(run_id="r1", phases=["burnin"], hosts={"n1": HostRecord(PROFILE, variables)}, results=results),
                     latest=False)
    return run


def rows_of(run: Path) -> dict:
    return {r["check"]: r for r in json.loads((run / "report.json").read_text())["results"]}


def evaluate(run: Path, *extra):
    return subprocess.run([sys.executable, "-m", "provision", "evaluate", str(run), *extra],
                          capture_output=True, text=True)


def test_evaluate_reproduces_the_run_then_a_new_threshold_flips_it(tmp_path):
    run = make_run(tmp_path)
    before = json.loads((run / "report.json").read_text())["results"]
    proc = evaluate(run)
    assert proc.returncode == 1, proc.stderr  # the xid row's run error is kept: the host still errors
    after = json.loads((run / "report.json").read_text())
    assert after["results"] == before
    assert (run / "junit" / "n1.xml").is_file()

    saved = json.loads((run / "report.json").read_text())
    saved["hosts"]["n1"]["vars"]["provision_reference_overrides"] = {"nccl_allreduce": {"busbw_GBps": {"value": 600.0}}}
    (run / "report.json").write_text(json.dumps(saved))
    evaluate(run)
    rows = rows_of(run)
    assert rows["nccl_allreduce"]["outcome"] == "fail"
    assert "reference 600 GB/s bounds [576, -]" in rows["nccl_allreduce"]["message"]
    assert rows["ib_write_bw"]["outcome"] == "pass"
    assert rows["xid"]["message"] == "dmesg timed out after 30 s"


def test_evaluate_against_another_profile_and_missing_raw(tmp_path):
    run = make_run(tmp_path)
    proc = evaluate(run, "--profile", "h999")
    assert proc.returncode == 2 and "no such hardware profile" in proc.stderr
    (run / "raw/n1/nccl_allreduce.txt").unlink()
    proc = evaluate(run)
    assert proc.returncode == 2
    assert "nccl_allreduce on n1: raw output raw/n1/nccl_allreduce.txt is missing" in proc.stderr
    proc = evaluate(tmp_path / "nowhere")
    assert proc.returncode == 2 and "not a readable run report" in proc.stderr


def test_evaluate_against_a_profile_without_the_hardware_skips_those_checks(tmp_path):
    run = make_run(tmp_path)
    evaluate(run, "--profile", "rtx4090-pcie")
    rows = rows_of(run)
    assert rows["ib_write_bw"]["outcome"] == "skipped"  # no InfiniBand in that profile
    assert rows["ib_write_bw"]["message"] == ("not applicable to profile rtx4090-pcie: needs hca: RDMA adapters "
                                              "(hca.count 0)")  # the reason, not only the skip (issue 24)
    # judged again against the RTX 4090 reference (14 GB/s, no upper bound): still a pass
    assert rows["nccl_allreduce"]["outcome"] == "pass"
    assert "reference 14 GB/s" in rows["nccl_allreduce"]["message"]


def test_the_example_scenario_is_valid():
    from provision.sim import scenario

    data = scenario.load(DATA / "scenarios/two-bad-nodes.yaml")
    assert data["nodes"] == 4 and [f["kind"] for f in data["faults"]["node02"]] == ["ib_rate"]


def test_a_report_from_before_the_model_is_judged_and_rewritten_as_v2(tmp_path):
    run = make_run(tmp_path)
    v2 = json.loads((run / "report.json").read_text())
    legacy_rows = [{k: v for k, v in r.items() if k not in ("hosts", "scope")} | {"raw": [x["path"] for x in r["raw"]]}
                   for r in v2["results"]]
    legacy = {"run_id": "r1", "install": {}, "burnin": {"n1": legacy_rows},
              "profiles": {"n1": {"name": PROFILE, "overrides": None}}, "hosts": {"n1": "error"}}
    (run / "report.json").write_text(json.dumps(legacy))
    assert evaluate(run).returncode == 1
    again = json.loads((run / "report.json").read_text())
    assert again["schema_version"] == 3 and again["verdicts"] == {"n1": "error"}
    assert [(r["check"], r["outcome"]) for r in again["results"]] == [(r["check"], r["outcome"]) for r in v2["results"]]
    assert again["results"][1]["raw"] == [{"key": "mlx5_5", "host": "n1", "path": "raw/n1/ib_write_bw.mlx5_5.txt"}]


def test_a_crafted_report_cannot_write_outside_its_run(tmp_path):
    run = make_run(tmp_path)
    saved = json.loads((run / "report.json").read_text())
    saved["results"][0]["hosts"] = ["../../x"]
    saved["hosts"]["../../x"] = saved["hosts"]["n1"]
    (run / "report.json").write_text(json.dumps(saved))
    proc = evaluate(run)
    assert proc.returncode == 2 and "'../../x' is not a plain name" in proc.stderr
    assert not (tmp_path / "x.xml").exists() and not list(tmp_path.rglob("x.xml"))
    saved["results"][0]["hosts"] = ["n1"]
    saved["results"][0]["raw"][0]["path"] = "raw/../../../etc/passwd"
    (run / "report.json").write_text(json.dumps(saved))
    proc = evaluate(run)
    assert proc.returncode == 2 and "is outside the run folder" in proc.stderr
