"""Synthetic runs for the history tests: ib_write_bw per host (one HCA, mlx5_0) judged against a
360 Gb/s reference with a 5% lower bound (gate 342 Gb/s), and the stack check's driver finding."""
from __future__ import annotations

from provision.results.model import CheckResult, Finding, HostRecord, Outcome, RawOutput, Reference, Run

REF = Reference(360.0, -0.05, None, "Gb/s", "test reference", {"msg_size_bytes": 65536})
DRIVER = "550.54.15"


def bw_result(host: str, value: float) -> CheckResult:
    finding = Finding("mlx5_0", "bw_avg_Gbps", value, value >= REF.value * 0.95, "Gb/s", REF,
                      fault="" if value >= 342 else "IB_BW_LOW", action="" if value >= 342 else "look")
    return CheckResult("ib_write_bw", (host,), Outcome.PASS if finding.ok else Outcome.FAIL, "", findings=[finding])


def stack_result(host: str, driver: str) -> CheckResult:
    return CheckResult("stack", (host,), Outcome.PASS, "", findings=[
        Finding("driver", "driver_version", driver, True, expected=driver),
        Finding("libnccl2", "version", "2.21.5", True, expected="2.21.5")])


def bw_run(run_id: str, night: int, values: dict[str, float], drivers: dict[str, str] | None = None,
           regression: dict | None = None, profile: str = "h100-sxm5-80g-ndr") -> Run:
    """Run ``run_id`` started on night ``night`` (2026-11-<night>) with one bandwidth per host."""
    hvars = {"provision_regression": regression} if regression else {}
    run = Run(run_id=run_id, inventory="rack12", phases=["burnin"], started=f"2026-11-{night:02d}T02:00:00+00:00",
              finished=f"2026-11-{night:02d}T02:30:00+00:00",
              hosts={h: HostRecord(profile, dict(hvars), kernel="6.8.0-45-generic") for h in values})
    for host, value in values.items():
        run.results.append(stack_result(host, (drivers or {}).get(host, DRIVER)))
        run.results.append(bw_result(host, value))
    return run


def with_raw(result: CheckResult, path: str) -> CheckResult:
    result.raw = [RawOutput("", result.host, path)]
    return result
