"""Parse ``nvidia-smi topo -m``.

Handles the TAB-separated output of every driver and copies whose tabs were
expanded to spaces; the 418-era layout (GPU columns + "CPU Affinity" only, HCAs
named ``mlx5_N`` directly in the header), the 450+ layout ("NUMA Affinity"), and
the 530+ layout (``NICn`` columns, "GPU NUMA ID" column, "NIC Legend:" block).
Cells ("X", "NV12", "SYS", "PIX", ...) are kept as printed; "N/A" affinity is None.

Raises ParseError when no header row starting with "GPU0" is present, or when a header column
starting with "GPU" is not ``GPU<index>`` (an index of at most 4 digits; a node has 8, a rack 72).
``complete`` is false when fewer matrix rows than matrix columns were read.
"""
from __future__ import annotations

import re

from provision.parsers._util import clean, lines, refuse, require_text

TOOL = "nvidia-smi-topo"
TOOLS = (TOOL,)
_AFFINITY = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity",
             "GPU NUMA ID": "gpu_numa_id"}
_GPU = re.compile(r"GPU\d{1,4}")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def parse(text: str) -> dict:
    """Parse ``nvidia-smi topo -m`` text into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi topo -m")
    rows = lines(text)
    start = next((i for i, row in enumerate(rows) if _is_header(row)), None)
    if start is None:
        raise refuse("nvidia-smi topo -m", "no header row starting with 'GPU0'")
    columns, extra = _header(rows[start])
    matrix, affinity = _body(rows[start + 1:], columns, extra)
    legend = {m.group(1): m.group(2) for m in map(_LEGEND.match, rows[start + 1:]) if m}
    return {
        "tool": TOOL,
        "complete": len(matrix) == len(columns),
        "matrix": matrix,
        "cpu_affinity": {dev: a.get("cpu_affinity") for dev, a in affinity.items()},
        "affinity": affinity,
        "nic_legend": legend,
    }


def _is_header(row: str) -> bool:
    """The header starts with GPU0; the GPU0 matrix row has "X" after it."""
    tokens = row.split()
    return len(tokens) > 1 and tokens[0] == "GPU0" and tokens[1] != "X"


def _header(row: str) -> tuple[list[str], list[str]]:
    """Matrix column names and the affinity column keys, in order."""
    names = [n.strip() for n in re.split(r"\t|\s{2,}", row.strip()) if n.strip()]
    columns = [n for n in names if n not in _AFFINITY]
    bad = next((n for n in columns if n.startswith("GPU") and not _GPU.fullmatch(n)), None)
    if bad is not None:
        raise refuse("nvidia-smi topo -m", f"header column {bad[:40]!r} is not GPU<index>")
    extra = [_AFFINITY[n] for n in names if n in _AFFINITY]
    return columns, extra


def _body(rows: list[str], columns: list[str], extra: list[str]) -> tuple[dict, dict]:
    """Matrix rows for each device named in the header, and GPU affinities."""
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str | None]] = {}
    names = set(columns)  # a set: a list lookup per row is quadratic on a header of many columns
    for row in rows:
        tokens = row.split()
        if not tokens or tokens[0] not in names or len(tokens) < len(columns) + 1:
            continue
        cells = tokens[1:len(columns) + 1]
        matrix[tokens[0]] = dict(zip(columns, cells))
        if tokens[0].startswith("GPU"):
            values = tokens[len(columns) + 1:]
            record: dict[str, str | None] = {key: None for key in _AFFINITY.values()}
            record.update({key: clean(v) for key, v in zip(extra, values)})
            affinity[tokens[0]] = record
    return matrix, affinity
