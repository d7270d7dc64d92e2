"""nccl-tests' ``all_reduce_perf``: the sweep its references' params describe and its result judged, as the checks
that run it share them (nccl_allreduce on one node, nccl_cluster across nodes, nvlink_domain across an NVLink
domain's trays).
"""
from __future__ import annotations

from provision.checks.base import Finding
from provision.checks.rules import expect, measured
from provision.errors import ParseError

# The JSON Schema of an all_reduce_perf sweep's params (the sizes and iterations its command is built from), in
# the params of nccl_allreduce's, nccl_cluster's and nvlink_domain's references.
SWEEP = {
    "binary": {"const": "all_reduce_perf"},
    "min_bytes": {"type": "integer", "minimum": 1},
    "max_bytes": {"type": "integer", "minimum": 1},
    "step_factor": {"type": "integer", "minimum": 2},
    "iters": {"type": "integer", "minimum": 1},
    "warmup_iters": {"type": "integer", "minimum": 0},
}


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
