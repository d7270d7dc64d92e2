"""Bench: the HTML report (provision.report.html) and the Prometheus textfile of a large run.

Prints figures, never passes or fails. The run: ``--hosts`` synthetic H100 hosts (default 64), each
with the 12 node checks judged by the real checks against the healthy captures in tests/data/ (one
judge per check, findings copied per host with measured values jittered +-1%, and re-judged against
their reference), plus ib_pairs (one pair per two hosts), nccl_cluster (one group) and localize: 15
checks. Every 8th host has a slow HCA and a slow GPU pair. ``--trend-runs`` runs of history per host
(three series) add the trend plots. Render time: the median of ``--repeat`` renders, in process.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from provision import checks, profiles  # noqa: E402
from provision.checks.base import judge_outputs  # noqa: E402
from provision.engine.jobs import target  # noqa: E402
from provision.inventory import Host  # noqa: E402
from provision.checks.rules import within  # noqa: E402
from provision.report import html, prometheus  # noqa: E402
from provision.results.model import CheckResult, Finding, HostRecord, Outcome, Run, Scope  # noqa: E402

DATA = ROOT / "tests" / "data"
PROFILE = "h100-sxm5-80g-ndr"
NODE_CHECKS = {  # check -> {step key: capture}; keys as the check's steps name them
    "gpu_health": {"": "sim_h100_healthy.txt"}, "xid": {"": "sim_h100_healthy.txt"},
    "pcie_link": {"gpu": "sim_h100_healthy.gpu.txt", "hca": "sim_h100_healthy.hca.txt"},
    "topology": {"": "sim_h100_healthy.txt"}, "nvlink": {"": "sim_h100_healthy.txt"},
    "ib_ports": {"": "sim_h100_healthy.txt"},
    "ib_write_bw": {f"mlx5_{i}": "sim_h100_healthy.txt" for i in range(8)},
    "nvbandwidth": {"": "sim_h100_healthy.txt"}, "nccl_allreduce": {"": "sim_h100_healthy.txt"},
    "gpu_stress": {"gpu_burn": "sim_h100_healthy.gpu_burn.txt", "dcgmi": "sim_h100_healthy.dcgmi.txt"},
    "stack": {"driver": "sim_h100_healthy.driver.txt", "cuda": "sim_h100_healthy.cuda.txt",
              "packages": "sim_h100_healthy.packages.txt"},
    "storage": {"bond": "sim_h100_healthy.bond.txt", "fio": "sim_h100_healthy.fio.txt"},
}


def template_findings(check: str, files: dict[str, str], folder: str | None = None,
                      hosts: tuple[str, ...] = ("bench",)) -> list[Finding]:
    """The check's findings on its healthy captures, judged for a job on ``hosts``; one passing
    placeholder when it cannot judge them under the plain profile (a site fact it needs)."""
    spec = checks.registry()[check]
    try:
        texts = {key: (DATA / (folder or check) / name).read_text() for key, name in files.items()}
        ran = target(spec, tuple(Host(h, h, 22, "root", None, None, PROFILE) for h in hosts))
        return judge_outputs(spec, profiles.for_host(PROFILE, {}, "bench"), ran, texts)
    except Exception as exc:  # noqa: BLE001 - a bench: say so and go on
        print(f"# {check}: placeholder finding ({type(exc).__name__}: {str(exc)[:80]})", file=sys.stderr)
        return [Finding("node", "placeholder", True, True, expected=True)]


def jitter(found: list[Finding], rng: random.Random, slow: set[str]) -> list[Finding]:
    """``found`` with every measured value times U(0.99, 1.01) (0.6 for devices in ``slow``), re-judged."""
    out = []
    for f in found:
        if f.reference is None or not isinstance(f.value, (int, float)) or isinstance(f.value, bool):
            out.append(f)
            continue
        value = round(float(f.value) * (0.6 if f.device in slow else rng.uniform(0.99, 1.01)), 2)
        out.append(dataclasses.replace(f, value=value, ok=within(value, f.reference)))
    return out


def result(check: str, hosts: tuple[str, ...], findings: list[Finding], scope: Scope = Scope.NODE) -> CheckResult:
    bad = [f for f in findings if not f.ok]
    return CheckResult(check, hosts, Outcome.FAIL if bad else Outcome.PASS,
                       "; ".join(f.describe() for f in bad) or "ok", scope=scope, duration_s=1.0, findings=findings)


def synthetic_run(n: int, seed: int = 1) -> Run:
    """The run of the module's doc: ``n`` hosts x 15 checks."""
    rng = random.Random(seed)
    names = [f"gpu-r01-{i:03d}" for i in range(1, n + 1)]
    templates = {c: template_findings(c, files) for c, files in NODE_CHECKS.items()}
    pair = template_findings("ib_pairs", {f"mlx5_{i}": "sim_h100_healthy.txt" for i in range(8)}, "ib_write_bw",
                             tuple(names[:2]))
    group = [dataclasses.replace(f, value=f.expected, ok=True) if f.metric == "nranks" else f  # a 2-node capture
             for f in template_findings("nccl_cluster", {f"{n}-nodes": "sim_h100_2nodes_healthy.txt"}, None,
                                        tuple(names))]
    results = []
    for i, host in enumerate(names):
        slow = {"mlx5_3", "GPU2->GPU5", "GPU5->GPU2"} if i % 8 == 7 else set()
        results += [result(c, (host,), jitter(found, rng, slow)) for c, found in templates.items()]
    for a, b in zip(names[::2], names[1::2]):
        results.append(result("ib_pairs", (a, b), jitter(pair, rng, set()), Scope.PAIR))
    results.append(result("nccl_cluster", tuple(names), jitter(group, rng, set()), Scope.GROUP))
    suspects = [Finding("mlx5_3", "suspect", 0.9, False, fault="HCA_SLOW", action="reseat", host=h)
                for h in names[7::8]]
    results.append(CheckResult("localize", tuple(names), Outcome.FAIL if suspects else Outcome.PASS,
                               f"{len(suspects)} suspects", scope=Scope.CLUSTER, findings=suspects))
    return Run(run_id="bench", inventory="synthetic", phases=["burnin"], started="2026-12-01T10:00:00+00:00",
               finished="2026-12-01T11:00:00+00:00", hosts={h: HostRecord(PROFILE) for h in names},
               results=results, cluster={"groups": [_group(names)]})


def _group(names: list[str]) -> dict:
    tests = [{"kind": "pair", "purpose": "cross-leaf", "hosts": [a, b], "ratio": 0.98, "rail_ratios": {"0": 0.98}}
             for a, b in zip(names[::2], names[1::2])]
    return {"profile": PROFILE, "hosts": names, "schedule": "quick", "rounds_total": 1,
            "rounds": [{"round": 1, "phase": "ib_pairs quick", "tests": tests}],
            "suspects": [{"kind": "hca", "host": h, "rail": 3, "device": "mlx5_3", "cable": None,
                          "evidence": [{"round": 1, "test": "pair", "hosts": [h], "rail": 3, "shortfall_pct": 40}],
                          "confidence": 0.9} for h in names[7::8]]}


def trend(names: list[str], runs: int) -> dict:
    series = ("nccl_allreduce 8 GPUs busbw_GBps", "ib_write_bw mlx5_0 bw_avg_Gbps", "gpu_stress GPU0 gflops")
    return {h: [(f"r{k:03d}", s, 400.0 + k) for k in range(runs) for s in series] for h in names}


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64, help="synthetic hosts (default 64)")
    ap.add_argument("--trend-runs", type=int, default=10, help="history runs per host for the trends (default 10)")
    ap.add_argument("--repeat", type=int, default=5, help="renders timed (default 5; the median is printed)")
    ap.add_argument("--out", help="also write the report there, to look at")
    args = ap.parse_args(argv)
    run = synthetic_run(args.hosts)
    checks_per_host = len({r.check for r in run.results})
    findings = sum(len(r.findings) for r in run.results)
    print(f"# {args.hosts} hosts x {checks_per_host} checks: {len(run.results)} results, {findings} findings")
    history = trend(list(run.hosts), args.trend_runs)
    for label, tr in (("html, no trend", None), (f"html, trend of {args.trend_runs} runs", history)):
        seconds, page = timed(lambda: html.render(run, None, tr), args.repeat)
        size = len(str(page).encode())
        print(f"{label:<24} render {seconds * 1000:8.1f} ms  size {size / 1e6:6.2f} MB ({size} bytes)")
        if args.out and tr is not None:
            Path(args.out).write_text(str(page))
    seconds, text = timed(lambda: prometheus.text(run), args.repeat)
    print(f"{'prometheus textfile':<24} render {seconds * 1000:8.1f} ms  size {len(str(text)) / 1e6:6.2f} MB "
          f"({str(text).count(chr(10))} lines)")


if __name__ == "__main__":
    main()
