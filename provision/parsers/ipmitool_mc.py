"""Parse ``ipmitool mc info`` (alias ``bmc info``; ipmitool 1.8.x): the BMC's Get Device ID answer.

ipmitool prints "Key<blanks>: value" lines (lib/ipmi_mc.c, ipmi_mc_get_deviceid(): "Device ID",
"Device Revision", "Firmware Revision", "IPMI Version", "Manufacturer ID", "Manufacturer Name",
"Product ID", "Product Name", "Device Available", "Provides Device SDRs"), then "Additional Device
Support :" and "Aux Firmware Rev Info     :" each followed by indented lines. ``aux_firmware_revision``
is the aux bytes as printed joined with spaces ("0x19 0x01 0x00 0x00"), None when absent. Values are
strings as printed ("Firmware Revision" "1.74", "IPMI Version" "2.0"); "Unknown" names are kept.
Raises ParseError without a "Firmware Revision" line. ``complete`` is false without "Device ID".
"""
from __future__ import annotations

from provision.parsers._util import lines, refuse, require_text

TOOL = "ipmitool-mc-info"
TOOLS = (TOOL,)
_KEYS = {"device id": "device_id", "firmware revision": "firmware_revision", "ipmi version": "ipmi_version",
         "manufacturer name": "manufacturer_name", "product name": "product_name"}


def parse(text: str) -> dict:
    """Parse ``ipmitool mc info`` text (see module doc)."""
    require_text(text, "ipmitool mc info")
    record: dict = {key: None for key in _KEYS.values()}
    for row in lines(text):
        key, colon, value = row.partition(":")
        if not colon or row[:1].isspace():
            continue
        name = key.strip().lower()
        if name in _KEYS and record[_KEYS[name]] is None:
            record[_KEYS[name]] = value.strip() or None
    if record["firmware_revision"] is None:
        raise refuse("ipmitool mc info", "no 'Firmware Revision' line")
    return {"tool": TOOL, "complete": record["device_id"] is not None, **record,
            "aux_firmware_revision": _aux(text)}


def _aux(text: str) -> str | None:
    """The indented lines after "Aux Firmware Rev Info", joined; None without that line."""
    rows = lines(text)
    for i, row in enumerate(rows):
        if row.partition(":")[0].strip().lower() == "aux firmware rev info":
            values = []
            for follow in map(rows.__getitem__, range(i + 1, len(rows))):
                if not follow[:1].isspace() or not follow.strip():
                    break
                values.append(follow.strip())
            return " ".join(values) or None
    return None
