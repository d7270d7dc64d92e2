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

from provision.parsers._util import (clean, integer, lines, non_negative, num, refuse, require_text, temperature,
                                     to_int)

TOOL = "nvidia-smi"
TOOLS = (TOOL,)
_BANNER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_ERROR = re.compile(r"(Unable to determine the device handle.*|NVIDIA-SMI has failed.*|"
                    r"No devices were found|Failed to initialize NVML.*)")
# A GPU's two table lines are read by tokens: patterns with a lazy name before ``\s+On\s*$``, or
# ``(\S+)\s*/\s*(\S+)\s*$``, backtrack quadratically on long runs of blanks or slashes.
_PERSISTENCE = {"On", "Off", "ERR!", "N/A", "TCC", "WDDM"}
_LINE2 = re.compile(r"\s*(\S+)\s+(\S+)\s+(\S+)\s+(.*)")
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
        match = _line1(cells[0]) if len(cells) == 3 else None
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


def _line1(cell: str) -> dict | None:
    """Index, name and persistence mode of a GPU's first line ("0  NVIDIA H100 80GB HBM3  On")."""
    text = cell.strip()
    tokens = text.split()
    if len(tokens) < 2 or not re.fullmatch(r"\d+", tokens[0]) or tokens[-1] not in _PERSISTENCE:
        return None
    gap = text[len(tokens[0]):len(text) - len(tokens[-1])]
    if len(tokens) == 2 and len(gap) < 2:  # an empty name still sits between two blanks
        return None
    return {"index": tokens[0], "name": gap.strip(), "pm": tokens[-1]}


def _line2(cell: str) -> dict:
    """Fan, temperature, perf state, power and cap of a GPU's second line ("N/A 34C P0 70W / 700W")."""
    match = _LINE2.fullmatch(cell.rstrip())
    split = _power_cap(match.group(4).split()) if match else None
    if match is None or split is None:
        return {}
    return {"fan": match.group(1), "temp": match.group(2), "perf": match.group(3),
            "power": split[0], "cap": split[1]}


def _power_cap(tokens: list[str]) -> tuple[str, str] | None:
    """"70W / 700W" (or "70W/700W", "70W /700W", "70W/ 700W") as (power, cap); None otherwise."""
    if len(tokens) == 3 and tokens[1] == "/":
        return tokens[0], tokens[2]
    if len(tokens) == 2 and tokens[1].startswith("/") and len(tokens[1]) > 1:
        return tokens[0], tokens[1][1:]
    if len(tokens) == 2 and tokens[0].endswith("/") and len(tokens[0]) > 1:
        return tokens[0][:-1], tokens[1]
    slash = tokens[0].rfind("/", 1, len(tokens[0]) - 1) if len(tokens) == 1 else -1
    return (tokens[0][:slash], tokens[0][slash + 1:]) if slash > 0 else None


def _gpu(line1: dict, cells1: list[str], cells2: list[str]) -> dict:
    """One GPU from its two table lines."""
    fields = _line2(cells2[0]) if cells2 else {}
    memory = cells2[1].split("/") if len(cells2) > 1 else []
    bus = _BUS.search(cells1[1])
    index = to_int(line1["index"], "GPU index")
    def measure(text: str | None, what: str, unit: str) -> int | float | None:
        return non_negative(num(text), f"GPU {index} {what}", unit)
    gpu = {
        "index": index,
        "name": line1["name"],
        "bus_id": bus.group(1) if bus else None,
        "persistence_mode": clean(line1["pm"]),
        "fan_pct": measure(fields.get("fan"), "fan", "%"),
        "temp_C": temperature(num(fields.get("temp")), f"GPU {index} temperature"),
        "perf": clean(fields.get("perf")),
        "power_W": measure(fields.get("power"), "power", "W"),
        "power_cap_W": measure(fields.get("cap"), "power cap", "W"),
        "memory_used_MiB": measure(memory[0], "memory used", "MiB") if len(memory) == 2 else None,
        "memory_total_MiB": measure(memory[1], "memory total", "MiB") if len(memory) == 2 else None,
        "util_pct": non_negative(integer(cells2[2].split()[0]), f"GPU {index} utilisation", "%")
        if len(cells2) > 2 and cells2[2].split() else None,
        "ecc_uncorrected_volatile": non_negative(integer(cells1[2]), f"GPU {index} volatile uncorr. ECC"),
    }
    gpu["faults"] = _faults(line1, fields, cells1, cells2)
    return gpu


def _faults(line1: dict, fields: dict, cells1: list[str], cells2: list[str]) -> list[str]:
    """"<field> ERR!" for every cell nvidia-smi could not read."""
    pad = ["", "", ""]
    cells1, cells2 = (cells1 + pad)[:3], (cells2 + pad)[:3]
    named = {"name": line1["name"], "persistence": line1["pm"],
             **(fields or {"sensors": cells2[0]}),
             "bus": cells1[1], "ecc": cells1[2], "memory": cells2[1], "util": cells2[2]}
    return [f"{name} ERR!" for name, cell in named.items() if "ERR!" in cell]
