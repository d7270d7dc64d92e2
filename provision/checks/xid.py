"""xid: NVIDIA Xid errors and "fallen off the bus" in the kernel log since boot.

Tool: ``dmesg`` (parser ``provision.parsers.dmesg_xid``: every timestamp style). Meanings,
severities and actions follow NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors).
Application-level Xids (13, 31, 43, 45) are reported but do not fail a node; every other
known or unknown Xid does.
"""
from __future__ import annotations

from provision.checks.base import Check, Finding, Step
from provision.parsers import parse_tool

DRAIN_RMA = "drain the node; reseat the GPU, then RMA if it recurs"
RESET = "drain, reset the GPU or reboot; RMA if it recurs"
# Xid -> (meaning, severity, action). severity "application" does not fail the node.
XID_TABLE = {
    13: ("Graphics engine exception (application fault)", "application", "check the application"),
    31: ("GPU memory page fault (application fault)", "application", "check the application"),
    43: ("GPU stopped processing (application fault)", "application", "check the application"),
    45: ("Preemptive cleanup after a previous error", "application", "look for the Xid before it"),
    48: ("Double-bit ECC error (DBE)", "fatal", RESET),
    61: ("Internal micro-controller breakpoint/warning", "fatal", RESET),
    62: ("Internal micro-controller halt", "fatal", RESET),
    63: ("ECC page retirement or row remapping recorded", "warning", RESET),
    64: ("ECC page retirement or row remapping failure", "fatal", DRAIN_RMA),
    74: ("NVLink error", "fatal", "drain; check NVLink/NVSwitch and the baseboard, reset the GPU"),
    79: ("GPU has fallen off the bus", "fatal", DRAIN_RMA),
    92: ("High single-bit ECC error rate", "warning", "watch; RMA if it keeps rising"),
    94: ("Contained ECC error", "fatal", RESET),
    95: ("Uncontained ECC error", "fatal", RESET),
    119: ("GSP RPC timeout", "fatal", RESET),
    120: ("GSP error", "fatal", RESET),
}


def steps(profile, host) -> list[Step]:
    return [Step("", ["dmesg"])]


def parse(text: str) -> dict:
    return parse_tool("dmesg-xid", text)


def judge(parsed: dict, profile) -> list[Finding]:
    log = parsed[""]
    xid79 = {e["pci"].lower() for e in log["xids"] if e["xid"] == 79}
    findings = [Finding(device=f"PCI {pci}", metric="fallen_off_bus", value=True, ok=False, fault="XID_79",
                        action=DRAIN_RMA, detail="GPU has fallen off the bus")
                for pci in log["fallen_off_bus"] if pci.lower() not in xid79]
    for event in log["xids"]:
        meaning, severity, action = XID_TABLE.get(event["xid"], ("Unknown Xid", "fatal", RESET))
        findings.append(Finding(device=f"PCI {event['pci']}", metric="xid", value=event["xid"],
                                ok=severity == "application", fault=f"XID_{event['xid']}", action=action,
                                detail=f"{meaning} ({severity})"))
    findings.append(Finding(device="node", metric="xid_count", value=len(log["xids"]), ok=True))
    return findings


CHECK = Check(id="xid", tool="dmesg", steps=steps, parse=parse, judge=judge, needs=("gpu",), timeout_s=30,
              metrics={"xid_count": ""})
