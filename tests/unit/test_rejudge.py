"""`provision evaluate`: a saved run judged again gives the same report; a new threshold flips it."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from provision import profiles
from provision.burnin import judge
from provision.checks import registry

DATA = Path(__file__).resolve().parents[1] / "data"


def make_run(tmp_path: Path, overrides=None) -> Path:
    run = tmp_path / "runs" / "r1"
    raw = run / "raw" / "n1"
    raw.mkdir(parents=True)
    shutil.copy(DATA / "nccl_allreduce/sim_h100_healthy.txt", raw / "nccl_allreduce.txt")
    shutil.copy(DATA / "ib_write_bw/sim_h100_healthy.txt", raw / "ib_write_bw.mlx5_5.txt")
    profile = profiles.load("h100-sxm5-80g-ndr").with_overrides(overrides, "test")
    rows = []
    for check, key, rel in (("nccl_allreduce", "", "nccl_allreduce.txt"), ("ib_write_bw", "mlx5_5", "ib_write_bw.mlx5_5.txt")):
        row = judge("n1", registry()[check], profile, {key: (raw / rel).read_text()}).to_dict()
        row.pop("host")
        row.update(raw=[f"raw/n1/{rel}"], duration_s=1.5)
        rows.append(row)
    rows.append({"check": "xid", "outcome": "error", "message": "dmesg timed out after 30 s", "raw": ["raw/n1/xid.txt"],
                 "run_error": True, "findings": [], "duration_s": 30})
    report = {"run_id": "r1", "install": {}, "burnin": {"n1": rows},
              "profiles": {"n1": {"name": "h100-sxm5-80g-ndr", "overrides": overrides}}}
    (run / "report.json").write_text(json.dumps(report))
    return run


def evaluate(run: Path, *extra):
    return subprocess.run([sys.executable, "-m", "provision", "evaluate", str(run), *extra],
                          capture_output=True, text=True)


def test_evaluate_reproduces_the_run_then_a_new_threshold_flips_it(tmp_path):
    run = make_run(tmp_path)
    before = json.loads((run / "report.json").read_text())["burnin"]
    proc = evaluate(run)
    assert proc.returncode == 1, proc.stderr  # the xid row's run error is kept: the host still errors
    after = json.loads((run / "report.json").read_text())
    assert after["burnin"] == before
    assert (run / "junit" / "n1.xml").is_file()

    saved = json.loads((run / "report.json").read_text())
    saved["profiles"]["n1"]["overrides"] = {"nccl_allreduce": {"busbw_GBps": {"value": 600.0}}}
    (run / "report.json").write_text(json.dumps(saved))
    evaluate(run)
    rows = {r["check"]: r for r in json.loads((run / "report.json").read_text())["burnin"]["n1"]}
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
    assert proc.returncode == 2 and "nccl_allreduce.txt: raw output named in report.json is missing" in proc.stderr
    proc = evaluate(tmp_path / "nowhere")
    assert proc.returncode == 2 and "not a readable run report" in proc.stderr


def test_evaluate_against_a_profile_without_the_hardware_skips_those_checks(tmp_path):
    run = make_run(tmp_path)
    evaluate(run, "--profile", "rtx4090-pcie")
    rows = {r["check"]: r for r in json.loads((run / "report.json").read_text())["burnin"]["n1"]}
    assert rows["ib_write_bw"]["outcome"] == "skipped"  # no InfiniBand in that profile
    # judged again against the RTX 4090 reference (14 GB/s, no upper bound): still a pass
    assert rows["nccl_allreduce"]["outcome"] == "pass"
    assert "reference 14 GB/s" in rows["nccl_allreduce"]["message"]


def test_the_example_scenario_is_valid():
    from provision.sim import scenario

    data = scenario.load(DATA / "scenarios/two-bad-nodes.yaml")
    assert data["nodes"] == 4 and [f["kind"] for f in data["faults"]["node02"]] == ["ib_rate"]
