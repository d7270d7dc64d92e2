"""Parse ``dcgmi diag -r 1|2|3|4 [-v]`` tables (DCGM 2.x and 3.x; 4.x per-GPU rows).

The table has two cells per line. A test row is "| Name | Pass - All |" or
"| Name | Fail - GPU: 1 |"; a result split over several lines continues on rows
with an empty first cell ("|  | Fail - GPU: 1 |", or DCGM 4's "| | GPU1: Fail |").
"Warning" and "Info" rows belong to the test above them; their text wraps over
continuation rows at a fixed width, cutting words and numbers anywhere
("224|.2"), so continuation chunks are joined without adding spaces.

``results``: {test: {status ("Pass"/"Fail"/"Warn"/"Skip"), failed_gpus,
passed_gpus, detail (as printed), warnings, info}}. A test's status is the worst of
its parts. ``metrics`` holds numbers read from Info text per GPU: PCIe GB/s,
GFLOPS, power W, stress level, allocated bytes. Raises ParseError without a
"| Diagnostic | Result |" header or any test row. ``complete`` is false without
the closing border after the last row.
"""
from __future__ import annotations

import re
from typing import Any

from provision.parsers._util import lines, refuse, require_text, to_float, to_int

TOOL = "dcgmi-diag"
TOOLS = (TOOL,)
_STATUS = re.compile(r"^(Pass|Fail|Warn|Skip)\b\s*(?:-\s*(.*))?$")
_PER_GPU = re.compile(r"^GPU\s*(\d+)\s*:\s*(Pass|Fail|Warn|Skip)\b")
_RANK = {"Fail": 3, "Warn": 2, "Pass": 1, "Skip": 0}
_META = {"DCGM Version": "dcgm_version", "Driver Version Detected": "driver_version"}
_METRICS = {
    "pcie_gpu_to_host_GBps": r"GPU (\d+) GPU to Host bandwidth:\s*([\d.]+) GB/s",
    "pcie_host_to_gpu_GBps": r"GPU (\d+) Host to GPU bandwidth:\s*([\d.]+) GB/s",
    "pcie_bidir_GBps": r"GPU (\d+) bidirectional bandwidth:\s*([\d.]+) GB/s",
    "diagnostic_gflops": r"GPU (\d+) calculated at approximately\s*([\d.]+) gigaflops",
    "targeted_power_max_W": r"GPU (\d+) max power:\s*([\d.]+) W",
    "targeted_power_avg_W": r"GPU (\d+) max power:\s*[\d.]+ W average power usage:\s*([\d.]+) W",
    "targeted_stress_level": r"GPU (\d+) relative stress level\s*([\d.]+)",
    "gpu_memory_allocated_bytes": r"GPU (\d+) Allocated (\d+) bytes",
}


def parse(text: str) -> dict:
    """Parse a ``dcgmi diag`` table into the contract's dict (see module doc)."""
    require_text(text, "dcgmi diag")
    rows = lines(text)
    if not any(re.match(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|", r) for r in rows):
        raise refuse("dcgmi diag", "no '| Diagnostic | Result |' table header")
    entries = _entries(rows)
    meta = {_META[e[0]]: _join(e[1:]).strip() for e in entries if e[0] in _META}
    ids = next((_join(e[1:]).strip() for e in entries if e[0] == "GPU Device IDs Detected"), "")
    results = _results(entries, len(ids.split(",")) if ids else None)
    if not results:
        raise refuse("dcgmi diag", "no test result rows in the table")
    failed = [name for name, r in results.items() if r["status"] == "Fail"]
    return {
        "tool": TOOL,
        "complete": _closed(rows),
        **{key: meta.get(key) for key in _META.values()},
        "gpu_device_ids": [i.strip() for i in ids.split(",") if i.strip()],
        "results": results,
        "failed_tests": failed,
        "failed_gpus": sorted({g for r in results.values() for g in r["failed_gpus"]}),
        "warnings": [w for r in results.values() for w in r["warnings"]],
        "metrics": _metrics(" ".join(i for r in results.values() for i in r["info"])),
    }


def _entries(rows: list[str]) -> list[list[str]]:
    """[name, text] per table row; continuation rows are appended as "\\n" + chunk."""
    entries: list[list[str]] = []
    for row in rows:
        cells = row.strip().split("|")
        if len(cells) != 4 or row.lstrip().startswith(("|-", "|=", "+")):
            continue
        name, value = cells[1].strip(), cells[2]
        width = len(value) - 3
        chunk = value[1:1 + width] if len(value) > 3 else value.strip()
        if name == "Diagnostic" and chunk.strip() == "Result":
            continue
        if name:
            entries.append([name, chunk])
        elif entries:
            entries[-1].append(chunk)
    return entries


def _results(entries: list[list[str]], gpu_count: int | None) -> dict:
    """Per-test results; Warning and Info rows attach to the test above them."""
    results: dict[str, dict] = {}
    current = None
    for name, *chunks in entries:
        if name in ("Warning", "Info") and current:
            key = "warnings" if name == "Warning" else "info"
            current[key].append(_join(chunks).strip())
        elif name not in _META and name != "GPU Device IDs Detected":
            current = _test(chunks, gpu_count)
            results[name] = current
    return results


def _join(chunks: list[str]) -> str:
    """Wrapped cell text: full-width chunks joined as is, the last right-stripped."""
    return "".join(chunks).rstrip()


def _test(chunks: list[str], gpu_count: int | None) -> dict:
    """Status and GPU lists of one test from its (possibly split) result cells."""
    pieces: list[list[str]] = []  # joined once at the end: += on a list item copies, quadratic in rows
    for chunk in chunks:
        text = chunk.strip()
        if pieces and not (_STATUS.match(text) or _PER_GPU.match(text)):
            pieces[-1].append(chunk.rstrip())
        else:
            pieces.append([text])
    parts = ["".join(p) for p in pieces]
    record: dict[str, Any] = {"status": None, "failed_gpus": [], "passed_gpus": [], "detail": "; ".join(parts),
              "warnings": [], "info": []}
    for part in parts:
        _apply(part, record, gpu_count)
    return record


def _apply(part: str, record: dict, gpu_count: int | None) -> None:
    """Fold one "Status - GPUs: ..." part into the test's record."""
    found = _status(part)
    if found is None:
        return
    status, scope = found
    if record["status"] is None or _RANK[status] > _RANK[record["status"]]:
        record["status"] = status
    gpus = [to_int(g, "GPU index") for g in re.findall(r"\d+", scope)]
    if scope.strip() == "All" and gpu_count:
        gpus = list(range(gpu_count))
    if status in ("Fail", "Pass"):
        record["failed_gpus" if status == "Fail" else "passed_gpus"].extend(gpus)


def _status(part: str) -> tuple[str, str] | None:
    """A part's status word and the GPUs it names ("GPU 3: Fail" or "Fail - GPUs: 0, 1")."""
    per_gpu = _PER_GPU.match(part)
    if per_gpu:
        return per_gpu.group(2), per_gpu.group(1)
    match = _STATUS.match(part)
    return (match.group(1), match.group(2) or "") if match else None


def _metrics(info: str) -> dict:
    """Numbers embedded in Info text, per GPU index."""
    out: dict[str, dict[int, float]] = {}
    for name, pattern in _METRICS.items():
        for gpu, value in re.findall(pattern, info):
            out.setdefault(name, {})[to_int(gpu, "GPU index")] = to_float(value, name) if "." in value \
                else to_int(value, name)
    return out


def _closed(rows: list[str]) -> bool:
    """The last table line is the closing "+---+---+" border."""
    table = [r.strip() for r in rows if r.strip().startswith(("|", "+"))]
    return bool(table) and table[-1].startswith("+") and table[-1].endswith("+")
