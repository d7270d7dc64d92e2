"""nccl_cluster: NCCL all-reduce across nodes, launched by Open MPI's ``mpirun`` (nccl-tests).

As clusters run nccl-tests (nccl-tests README, "MPI"): ``mpirun`` on the group's first host
starts one rank per node over SSH (``--host addr:1,...``, the hostfile's one-slot lines given
inline), each rank driving the node's GPUs (``-g``), output tagged per rank
(``--tag-output``; the parser strips the tags). Judges the out-of-place bus bandwidth at the
largest size (GB/s) against ``nccl_cluster.busbw_GBps``: for the ring algorithm across nodes,
the HCAs' line rate summed over the node's rails times the efficiency nccl-tests users
measure (the profile row's source), since every ring crosses each node's HCAs. Also fails on
wrong results, out-of-bounds values and a rank count other than nodes x GPUs. The step key
is the group's node count ("4-nodes").
"""
from __future__ import annotations

from provision.checks.base import Check, Finding, Scope, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError
from provision.parsers import parse_tool


def steps(profile, group) -> list[Step]:
    p = profile.required_reference("nccl_cluster", "busbw_GBps").params
    hosts = ",".join(f"{h.address}:1" for h in group.hosts)
    argv = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(len(group.hosts)), "--host", hosts,
            "all_reduce_perf", "-b", str(p["min_bytes"]), "-e", str(p["max_bytes"]), "-f", str(p["step_factor"]),
            "-g", str(profile["gpu"]["count"]), "-c", "1", "-n", str(p["iters"]), "-w", str(p["warmup_iters"])]
    return [Step(f"{len(group.hosts)}-nodes", argv)]


def parse(text: str) -> dict:
    return parse_tool("nccl-tests", text)


def judge(parsed: dict, profile) -> list[Finding]:
    (key, result), = parsed.items()
    if not result["rows"]:
        raise ParseError("all_reduce_perf printed no result rows")
    if result.get("wrong") is None:
        raise ParseError("all_reduce_perf ran without validation: correctness unknown")
    nodes = int(key.split("-")[0])
    ref = profile.required_reference("nccl_cluster", "busbw_GBps")
    busbw = result["busbw_at_max_size_GBps"]["out_of_place"]
    device = f"{nodes} nodes x {profile['gpu']['count']} GPUs"
    return [
        expect(device, "nranks", result.get("nranks"), nodes * profile["gpu"]["count"], "NCCL_RANKS"),
        measured(device, "busbw_GBps", busbw, ref, "NCCL_CLUSTER_SLOW"),
        expect(device, "wrong", result["wrong"], 0, "NCCL_WRONG"),
        expect(device, "out_of_bounds_failed", bool(result.get("out_of_bounds_failed")), False, "NCCL_OOB"),
        expect(device, "max_size_bytes", result["max_size_bytes"], int(ref.params["max_bytes"]), "NCCL_TRUNCATED",
               unit="B"),
    ]


PARAMS = {
    "busbw_GBps": {
        "required": ["min_bytes", "max_bytes", "step_factor", "iters", "warmup_iters", "algorithm"],
        "properties": {
            "binary": {"const": "all_reduce_perf"},
            "min_bytes": {"type": "integer", "minimum": 1},
            "max_bytes": {"type": "integer", "minimum": 1},
            "step_factor": {"type": "integer", "minimum": 2},
            "iters": {"type": "integer", "minimum": 1},
            "warmup_iters": {"type": "integer", "minimum": 0},
            "algorithm": {"enum": ["ring", "tree"]},
            "efficiency": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        },
    },
}


CHECK = Check(id="nccl_cluster", order=120, tool="mpirun", steps=steps, parse=parse, judge=judge,
              needs=("gpu", "hca"), scope=Scope.GROUP, timeout_s=300, metrics={"busbw_GBps": "GB/s"}, params=PARAMS)
