"""The stack fingerprint from a run's stack findings, its saved ibstat output and the kernel."""
from pathlib import Path

from provision.history import fingerprint
from provision.results import reading
from provision.results.model import CheckResult, Finding, Outcome
from provision.results.store import RunStore
from tests.unit.history.runs import bw_run, with_raw

IBSTAT = Path(__file__).parents[2] / "data" / "ib_ports" / "sim_h100_healthy.txt"


def test_the_fingerprint_reads_stack_firmware_and_kernel(tmp_path):
    rundir = RunStore(tmp_path).create("r1")
    rundir.write("raw/node01/ib_ports.txt", IBSTAT.read_text())
    run = bw_run("r1", 1, {"node01": 395.0})
    run.results.append(with_raw(CheckResult("ib_ports", ("node01",), Outcome.PASS, ""), "raw/node01/ib_ports.txt"))
    run.results.append(CheckResult("stack", ("node01",), Outcome.PASS, "", findings=[
        Finding("cuda-12.4", "cuda_release", "12.4", True, expected="12.4",
                detail="nvcc V12.4.131; toolkit pin 12.4.1"),
        Finding("libcudnn9-cuda-12", "version", "9.1.0.70", True, expected="9.1.0.70")]))
    assert fingerprint.of_run(run, rundir.read) == {"node01": {
        "driver": "550.54.15", "cuda": "12.4 (V12.4.131)", "cudnn": "9.1.0.70", "nccl": "2.21.5",
        "hca_fw": "28.39.1002", "kernel": "6.8.0-45-generic"}}
    assert fingerprint.of_run(run, None)["node01"]["hca_fw"] is None


def test_a_missing_raw_output_leaves_the_firmware_unknown(tmp_path):
    rundir = RunStore(tmp_path).create("r1")
    run = bw_run("r1", 1, {"node01": 395.0})
    run.results.append(with_raw(CheckResult("ib_ports", ("node01",), Outcome.PASS, ""), "raw/node01/ib_ports.txt"))
    assert fingerprint.of_run(run, rundir.read)["node01"]["hca_fw"] is None


def test_changes_name_only_fields_both_runs_read():
    before = {"driver": "550.54.15", "kernel": None, "nccl": "2.21.5"}
    now = {"driver": "550.90.07", "kernel": "6.8.0", "nccl": "2.21.5"}
    assert fingerprint.changes(before, now) == ["driver 550.54.15 -> 550.90.07"]


def test_the_kernel_survives_report_json():
    run = bw_run("r1", 1, {"node01": 395.0})
    assert run.to_dict()["hosts"]["node01"]["kernel"] == "6.8.0-45-generic"
    assert reading.run_from_dict(run.to_dict(), "x").hosts["node01"].kernel == "6.8.0-45-generic"
    run.hosts["node01"].kernel = None
    assert "kernel" not in run.to_dict()["hosts"]["node01"]
