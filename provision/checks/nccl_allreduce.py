"""nccl_allreduce: single-node NCCL all-reduce over all GPUs (nccl-tests ``all_reduce_perf``).

Parser ``provision.parsers.nccl_tests`` (nccl-tests 2.x header generations, tag-output
prefixes, interleaved NCCL log lines). Judges the out-of-place bus bandwidth (GB/s) at the
largest message size against ``nccl_allreduce.busbw_GBps`` (whose params give the sizes and
iterations), and fails on any wrong result or out-of-bounds value. Validation is always on
(``-c 1``): with it off nccl-tests prints N/A and correctness would be unknown.
"""
from __future__ import annotations

from provision.checks.base import Check, Context, Finding, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError

def steps(profile, host) -> list[Step]:
    p = profile.required_reference("nccl_allreduce", "busbw_GBps").params
    argv = ["all_reduce_perf", "-b", str(p["min_bytes"]), "-e", str(p["max_bytes"]), "-f", str(p["step_factor"]),
            "-g", str(profile.gpu.count), "-c", "1", "-n", str(p["iters"]), "-w", str(p["warmup_iters"])]
    return [Step("", argv, parser="nccl-tests")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    result = parsed[""]
    device = f"{result.get('nranks') or profile.gpu.count} GPUs"
    ref = profile.required_reference("nccl_allreduce", "busbw_GBps")
    return allreduce(result, device, profile.gpu.count, ref, "NCCL_SLOW")


def allreduce(result: dict, device: str, ranks: int, ref, slow: str) -> list[Finding]:
    """An all_reduce_perf result judged: rank count, out-of-place busbw at the largest size against
    ``ref`` (``slow`` the shortfall's fault code), no wrong results or out-of-bounds values, the sweep
    reached ``ref``'s max_bytes. Raises ParseError with no rows or with validation off."""
    if result.get("failures"):  # a rank's "Test NCCL/CUDA failure": whatever rows came before, the run failed
        first = result["failures"][0]
        raise ParseError(f"all_reduce_perf reported a failure on {first.get('host') or 'a rank'}: "
                         f"Test {first['kind']} failure '{first['text']}'")
    if not result["rows"]:
        raise ParseError("all_reduce_perf printed no result rows")
    if result.get("wrong") is None:
        raise ParseError("all_reduce_perf ran without validation: correctness unknown")
    busbw = result["busbw_at_max_size_GBps"]["out_of_place"]
    return [
        expect(device, "nranks", result.get("nranks"), ranks, "NCCL_RANKS"),
        measured(device, "busbw_GBps", busbw, ref, slow),
        expect(device, "wrong", result["wrong"], 0, "NCCL_WRONG"),
        expect(device, "out_of_bounds_failed", bool(result.get("out_of_bounds_failed")), False, "NCCL_OOB"),
        expect(device, "max_size_bytes", result["max_size_bytes"], int(ref.params["max_bytes"]), "NCCL_TRUNCATED",
               unit="B"),
    ]


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
SWEEP = {  # the all_reduce_perf sweep's params, shared with nccl_cluster
    "binary": {"const": "all_reduce_perf"},
    "min_bytes": {"type": "integer", "minimum": 1},
    "max_bytes": {"type": "integer", "minimum": 1},
    "step_factor": {"type": "integer", "minimum": 2},
    "iters": {"type": "integer", "minimum": 1},
    "warmup_iters": {"type": "integer", "minimum": 0},
}
PARAMS = {
    "busbw_GBps": {
        "required": ["min_bytes", "max_bytes", "step_factor", "iters", "warmup_iters"],
        "properties": {
            **SWEEP,
            "gpus": {"type": "integer", "minimum": 1},
            # whether the figure holds with NVLink SHARP (NCCL_NVLS_ENABLE)
            "nvls": {"enum": ["on", "off"]},
        },
    },
}


CHECK = Check(id="nccl_allreduce", order=70,
              sets=("deep",),
              tool="all_reduce_perf", steps=steps, judge=judge, needs=("gpu",),
              timeout_s=300, metrics={"busbw_GBps": "GB/s"}, params=PARAMS)
