"""nccl_allreduce: single-node NCCL all-reduce over all GPUs (nccl-tests ``all_reduce_perf``).

Parser ``provision.parsers.nccl_tests`` (nccl-tests 2.x header generations, tag-output
prefixes, interleaved NCCL log lines). Judges the out-of-place bus bandwidth (GB/s) at the
largest message size against ``nccl_allreduce.busbw_GBps`` (whose params give the sizes and
iterations), and fails on any wrong result or out-of-bounds value. Validation is always on
(``-c 1``): with it off nccl-tests prints N/A and correctness would be unknown.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.common.allreduce import SWEEP, allreduce


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


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
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


# The hardware peak each metric is bounded by (provision.checks.plausible): a ring's bus bandwidth over NVLink.
PEAKS = {"busbw_GBps": "nvlink_busbw"}


CHECK = Check(id="nccl_allreduce", tool="all_reduce_perf", steps=steps, judge=judge, order=70,
              placement=Placement(needs=("gpu",)),
              budget=Budget(loads="gpu", timeout_s=300, sets=("deep",)),
              data=Data(metrics={"busbw_GBps": "GB/s"}, params=PARAMS, peaks=PEAKS))
