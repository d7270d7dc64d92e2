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

from provision.checks.base import Check, Finding, Ready, Scope, Step
from provision.checks.ib_write_bw import BASE_PORT, hca_names
from provision.checks.rules import measured
from provision.errors import ParseError
from provision.parsers import parse_tool


def steps(profile, pair) -> list[Step]:
    params = profile.required_reference("ib_write_bw", "bw_avg_Gbps").params
    out = []
    for i, dev in enumerate(hca_names(profile)):
        common = ["ib_write_bw", "-d", dev, "-s", str(params["msg_size_bytes"]),
                  "-D", str(params["duration_s"]), "--report_gbits", "-F", "-p", str(BASE_PORT + i)]
        # perftest's server prints this banner when it waits for its client (perftest README, "Running Tests")
        ready = Ready(line="Waiting for client to connect", port=BASE_PORT + i)
        out.append(Step(dev, common + [pair.server.address], server=common, ready=ready, on=1, server_on=0))
    return out


def parse(text: str) -> dict:
    return parse_tool("perftest", text)


def judge(parsed: dict, profile) -> list[Finding]:
    ref = profile.required_reference("ib_write_bw", "bw_avg_Gbps")
    findings = []
    for dev, result in parsed.items():
        if result.get("bw_avg_Gbps") is None:
            raise ParseError(f"{dev}: perftest printed no average bandwidth")
        findings.append(measured(dev, "bw_avg_Gbps", result["bw_avg_Gbps"], ref, "IB_PAIR_SLOW"))
    return findings


CHECK = Check(id="ib_pairs", order=110, tool="ib_write_bw", steps=steps, parse=parse, judge=judge, needs=("hca",),
              scope=Scope.PAIR, timeout_s=60, metrics={"bw_avg_Gbps": "Gb/s"})
