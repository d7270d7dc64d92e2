"""ib_ports: every InfiniBand port of the profile Active / LinkUp at the profile's rate.

Tool: ``ibstat`` (infiniband-diags; parser ``provision.parsers.ibstat``). Rates in Gb/s as
ibstat prints them (HDR 200, NDR 400: InfiniBand Trade Association line rates).
Ethernet ports (RoCE, storage) are not counted.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect


def steps(profile, host) -> list[Step]:
    return [Step("", ["ibstat"], parser="ibstat")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    hca = profile.hca
    ports = [p for p in parsed[""]["ports"] if (p.get("link_layer") or "InfiniBand") == "InfiniBand"]
    findings = [expect("node", "ib_port_count", len(ports), hca.count, "HCA_MISSING")]
    for p in ports:
        device = f"{p['ca']} port {p['port']}"
        findings += [
            expect(device, "state", p["state"], "Active", "IB_PORT_DOWN"),
            expect(device, "physical_state", p["physical_state"], "LinkUp", "IB_PHYS_DOWN"),
            expect(device, "rate_Gbps", p["rate_Gbps"], hca.rate_Gbps, "IB_RATE", unit="Gb/s"),
        ]
    return findings


# The hardware peak each metric is bounded by (provision.checks.plausible): the port's own rate.
PEAKS = {"rate_Gbps": "hca_port"}


CHECK = Check(id="ib_ports", tool="ibstat", steps=steps, judge=judge, order=46,
              placement=Placement(needs=("hca",)),
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={"ib_port_count": "", "rate_Gbps": "Gb/s"}, peaks=PEAKS))
