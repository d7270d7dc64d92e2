"""Parse PCIe link capability and status from ``lspci -vv``/``-vvv`` (pciutils 3.x).

Reads full device blocks ("19:00.0 3D controller: ..." or with a domain,
"0000:19:00.0 ...") or bare "LnkCap:"/"LnkSta:" lines cut from one (then ``bdf``
is None). "LnkCap2"/"LnkSta2"/"LnkCtl2" lines are a different register and are
ignored. Speeds are GT/s ("2.5GT/s", "16GT/s"; "unknown" is None), widths lanes
("x16" -> 16). ``downgraded`` is true when LnkSta speed or width is below LnkCap
(lspci 3.6+ also prints "(downgraded)"); ``downgraded_reason`` says which.
A device without both lines is left out. ``class`` is the device's class from its block's
header ("3D controller", "Infiniband controller"; None for bare lines). Raises ParseError when
no LnkCap or LnkSta line is present. ``complete`` is false when a LnkCap has no LnkSta after it.

``blocks``: every device block ("BDF class: description" header) in order, with or without link
lines, each {``bdf``, ``class``, ``description`` (the header after "class: "), ``port_type`` (from
"Express (v2) Root Port (Slot+)": "Root Port", "Downstream Port", "Upstream Port", "Endpoint",
"Legacy Endpoint", "Root Complex Integrated Endpoint", ...; None without an Express capability),
``bus`` ({"primary", "secondary", "subordinate"} as ints from the hex of a bridge's
"Bus: primary=03, secondary=06, subordinate=06" line; None without one), ``acs_cap`` and ``acs_ctl``
({flag: bool} for the "ACSCap:"/"ACSCtl:" flags as printed, "SrcValid+" -> True; None where the
block has no Access Control Services capability, or lspci ran without root and printed
"Capabilities: <access denied>")}. Bare LnkCap/LnkSta lines without a header give no block.
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, require_text, to_float, to_int

TOOL = "lspci"
TOOLS = (TOOL,)
_DEVICE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+\S")
_CLASS = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+([^:\[]+)")
_HEADER = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:]+):\s?(.*)$")
_EXPRESS = re.compile(r"^Capabilities: \[[0-9a-fA-F]+\] Express (?:\(v\d+\) )?([A-Za-z][A-Za-z ]*?)(?: \(|,|$)")
_BUS = re.compile(r"^Bus: primary=([0-9a-fA-F]{2,8}), secondary=([0-9a-fA-F]{2,8}), subordinate=([0-9a-fA-F]{2,8})")
_LINK = re.compile(r"^\s*(LnkCap|LnkSta):\s*(.*)$")
_SPEED = re.compile(r"Speed\s+([\d.]+)GT/s|Speed\s+(unknown)")
_WIDTH = re.compile(r"Width\s+x(\d+)")


def parse(text: str) -> dict:
    """Parse lspci text into the contract's dict (see module doc)."""
    require_text(text, "lspci -vv")
    blocks: list[dict] = []
    current: dict = {"bdf": None}
    for row in lines(text):
        device, link = _DEVICE.match(row), _LINK.match(row)
        if device:
            kind = _CLASS.match(row)
            current = {"bdf": device.group(1), "class": kind.group(1).strip() if kind else None}
        elif link:
            if link.group(1) == "LnkCap" and "LnkCap" in current:
                current = {"bdf": current["bdf"], "class": current.get("class")}
            current[link.group(1)] = link.group(2)
            if not blocks or blocks[-1] is not current:  # a block is only ever the newest one
                blocks.append(current)
    if not blocks:
        raise refuse("lspci -vv", "no 'LnkCap:' or 'LnkSta:' line")
    devices = [_device(b) for b in blocks if "LnkCap" in b and "LnkSta" in b]
    return {"tool": TOOL, "complete": all("LnkSta" in b for b in blocks), "devices": devices,
            "blocks": _blocks(text)}


def _blocks(text: str) -> list[dict]:
    """Every device block's header, port type, bus numbers and ACS flags (see module doc)."""
    out: list[dict] = []
    for row in lines(text):
        header = _HEADER.match(row)
        if header:
            out.append({"bdf": header.group(1), "class": header.group(2).strip(),
                        "description": header.group(3).strip(), "port_type": None, "bus": None,
                        "acs_cap": None, "acs_ctl": None})
            continue
        if not out:
            continue
        stripped = row.strip()
        block = out[-1]
        if stripped.startswith("Bus: primary=") and block["bus"] is None:
            block["bus"] = _bus(stripped)
        elif stripped.startswith(("ACSCap:", "ACSCtl:")):
            block["acs_cap" if stripped.startswith("ACSCap:") else "acs_ctl"] = _flags(stripped[7:])
        elif block["port_type"] is None and (express := _EXPRESS.search(stripped)):
            block["port_type"] = express.group(1).strip()
    return out


def _bus(text: str) -> dict | None:
    """{"primary", "secondary", "subordinate"} from "Bus: primary=00, secondary=01, subordinate=01, ..."."""
    match = _BUS.match(text)
    if not match:
        return None
    return {key: to_int(str(int(value, 16)), f"bus {key}")
            for key, value in zip(("primary", "secondary", "subordinate"), match.groups())}


def _flags(text: str) -> dict[str, bool]:
    """{"SrcValid": True, "TransBlk": False, ...} from "SrcValid+ TransBlk- ..."."""
    return {token[:-1]: token.endswith("+") for token in text.split() if len(token) > 1 and token[-1] in "+-"}


def _device(block: dict) -> dict:
    """Link capability versus status of one device."""
    cap_speed, cap_width = _speed(block["LnkCap"]), _width(block["LnkCap"])
    sta_speed, sta_width = _speed(block["LnkSta"]), _width(block["LnkSta"])
    reasons = []
    if cap_speed is not None and sta_speed is not None and sta_speed < cap_speed:
        reasons.append("speed")
    if cap_width is not None and sta_width is not None and sta_width < cap_width:
        reasons.append("width")
    return {"bdf": block["bdf"], "class": block.get("class"),
            "lnkcap_speed_GTps": cap_speed, "lnkcap_width": cap_width,
            "lnksta_speed_GTps": sta_speed, "lnksta_width": sta_width,
            "downgraded": bool(reasons), "downgraded_reason": ",".join(reasons) or None}


def _speed(text: str) -> float | None:
    """Link speed in GT/s, None when "unknown"."""
    match = _SPEED.search(text)
    return to_float(match.group(1), "link speed") if match and match.group(1) else None


def _width(text: str) -> int | None:
    """Link width in lanes."""
    match = _WIDTH.search(text)
    return to_int(match.group(1), "link width") if match else None
