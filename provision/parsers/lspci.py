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
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, require_text, to_float, to_int

TOOL = "lspci"
TOOLS = (TOOL,)
_DEVICE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+\S")
_CLASS = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+([^:\[]+)")
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
    return {"tool": TOOL, "complete": all("LnkSta" in b for b in blocks), "devices": devices}


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
