"""ib_pairs: RDMA write bandwidth between two nodes, per rail (HCA), across the fabric.

Tool: perftest ``ib_write_bw``, server on the pair's first host, client on its second writing
to it (parser ``provision.parsers.perftest``), one step per HCA on its own TCP port, so each
rail's plane carries one flow: client HCA -> leaf -> (spine -> leaf) -> server HCA. Judged in
Gb/s against the profile's per-HCA ``ib_write_bw.bw_avg_Gbps`` reference: the same test as
the node-local ib_write_bw check, whose figure is the HCA's wherever its partner sits
(Azure's health checks gate ib_write_bw per HCA the same way,
https://github.com/Azure/azurehpc-health-checks). Pairs and rounds come from the fabric
(``provision.fabric.schedule``: quick or full) or from localization (``provision.fabric.localize``).
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Role, Scope, Step
from provision.checks.common.perftest import bandwidth, perftest_steps


def steps(profile, pair) -> list[Step]:
    return perftest_steps(profile, pair.server, on=1, server_on=0)


def judge(ctx: Context) -> list[Finding]:
    return bandwidth(ctx.parsed, ctx.profile, "IB_PAIR_SLOW")


# The hardware peak each metric is bounded by (provision.checks.plausible): a perftest figure is one HCA port's.
PEAKS = {"bw_avg_Gbps": "hca_port"}


CHECK = Check(id="ib_pairs", tool="ib_write_bw", steps=steps, judge=judge, order=110,
              placement=Placement(scope=Scope.PAIR, needs=("hca",)),
              budget=Budget(loads="hca", timeout_s=60, sets=("deep",)),
              data=Data(metrics={"bw_avg_Gbps": "Gb/s"}, references_from=("ib_write_bw",), peaks=PEAKS,
                        role=Role.PAIR_EVIDENCE))
