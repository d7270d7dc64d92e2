"""Xids a health check keeps failing on until a reboot or ``--ack-xid``, even once the kernel log no longer holds them.

The xid check judges the kernel log (``dmesg``) as it is now. Between two calls the ring buffer can wrap (a chatty
node) or someone clears it (``dmesg -C``), and an Xid that drained the node would then vanish from the next call's
log: the node would pass and be resumed with the fault still there. So a call whose xid check failed keeps its failing
Xids in last.json (``latch``: PCI id, Xid, seconds since boot); the next call on the same boot adds each kept Xid
that its own log no longer reaches (the log's first stamp is later than the Xid's, or the log has no stamped line) to
its xid result as a failure. A kept Xid that the log still reaches is judged from the log itself (present: the check
fails on it; absent from a log that still covers its time: it was not logged on this boot, as after a simulated
heal). Stamps are dmesg's ``[seconds.micro]`` since boot (printk's per-CPU clock: ordered to within the CPUs' skew).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks import xid as xid_check
from provision.parsers import dmesg_xid
from provision.results.model import CheckResult, Finding, Outcome


def latch(result: CheckResult | None, text: str, carried: list[dict]) -> list[dict]:
    """What to keep for the next call: the failing Xids of ``result`` (the xid check's, on the log ``text``) with
    their stamps, and the ``carried`` ones it kept failing on; [] when it passed; ``carried`` as it was when it did
    not judge (not in this call's checks, cut by the budget, an error): a call that did not look keeps what it was
    given (``--ack-xid`` gives nothing)."""
    if result is None or result.outcome in (Outcome.ERROR, Outcome.SKIPPED):
        return [dict(k) for k in carried]
    if result.outcome is not Outcome.FAIL:
        return []
    failing = {(f.device, f.value) for f in result.findings if not f.ok and f.metric == "xid"}
    kept = [dict(k) for k in carried]
    try:
        events = dmesg_xid.parse(text)["xids"] if text.strip() else []
    except Exception:  # noqa: BLE001 - a log the parser refuses made the check an error, never a failure
        events = []
    for event in events:
        stamp = _stamp(event.get("timestamp") or "")
        if stamp is not None and (f"PCI {event['pci']}", event["xid"]) in failing:
            row = {"pci": event["pci"], "xid": event["xid"], "stamp_s": stamp}
            if row not in kept:
                kept.append(row)
    return kept


def carry(result: CheckResult | None, text: str, kept: list[dict]) -> list[dict]:
    """Add to ``result`` (the xid check's, on the log ``text``) a failing finding for each ``kept`` Xid the log no
    longer reaches; returns those. The result becomes a failure when it had passed."""
    if result is None or result.outcome in (Outcome.ERROR, Outcome.SKIPPED) or not kept:
        return []
    first = first_stamp(text)
    gone = [k for k in kept if first is None or first > k["stamp_s"]]
    for row in gone:
        code = xid_check.code(row["xid"])
        result.findings.append(Finding(
            device=f"PCI {row['pci']}", metric="xid", value=row["xid"], ok=False, fault=code,
            action=faults.action(code), detail=f"logged at {row['stamp_s']:.6f} s since boot and judged by an earlier "
            "health check; no longer in the kernel log (wrapped or cleared): failing until a reboot or --ack-xid"))
    if gone:
        result.outcome = Outcome.FAIL
        result.message = (f"{len(gone)} Xid(s) an earlier health check failed on, no longer in the kernel log: "
                          + ", ".join(f"xid {r['xid']} on PCI {r['pci']}" for r in gone[:4]) + "; " + result.message)
    return gone


def first_stamp(text: str) -> float | None:
    """The ``[seconds.micro]`` stamp of the first kernel log line of ``text`` that has one (None when none has)."""
    for line in text.splitlines():
        stamp = _stamp(line)
        if stamp is not None:
            return stamp
    return None


def _stamp(text: str) -> float | None:
    match = xid_check.STAMP.match(text)
    return float(match.group(1)) if match else None
