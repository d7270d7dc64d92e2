"""Parse the default ``nvidia-smi`` table.

Handles the narrow layout of drivers up to 530 (79 columns, "NVIDIA-SMI 470.82.01
Driver Version: ... CUDA Version: ..."), the 535 layout (wider name cell) and the
550+ layout (89 columns, Bus-Id cell widened), with or without the "MIG M." third
line, and drivers too old to print "CUDA Version". Cells are read by the ``|``
separators and then by tokens, never by column offsets, so cell widths do not matter.

``complete`` is true when both the GPU table and the "Processes:" table that every
driver prints after it reached their closing borders.
Units: temperature C, power W, memory MiB, utilisation %. Placeholders ("N/A") are
None; every cell showing "ERR!" adds a fault string such as "fan ERR!".
Lines such as "Unable to determine the device handle for GPU...: Unknown Error" go
to ``errors``. Raises ParseError when the text has no "NVIDIA-SMI" banner and no
nvidia-smi error line.
"""
from __future__ import annotations

import re

from provision.parsers._util import clean, integer, lines, num, refuse, require_text

TOOL = "nvidia-smi"
TOOLS = (TOOL,)
_BANNER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_ERROR = re.compile(r"(Unable to determine the device handle.*|NVIDIA-SMI has failed.*|"
                    r"No devices were found|Failed to initialize NVML.*)")
_LINE1 = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<pm>On|Off|ERR!|N/A|TCC|WDDM)\s*$")
_LINE2 = re.compile(r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+"
                    r"(?P<power>\S+)\s*/\s*(?P<cap>\S+)\s*$")
_BUS = re.compile(r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")


def parse(text: str) -> dict:
    """Parse ``nvidia-smi`` table text into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi")
    rows = lines(text)
    banner = next((m for m in map(_BANNER.search, rows) if m), None)
    errors = [m.group(1).strip() for m in map(_ERROR.search, rows) if m]
    if banner is None and not errors:
        raise refuse("nvidia-smi", "no 'NVIDIA-SMI ... Driver Version' banner line")
    gpus, closed = _gpus(rows)
    return {
        "tool": TOOL,
        "complete": banner is not None and closed and _processes_closed(rows),
        "smi_version": banner.group(1) if banner else None,
        "driver_version": banner.group(2) if banner else None,
        "cuda_version": clean(banner.group(3)) if banner else None,
        "gpus": gpus,
        "errors": errors,
    }


def _gpus(rows: list[str]) -> tuple[list[dict], bool]:
    """GPU records from the first table; True when that table reached its closing border."""
    table = _gpu_table(rows)
    gpus: list[dict] = []
    for i, row in enumerate(table):
        cells = _cells(row)
        match = _LINE1.match(cells[0]) if len(cells) == 3 else None
        if match and i + 1 < len(table):
            gpus.append(_gpu(match, cells, _cells(table[i + 1])))
    closed = bool(table) and table[-1].startswith("+")
    return gpus, closed


def _processes_closed(rows: list[str]) -> bool:
    """The "Processes:" table, printed last by every driver, reached its bottom border."""
    start = next((i for i, r in enumerate(rows) if r.startswith("| Processes:")), None)
    if start is None:
        return False
    rule = next((i for i in range(start, len(rows)) if rows[i].startswith("|=")), None)
    return rule is not None and any(r.startswith("+-") for r in rows[rule:])


def _gpu_table(rows: list[str]) -> list[str]:
    """Lines of the GPU table: after the ``|====`` header rule, up to its end."""
    start = next((i for i, r in enumerate(rows) if r.startswith("|=")), None)
    if start is None:
        return []
    table = []
    for row in rows[start + 1:]:
        if not row.strip() or not row.startswith(("|", "+")):
            break
        table.append(row.rstrip())
    return table


def _cells(row: str) -> list[str]:
    """The cells between ``|`` separators of one table line."""
    return row.strip().strip("|").split("|")


def _gpu(line1: re.Match, cells1: list[str], cells2: list[str]) -> dict:
    """One GPU from its two table lines."""
    line2 = _LINE2.match(cells2[0]) if cells2 else None
    fields = line2.groupdict() if line2 else {}
    memory = cells2[1].split("/") if len(cells2) > 1 else []
    bus = _BUS.search(cells1[1])
    gpu = {
        "index": int(line1.group("index")),
        "name": line1.group("name").strip(),
        "bus_id": bus.group(1) if bus else None,
        "persistence_mode": clean(line1.group("pm")),
        "fan_pct": num(fields.get("fan")),
        "temp_C": num(fields.get("temp")),
        "perf": clean(fields.get("perf")),
        "power_W": num(fields.get("power")),
        "power_cap_W": num(fields.get("cap")),
        "memory_used_MiB": num(memory[0]) if len(memory) == 2 else None,
        "memory_total_MiB": num(memory[1]) if len(memory) == 2 else None,
        "util_pct": integer(cells2[2].split()[0]) if len(cells2) > 2 and cells2[2].split() else None,
        "ecc_uncorrected_volatile": integer(cells1[2]),
    }
    gpu["faults"] = _faults(line1, fields, cells1, cells2)
    return gpu


def _faults(line1: re.Match, fields: dict, cells1: list[str], cells2: list[str]) -> list[str]:
    """"<field> ERR!" for every cell nvidia-smi could not read."""
    pad = ["", "", ""]
    cells1, cells2 = (cells1 + pad)[:3], (cells2 + pad)[:3]
    named = {"name": line1.group("name"), "persistence": line1.group("pm"),
             **(fields or {"sensors": cells2[0]}),
             "bus": cells1[1], "ecc": cells1[2], "memory": cells2[1], "util": cells2[2]}
    return [f"{name} ERR!" for name, cell in named.items() if "ERR!" in cell]
