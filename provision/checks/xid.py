"""xid: NVIDIA Xid errors and "fallen off the bus" in the kernel log since boot.

Tool: ``dmesg`` (parser ``provision.parsers.dmesg_xid``: every timestamp style). Severities
follow NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/); meanings and
actions are the fault catalogue's XID_<n> rows (provision/checks/faults.yaml).
Application-level Xids (13, 31, 43, 45) are reported but do not fail a node; every other
known or unknown Xid does.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Check, Finding, Step
from provision.parsers import parse_tool

# Xid -> severity; "application" does not fail the node. Meanings and actions are the fault
# catalogue's XID_<n> rows; an Xid not listed here is XID_UNKNOWN and fails the node.
SEVERITY = {13: "application", 31: "application", 43: "application", 45: "application",
            48: "fatal", 61: "fatal", 62: "fatal", 63: "warning", 64: "fatal", 74: "fatal", 79: "fatal",
            92: "warning", 94: "fatal", 95: "fatal", 119: "fatal", 120: "fatal"}


def code(xid: int) -> str:
    """The fault code of an Xid: XID_<n> for the catalogued ones, else XID_UNKNOWN."""
    return f"XID_{xid}" if xid in SEVERITY else "XID_UNKNOWN"


def steps(profile, host) -> list[Step]:
    return [Step("", ["dmesg"])]


def parse(text: str) -> dict:
    return parse_tool("dmesg-xid", text)


def judge(parsed: dict, profile) -> list[Finding]:
    log = parsed[""]
    xid79 = {e["pci"].lower() for e in log["xids"] if e["xid"] == 79}
    findings = [Finding(device=f"PCI {pci}", metric="fallen_off_bus", value=True, ok=False, fault="XID_79",
                        action=faults.action("XID_79"), detail="GPU has fallen off the bus")
                for pci in log["fallen_off_bus"] if pci.lower() not in xid79]
    for event in log["xids"]:
        fault = faults.catalogue()[code(event["xid"])]
        severity = SEVERITY.get(event["xid"], "fatal")
        findings.append(Finding(device=f"PCI {event['pci']}", metric="xid", value=event["xid"],
                                ok=severity == "application", fault=fault.code, action=fault.action,
                                detail=f"{fault.meaning.rstrip('.')} ({severity})"))
    findings.append(Finding(device="node", metric="xid_count", value=len(log["xids"]), ok=True))
    return findings


CHECK = Check(id="xid", order=20, tool="dmesg", steps=steps, parse=parse, judge=judge, needs=("gpu",), timeout_s=30,
              metrics={"xid_count": ""})
