"""``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]`` for the simulated GPUs.

Field names, header units and value formats follow ``nvidia-smi --help-query-gpu`` and the
capture smi_query_csv_b300x7_in_watch (``power.draw [W]`` -> ``182.89 W``,
``temperature.gpu`` -> ``28``). Unsupported values print ``[N/A]`` like the real tool.
"""
from __future__ import annotations

import simhw

NA = "[N/A]"


def _ecc(gpu: dict, scope: str, kind: str) -> int:
    """Total corrected or uncorrected ECC errors (SRAM + DRAM) in ``scope``."""
    block = gpu["ecc"][scope]
    return int(block[f"sram_{kind}"]) + int(block[f"dram_{kind}"])


def _retired_pending(gpu: dict) -> str:
    """``retired_pages.pending``: Yes/No on page-retirement boards, N/A on row-remap ones."""
    pages = gpu.get("retired_pages")
    return NA if pages is None else ("Yes" if pages.get("pending") else "No")


def _remap(gpu: dict, key: str) -> str:
    """A remapped-rows counter or flag, N/A on page-retirement boards."""
    rows = gpu.get("remapped_rows")
    if rows is None:
        return NA
    value = rows[key]
    return ("Yes" if value else "No") if isinstance(value, bool) else str(value)


# name -> (unit shown in the header and after the value, or None; value function)
FIELDS = {
    "index": (None, lambda i, g, c: str(i)),
    "count": (None, lambda i, g, c: str(c["attached"])),
    "name": (None, lambda i, g, c: g["model"]),
    "pci.bus_id": (None, lambda i, g, c: g["bus_id"]),
    "driver_version": (None, lambda i, g, c: c["driver"]["version"]),
    "serial": (None, lambda i, g, c: g["serial"]),
    "uuid": (None, lambda i, g, c: g["uuid"]),
    "persistence_mode": (None, lambda i, g, c: simhw.persistence_mode(g, c["persistence"] == "Enabled")),
    "pstate": (None, lambda i, g, c: "P0"),
    "temperature.gpu": (None, lambda i, g, c: str(g["temp_C"])),
    "power.draw": ("W", lambda i, g, c: f"{g['power_W']:.2f}"),
    "power.limit": ("W", lambda i, g, c: f"{simhw.power_limit_W(g):.2f}"),
    "enforced.power.limit": ("W", lambda i, g, c: f"{simhw.power_limit_W(g):.2f}"),
    "memory.total": ("MiB", lambda i, g, c: str(g["memory_total_MiB"])),
    "memory.used": ("MiB", lambda i, g, c: str(g.get("memory_used_MiB", 0))),
    "memory.free": ("MiB", lambda i, g, c: str(g["memory_total_MiB"] - g.get("memory_used_MiB", 0))),
    "utilization.gpu": ("%", lambda i, g, c: "0"),
    "utilization.memory": ("%", lambda i, g, c: "0"),
    "fan.speed": ("%", lambda i, g, c: None),
    "clocks.sm": ("MHz", lambda i, g, c: str(g["clocks"]["sm"])),
    "clocks.gr": ("MHz", lambda i, g, c: str(g["clocks"]["graphics"])),
    "clocks.mem": ("MHz", lambda i, g, c: str(g["clocks"]["memory"])),
    "clocks.max.sm": ("MHz", lambda i, g, c: str(g["clocks"]["max_sm"])),
    "clocks.max.gr": ("MHz", lambda i, g, c: str(g["clocks"]["max_graphics"])),
    "clocks.max.mem": ("MHz", lambda i, g, c: str(g["clocks"]["max_memory"])),
    "pcie.link.gen.current": (None, lambda i, g, c: str(g["pcie"]["gen_current"])),
    "pcie.link.gen.gpucurrent": (None, lambda i, g, c: str(g["pcie"]["gen_current"])),
    "pcie.link.gen.max": (None, lambda i, g, c: str(g["pcie"]["gen_max"])),
    "pcie.link.gen.gpumax": (None, lambda i, g, c: str(g["pcie"]["gen_max"])),
    "pcie.link.width.current": (None, lambda i, g, c: str(g["pcie"]["width_current"])),
    "pcie.link.width.max": (None, lambda i, g, c: str(g["pcie"]["width_max"])),
    "ecc.mode.current": (None, lambda i, g, c: "Enabled"),
    "ecc.errors.uncorrected.volatile.total": (None, lambda i, g, c: str(_ecc(g, "volatile", "uncorrectable"))),
    "ecc.errors.corrected.volatile.total": (None, lambda i, g, c: str(_ecc(g, "volatile", "correctable"))),
    "ecc.errors.uncorrected.aggregate.total": (None, lambda i, g, c: str(_ecc(g, "aggregate", "uncorrectable"))),
    "ecc.errors.corrected.aggregate.total": (None, lambda i, g, c: str(_ecc(g, "aggregate", "correctable"))),
    "retired_pages.pending": (None, lambda i, g, c: _retired_pending(g)),
    "remapped_rows.correctable": (None, lambda i, g, c: _remap(g, "correctable")),
    "remapped_rows.uncorrectable": (None, lambda i, g, c: _remap(g, "uncorrectable")),
    "remapped_rows.pending": (None, lambda i, g, c: _remap(g, "pending")),
    "remapped_rows.failure": (None, lambda i, g, c: _remap(g, "failure")),
}
ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial", "gpu_uuid": "uuid",
           "persistence.mode": "persistence_mode"}


def _cell(field: str, index: int, gpu: dict, ctx: dict, units: bool) -> str:
    """One value as printed: number plus unit, or ``[N/A]``."""
    unit, fn = FIELDS[field]
    value = fn(index, gpu, ctx)
    if value is None or value == NA:
        return NA
    return f"{value} {unit}" if unit and units else value


def render(pairs: list[tuple[int, dict]], query: str, fmt: str, ctx: dict) -> tuple[str, int]:
    """CSV text and exit status for ``--query-gpu=query --format=fmt``."""
    opts = {o.strip() for o in fmt.split(",")}
    fields = []
    for raw in (f.strip() for f in query.split(",") if f.strip()):
        name = ALIASES.get(raw, raw)
        if name not in FIELDS:
            return f'Field "{raw}" is not a valid field to query.\n\n', 2
        fields.append((raw, name))
    lines = []
    if "noheader" not in opts:
        lines.append(", ".join(f"{raw} [{FIELDS[n][0]}]" if FIELDS[n][0] else raw for raw, n in fields))
    units = "nounits" not in opts
    for index, gpu in pairs:
        lines.append(", ".join(_cell(n, index, gpu, ctx, units) for _, n in fields))
    return "".join(line + "\n" for line in lines), 0
