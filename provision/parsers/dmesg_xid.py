"""Parse NVIDIA Xid events from kernel log text (``dmesg``, ``dmesg -T``,
``dmesg --time-format iso``, ``journalctl -k`` / syslog), whole or grepped.

The NVRM line is found anywhere on a line, so every timestamp style works:
``[  123.456]``, ``[Mon Jan  1 10:00:00 2024]``, ISO ``2024-01-01T10:00:00,123+00:00``
and ``Jan 01 10:00:00 host kernel:``. Formats: "NVRM: Xid (PCI:0000:52:00): 79,
pid=..., name=..., GPU has fallen off the bus." (R470+, ``pid``/``name`` quoted
or not) and the older "NVRM: Xid (PCI:0000:52:00): 79, GPU has fallen off the bus."
or "NVRM: Xid (0000:52:00): ...". ``pci`` is kept as printed; ``fallen_off_bus``
lists the lower-case "dddd:bb:dd" of GPUs with Xid 79 or an "NVRM: GPU
0000:a1:00.0: GPU has fallen off the bus." line.

Each Xid also carries ``pid`` and ``process`` (the ``pid=``/``name=`` fields of R470+, None
where absent or ``<unknown>``). Extras: the NVRM kernel-module version (``driver_version``) and nvidia-smi
"Unable to determine the device handle ..." lines of a pasted terminal. Kernel
logs have no end marker, so ``complete`` is always true. Raises ParseError when
no line looks like a kernel log line (timestamp prefix, "kernel:" or "NVRM:").
"""
from __future__ import annotations

import re

from provision.parsers._util import is_digits, lines, refuse, require_text, to_int

TOOL = "dmesg-xid"
TOOLS = (TOOL,)
# Trailing blanks are stripped in code: a lazy ``(.*?)\s*$`` is quadratic on a long run of spaces.
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\):\s*(\d+),\s*(.*)$")
_FALLEN = re.compile(r"NVRM: GPU (?:at PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})"
                     r"(?:\.\d)?: GPU has fallen off the bus")
_KERNEL_LINE = re.compile(r"^\s*(?:\[\s*\d+\.\d+\]|\[\w{3} \w{3}\s+\d+ [\d:]+ \d{4}\]|"
                          r"\d{4}-\d\d-\d\dT\d\d:\d\d|\w{3}\s+\d+ \d\d:\d\d:\d\d \S+ kernel:)|NVRM:")
_PREFIX = re.compile(r"^(?:pid='?([^,']*)'?,\s*)?(?:name=([^,]*),\s*)?")
_MODULE = re.compile(r"NVRM: loading NVIDIA UNIX \S+ Kernel Module\s+(\S+)")
_SMI_ERROR = re.compile(r"(Unable to determine the device handle for GPU\S*: .*)$")


def parse(text: str) -> dict:
    """Parse kernel log text into the contract's dict (see module doc)."""
    require_text(text, "dmesg/journal")
    rows = lines(text)
    if not any(_KERNEL_LINE.search(row) for row in rows):
        raise refuse("dmesg/journal", "no kernel log line (timestamp, 'kernel:' or 'NVRM:')")
    xids = [_xid(m, row) for row in rows for m in [_XID.search(row)] if m]
    unread = [row for row in rows if "NVRM: Xid" in row and not _XID.search(row)]
    if unread:  # an Xid the parser cannot read is never "no Xid": a cut line or a format not known here
        raise refuse("dmesg/journal", f"{len(unread)} Xid line(s) not of the form 'NVRM: Xid (PCI:<id>): <n>, "
                                      f"<message>', first: {unread[0].strip()[:120]!r}")
    fallen = [_short_pci(x["pci"]) for x in xids if x["xid"] == 79]
    fallen += [_short_pci(m.group(1)) for m in map(_FALLEN.search, rows) if m]
    module = next((m.group(1) for m in map(_MODULE.search, rows) if m), None)
    return {
        "tool": TOOL,
        "complete": True,
        "xids": xids,
        "unique_xids": sorted({x["xid"] for x in xids}),
        "affected_pci": list(dict.fromkeys(_short_pci(x["pci"]) for x in xids)),
        "fallen_off_bus": list(dict.fromkeys(fallen)),
        "driver_version": module,
        "nvidia_smi_errors": [m.group(1).rstrip() for m in map(_SMI_ERROR.search, rows) if m],
    }


def _xid(match: re.Match, row: str) -> dict:
    """One Xid event: number, PCI id as printed, message without pid/name, and the process the
    driver names (``pid`` int and ``name``; None where it prints ``<unknown>`` or nothing)."""
    stamp = row[:match.start()].strip().removesuffix("kernel:").rstrip()
    rest = match.group(3).rstrip()
    prefix = _PREFIX.match(rest)
    pid, name = (prefix.group(1), prefix.group(2)) if prefix else (None, None)
    return {"xid": to_int(match.group(2), "Xid"), "pci": match.group(1),
            "message": rest[prefix.end():] if prefix else rest, "timestamp": stamp or None,
            "pid": to_int(pid, "pid") if pid and is_digits(pid) else None,
            "process": name.strip() if name and name.strip() not in ("", "<unknown>") else None}


def _short_pci(pci: str) -> str:
    """"0000:A1:00.0" or "00000000:a1:00" -> "0000:a1:00" (domain, bus, device)."""
    parts = pci.lower().split(".")[0].split(":")
    if len(parts) == 3:
        parts[0] = parts[0][-4:]
    return ":".join(parts)
