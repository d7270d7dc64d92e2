"""A Run built in process for the report tests: three H100 hosts judged by the real checks against
captured outputs (tests/data/), n2 failing (a slow HCA, a slow GPU pair, an untrusted message), n3
erroring, a pair test and a cluster procedure section."""
from __future__ import annotations

from pathlib import Path

from provision import checks, profiles
from provision.checks.base import judge_outputs
from provision.results.model import CheckResult, Finding, HostRecord, Outcome, RawOutput, Run, Scope
from provision.results.store import RunDir
from tests.unit.checks import hosts_of

DATA = Path(__file__).resolve().parents[2] / "data"
PROFILE = "h100-sxm5-80g-ndr"
EVIL = "<script>alert('pwned')</script> & \"quoted\""  # a tool message the report must show as text


def judged(check: str, host: str, files: dict[str, str], hosts: tuple[str, ...] = (),
           scope: Scope = Scope.NODE) -> CheckResult:
    """``check`` judged on the captures ``files`` ({step key: file under tests/data/<check dir>/})."""
    spec = checks.registry()[check]
    folder = "ib_write_bw" if check == "ib_pairs" else check
    texts = {key: (DATA / folder / name).read_text() for key, name in files.items()}
    profile = profiles.for_host(PROFILE, {}, host)
    findings = judge_outputs(spec, profile, hosts_of(spec, hosts or (host,), profile), texts)
    bad = [f for f in findings if not f.ok]
    outcome = Outcome.FAIL if bad else Outcome.PASS
    message = "; ".join(f.describe() for f in bad) or "ok"
    return CheckResult(check, hosts or (host,), outcome, message, scope=scope, findings=findings)


def failing_run(rundir: RunDir | None = None) -> Run:
    """n1 passes, n2 fails (slow HCA mlx5_1, slow GPU pair 2<->5, a message with markup), n3 errors;
    with ``rundir``, n3's nvbandwidth has no findings but a raw output saved there."""
    n2_ib = judged("ib_write_bw", "n2", {"mlx5_0": "sim_h100_healthy.txt", "mlx5_1": "sim_h100_slow_hca.txt"})
    n2_ib.message = f"{n2_ib.message}; tool said {EVIL}"
    results = [
        judged("ib_write_bw", "n1", {"mlx5_0": "sim_h100_healthy.txt", "mlx5_1": "sim_h100_healthy.txt"}),
        judged("nvbandwidth", "n1", {"": "sim_h100_healthy.txt"}),
        judged("nccl_allreduce", "n1", {"": "sim_h100_healthy.txt"}),
        n2_ib,
        judged("nvbandwidth", "n2", {"": "sim_h100_slow_gpu_pair.txt"}),
        judged("nccl_allreduce", "n2", {"": "sim_h100_nvlink_down.txt"}),
        CheckResult("nccl_allreduce", ("n3",), Outcome.ERROR, "all_reduce_perf timed out after 300 s", run_error=True),
        judged("ib_pairs", "n1", {"mlx5_0": "sim_h100_healthy.txt"}, ("n1", "n3"), Scope.PAIR),
        CheckResult("localize", ("n1", "n2", "n3"), Outcome.FAIL, "1 suspects in 2 rounds: n2 mlx5_1",
                    scope=Scope.CLUSTER, findings=[Finding("mlx5_1", "suspect", 0.9, False, fault="HCA_SLOW",
                                                           action="reseat the HCA", host="n2")]),
    ]
    if rundir is not None:
        rel = rundir.write("raw/n3/nvbandwidth.txt", (DATA / "nvbandwidth" / "sim_h100_healthy.txt").read_text())
        results.append(CheckResult("nvbandwidth", ("n3",), Outcome.ERROR, "nvbandwidth: judged nothing",
                                   raw=[RawOutput("", "n3", rel)]))
    return Run(run_id="r-html", inventory="sim", phases=["burnin"], started="2026-12-01T10:00:00+00:00",
               finished="2026-12-01T10:30:00+00:00", hosts={h: HostRecord(PROFILE) for h in ("n1", "n2", "n3")},
               results=results, cluster={"groups": [_group()]})


def _group() -> dict:
    return {"profile": PROFILE, "hosts": ["n1", "n2", "n3"], "schedule": "quick", "rounds_total": 2,
            "rounds": [{"round": 1, "phase": "ib_pairs quick", "tests": [
                {"kind": "pair", "purpose": "cross-leaf", "hosts": ["n1", "n2"], "ratio": 0.7,
                 "rail_ratios": {"1": 0.7}}]},
                       {"round": 2, "phase": "localize", "tests": [
                           {"kind": "probe", "purpose": "known-good partner", "hosts": ["n2", "n3"], "ratio": 0.68,
                            "rail_ratios": {"1": 0.68}}]}],
            "suspects": [{"kind": "hca", "host": "n2", "rail": 1, "device": "mlx5_1", "cable": None,
                          "evidence": [{"round": 1, "test": "pair", "hosts": ["n1", "n2"], "rail": 1,
                                        "shortfall_pct": 30}], "confidence": 0.9}]}
