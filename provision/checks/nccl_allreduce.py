"""nccl_allreduce: single-node NCCL all-reduce over all GPUs (nccl-tests ``all_reduce_perf``).

Parser ``provision.parsers.nccl_tests`` (nccl-tests 2.x header generations, tag-output
prefixes, interleaved NCCL log lines). Judges the out-of-place bus bandwidth (GB/s) at the
largest message size against ``nccl_allreduce.busbw_GBps`` (whose params give the sizes and
iterations), and fails on any wrong result or out-of-bounds value. Validation is always on
(``-c 1``): with it off nccl-tests prints N/A and correctness would be unknown.
"""
from __future__ import annotations

from provision.checks.base import Check, Finding, Step
from provision.evaluate import expect, measured
from provision.errors import ParseError
from provision.parsers import parse_tool

SLOW = "NVLink/NVSwitch bandwidth low: run nvbandwidth to find the slow GPU pair, check nvlink -s and fabric manager"


def steps(profile, host) -> list[Step]:
    ref = profile.reference("nccl_allreduce", "busbw_GBps")
    p = ref.params if ref else {}
    argv = ["all_reduce_perf", "-b", str(p.get("min_bytes", 8)), "-e", str(p.get("max_bytes", 8 << 30)),
            "-f", str(p.get("step_factor", 2)), "-g", str(profile["gpu"]["count"]), "-c", "1",
            "-n", str(p.get("iters", 20)), "-w", str(p.get("warmup_iters", 5))]
    return [Step("", argv)]


def parse(text: str) -> dict:
    return parse_tool("nccl-tests", text)


def judge(parsed: dict, profile) -> list[Finding]:
    result = parsed[""]
    if not result["rows"]:
        raise ParseError("all_reduce_perf printed no result rows")
    if result.get("wrong") is None:
        raise ParseError("all_reduce_perf ran without validation: correctness unknown")
    device = f"{result.get('nranks') or profile['gpu']['count']} GPUs"
    busbw = result["busbw_at_max_size_GBps"]["out_of_place"]
    ref = profile.reference("nccl_allreduce", "busbw_GBps")
    return [
        expect(device, "nranks", result.get("nranks"), profile["gpu"]["count"], "NCCL_RANKS",
               "all_reduce_perf did not use every GPU: check nvidia-smi for a missing GPU"),
        measured(device, "busbw_GBps", busbw, ref, "NCCL_SLOW", SLOW),
        expect(device, "wrong", result["wrong"], 0, "NCCL_WRONG", "wrong results: drain the node, run gpu_stress and dcgmi diag -r 3"),
        expect(device, "out_of_bounds_failed", bool(result.get("out_of_bounds_failed")), False, "NCCL_OOB",
               "out-of-bounds values: drain the node, run dcgmi diag -r 3"),
        expect(device, "max_size_bytes", result["max_size_bytes"], int(ref.params.get("max_bytes", 8 << 30)) if ref else None,
               "NCCL_TRUNCATED", "the run stopped before the largest size: look at the raw output", unit="B"),
    ]


CHECK = Check(id="nccl_allreduce", tool="all_reduce_perf", steps=steps, parse=parse, judge=judge, needs=("gpu",),
              timeout_s=300, metrics={"busbw_GBps": "GB/s"})
