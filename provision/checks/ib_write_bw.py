"""ib_write_bw: RDMA write bandwidth of every HCA, in loopback through the node's address.

Tool: perftest ``ib_write_bw`` (server then client; parser ``provision.parsers.perftest``:
MB/sec, MiB/sec and Gb/sec reports). One step per HCA on its own TCP port. Bandwidth in
Gb/s (``bw_avg_Gbps``) against the profile's ``ib_write_bw.bw_avg_Gbps`` reference, whose
params give the message size, duration and direction. The steps and the judging are ib_pairs' too
(``provision.checks.common.perftest``).
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.common.perftest import bandwidth, perftest_steps


def steps(profile, host) -> list[Step]:
    return perftest_steps(profile, host)


def judge(ctx: Context) -> list[Finding]:
    return bandwidth(ctx.parsed, ctx.profile, "HCA_SLOW")


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS = {
    "bw_avg_Gbps": {
        "required": ["msg_size_bytes", "duration_s"],
        "properties": {
            "msg_size_bytes": {"type": "integer", "minimum": 1},
            "duration_s": {"type": "integer", "minimum": 1},
            "direction": {"enum": ["unidirectional", "bidirectional"]},
            "gpudirect": {"enum": ["on", "off"]},  # buffers in GPU memory (--use_cuda), see perftest_steps
            "path": {"enum": ["peermem", "dmabuf"]},  # how GPU memory is registered when gpudirect is on
            "qps": {"type": "integer", "minimum": 1},
        },
    },
}


# The hardware peak each metric is bounded by (provision.checks.plausible): a perftest figure is one HCA port's.
PEAKS = {"bw_avg_Gbps": "hca_port"}


CHECK = Check(id="ib_write_bw", tool="ib_write_bw", steps=steps, judge=judge, order=50,
              placement=Placement(needs=("hca",)),
              budget=Budget(loads="hca", timeout_s=60, sets=("quick", "deep")),
              data=Data(metrics={"bw_avg_Gbps": "Gb/s"}, params=PARAMS, peaks=PEAKS))
