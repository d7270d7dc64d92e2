"""Parse ``/proc/net/bonding/bondN`` (Linux bonding driver v3.x and kernel-versioned).

Reads the bond header ("Bonding Mode", "MII Status", "Transmit Hash Policy",
"Currently Active Slave"), the 802.3ad block ("LACP rate", "Min links", "Active
Aggregator Info:" with its ID, ports, keys and partner MAC, indented with TABs or
spaces) and every "Slave Interface:" block, including newer kernels' "details
actor lacp pdu:" / "details partner lacp pdu:" sub-blocks (partner MAC and port
state come from those; older kernels print none, giving None).

Units: ``speed_Mbps`` Mb/s ("Unknown" is None). ``active_aggregator_id`` is None
outside 802.3ad. Raises ParseError without a "Bonding Mode:" line. ``complete`` is
false when a slave block stops before its "Aggregator ID" (802.3ad) or
"Link Failure Count" line, or the text does not end with a newline (the file always does).
"""
from __future__ import annotations

import re

from provision.parsers._util import clean, integer, lines, non_negative, num, refuse, require_text

TOOL = "bonding"
TOOLS = (TOOL,)


def parse(text: str) -> dict:
    """Parse a bonding status file into the contract's dict (see module doc)."""
    require_text(text, "/proc/net/bonding")
    bond, aggregator, slaves = _sections(lines(text))
    if "bonding mode" not in bond:
        raise refuse("/proc/net/bonding", "no 'Bonding Mode:' line")
    mode = bond["bonding mode"]
    lacp = "802.3ad" in mode
    version = re.search(r"Bonding Driver:\s*(\S+)", text)
    needed = "aggregator id" if lacp else "link failure count"
    return {
        "tool": TOOL,
        # a slave block cut after its last field reads as whole; the /proc file always ends with a
        # newline, so a text without one was cut short
        "complete": bool(slaves) and all(needed in s for s in slaves) and text.endswith("\n"),
        "driver_version": version.group(1) if version else None,
        "mode": mode,
        "mii_status": clean(bond.get("mii status")),
        "xmit_hash_policy": clean(bond.get("transmit hash policy")),
        "lacp_rate": clean(bond.get("lacp rate")),
        "min_links": _count(bond.get("min links"), "Min links"),
        "active_slave": clean(bond.get("currently active slave")),
        "active_aggregator_id": _count(aggregator.get("aggregator id"), "Aggregator ID") if lacp else None,
        "active_aggregator": _aggregator(aggregator) if lacp and aggregator else None,
        "slaves": [_slave(s) for s in slaves],
    }


def _sections(rows: list[str]) -> tuple[dict, dict, list[dict]]:
    """Bond-level pairs, Active Aggregator Info pairs, and one dict per slave."""
    bond: dict = {}
    aggregator: dict = {}
    slaves: list[dict] = []
    target, sub = bond, ""
    for row in rows:
        pair = _pair(row)
        if pair is None:
            continue
        indent, key, value = pair
        if key == "slave interface":
            slaves.append({"name": value})
            target, sub = slaves[-1], ""
        elif key == "active aggregator info":
            target, sub = aggregator, ""
        elif key.startswith("details ") and slaves:
            sub = "partner " if "partner" in key else "actor "
        else:
            if target is aggregator and not indent:
                target = bond
            target.setdefault((sub if indent else "") + key, value)
    return bond, aggregator, slaves


def _pair(row: str) -> tuple[str, str, str] | None:
    """(indent, lower-case key, value) of a "key: value" line, else None.

    String operations, not a regular expression: a pattern such as ``^(\\s*)([^:]+?)\\s*:``
    backtracks cubically on a long line of spaces without a colon.
    """
    head, colon, value = row.partition(":")
    key = head.strip()
    if not colon or not key:
        return None
    return row[:len(row) - len(row.lstrip())], key.lower(), value.strip()


def _count(text: str | None, what: str) -> int | None:
    """A non-negative integer field (ids, counts, keys, port states); None when absent."""
    return non_negative(integer(text), what)


def _aggregator(raw: dict) -> dict:
    """The active aggregator's id, port count, keys and partner MAC."""
    return {"id": _count(raw.get("aggregator id"), "Aggregator ID"),
            "ports": _count(raw.get("number of ports"), "Number of ports"),
            "actor_key": _count(raw.get("actor key"), "Actor Key"),
            "partner_key": _count(raw.get("partner key"), "Partner Key"),
            "partner_mac": clean(raw.get("partner mac address"))}


def _slave(raw: dict) -> dict:
    """One slave interface."""
    return {
        "name": raw["name"],
        "mii_status": clean(raw.get("mii status")),
        "speed_Mbps": non_negative(num(raw.get("speed")), f"{raw['name']} Speed", "Mb/s"),
        "duplex": clean(raw.get("duplex")),
        "link_failure_count": _count(raw.get("link failure count"), f"{raw['name']} Link Failure Count"),
        "aggregator_id": _count(raw.get("aggregator id"), f"{raw['name']} Aggregator ID"),
        "partner_mac": clean(raw.get("partner system mac address") or raw.get("partner mac address")),
        "actor_port_state": _count(raw.get("actor port state"), f"{raw['name']} actor port state"),
        "partner_port_state": _count(raw.get("partner port state"), f"{raw['name']} partner port state"),
        "permanent_hw_addr": clean(raw.get("permanent hw addr")),
    }
