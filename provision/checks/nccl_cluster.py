"""nccl_cluster: NCCL all-reduce across nodes, launched by Open MPI's ``mpirun`` (nccl-tests).

As clusters run nccl-tests (nccl-tests README, "MPI"): ``mpirun`` on the group's first host
starts one rank per node over SSH (``--host addr:1,...``, the hostfile's one-slot lines given
inline), each rank driving the node's GPUs (``-g``), output tagged per rank
(``--tag-output``; the parser strips the tags). Judges the out-of-place bus bandwidth at the
largest size (GB/s) against ``nccl_cluster.busbw_GBps``: for the ring algorithm across nodes,
the HCAs' line rate summed over the node's rails times the efficiency nccl-tests users
measure (the profile row's source), since every ring crosses each node's HCAs. Also fails on
wrong results, out-of-bounds values and a rank count other than nodes x GPUs, the nodes being
the job's hosts. The step key names the group's node count ("4-nodes").

On a platform with a multi-node NVLink domain (GB200/GB300 NVL72), NCCL 2.25+ carries the traffic between trays of
one domain over NVLink when it can (MNNVL), so the test would measure the domain, not the HCAs: every rank gets
``NCCL_MNNVL_ENABLE=0`` (NCCL environment variables, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)
and the ring crosses the InfiniBand fabric; the domain itself is the nvlink_domain check's.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Role, Scope, Step
from provision.checks.common.allreduce import SWEEP, allreduce


def steps(profile, group) -> list[Step]:
    p = profile.required_reference("nccl_cluster", "busbw_GBps").params
    hosts = ",".join(f"{h.address}:1" for h in group.hosts)
    ib_only = ["-x", "NCCL_MNNVL_ENABLE=0"] if profile.has("nvlink_domain") else []
    argv = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(len(group.hosts)), "--host", hosts,
            *ib_only, "all_reduce_perf", "-b", str(p["min_bytes"]), "-e", str(p["max_bytes"]),
            "-f", str(p["step_factor"]), "-g", str(profile.gpu.count), "-c", "1", "-n", str(p["iters"]),
            "-w", str(p["warmup_iters"])]
    return [Step(f"{len(group.hosts)}-nodes", argv, parser="nccl-tests")]


def judge(ctx: Context) -> list[Finding]:
    (result,), profile, nodes = ctx.parsed.values(), ctx.profile, len(ctx.hosts)
    ref = profile.required_reference("nccl_cluster", "busbw_GBps")
    device = f"{nodes} nodes x {profile.gpu.count} GPUs"
    return allreduce(result, device, nodes * profile.gpu.count, ref, "NCCL_CLUSTER_SLOW")


PARAMS = {
    "busbw_GBps": {
        "required": ["min_bytes", "max_bytes", "step_factor", "iters", "warmup_iters", "algorithm"],
        "properties": {
            **SWEEP,
            "algorithm": {"enum": ["ring", "tree"]},
            "efficiency": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        },
    },
}


# The hardware peak each metric is bounded by (provision.checks.plausible): no ring beats NVLink's bus bandwidth.
PEAKS = {"busbw_GBps": "nvlink_busbw"}


CHECK = Check(id="nccl_cluster", tool="mpirun", steps=steps, judge=judge, order=120,
              placement=Placement(scope=Scope.GROUP, needs=("gpu", "hca")),
              budget=Budget(loads="gpu", timeout_s=300, sets=("deep",)),
              data=Data(metrics={"busbw_GBps": "GB/s"}, params=PARAMS, peaks=PEAKS, role=Role.GROUP_EVIDENCE))
