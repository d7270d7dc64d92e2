"""Parse ``dmidecode -t bios -t system`` (dmidecode 2.x-3.x): BIOS and system identity.

dmidecode prints one block per SMBIOS structure: a "Handle 0x0000, DMI type 0, 26 bytes" line, the
structure's name ("BIOS Information", "System Information") and TAB-indented "Key: value" lines
(dmidecode.c, dmi_decode()). ``bios`` is {``vendor``, ``version``, ``release_date``} from the type-0
block ("Vendor", "Version", "Release Date"), ``system`` {``manufacturer``, ``product_name``,
``serial_number``} from the type-1 block ("Manufacturer", "Product Name", "Serial Number"). Values are
as printed, stripped; "Not Specified", "Not Present", "Unknown", "--" (scrubbed) and empty are None.
Either record is None when its block is absent. Raises ParseError when neither a "BIOS Information"
nor a "System Information" block is present. ``complete`` is false when a block has no values.
"""
from __future__ import annotations

import re

from provision.parsers._util import clean, lines, refuse, require_text

TOOL = "dmidecode"
TOOLS = (TOOL,)
_HANDLE = re.compile(r"^Handle 0x[0-9A-Fa-f]{1,8}, DMI type (\d{1,3}),")
_FIELDS = {0: ("bios", {"Vendor": "vendor", "Version": "version", "Release Date": "release_date"}),
           1: ("system", {"Manufacturer": "manufacturer", "Product Name": "product_name",
                          "Serial Number": "serial_number"})}
_UNSET = {"not specified", "not present", "not available", "none"}


def parse(text: str) -> dict:
    """Parse dmidecode text into {"bios": ..., "system": ...} (see module doc)."""
    require_text(text, "dmidecode")
    found: dict[str, dict] = {}
    current: dict | None = None
    names: dict[str, str] = {}
    for row in lines(text):
        handle = _HANDLE.match(row)
        if handle:
            kind = _FIELDS.get(int(handle.group(1)))
            current = None
            if kind and kind[0] not in found:
                current = found.setdefault(kind[0], {})
                names = kind[1]
            continue
        if current is None or not row.startswith("\t") or row.startswith("\t\t"):
            continue
        key, colon, value = row.strip().partition(":")
        if colon and key in names:
            current.setdefault(names[key], _value(value))
    if not found:
        raise refuse("dmidecode", "no 'BIOS Information' (DMI type 0) or 'System Information' (type 1) block")
    records = {name: ({key: found[name].get(key) for key in fields.values()} if name in found else None)
               for name, fields in _FIELDS.values()}
    return {"tool": TOOL, "complete": all(bool(found[name]) for name in found), **records}


def _value(text: str) -> str | None:
    value = clean(text)
    return None if value is None or value.lower() in _UNSET else value
