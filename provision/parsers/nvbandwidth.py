"""Parse ``nvbandwidth`` output (v0.1 README style through v0.7+).

Each test starts with "Running <testcase>." followed by a caption such as "memcpy
CE GPU(row) <- GPU(column) bandwidth (GB/s)", a column-index line and one line per
source (row indices with or without a leading space). Cells are GB/s; "N/A"
(newer diagonals) is None, the older diagonal "0.00" is kept as printed. Newer
versions end each test with "SUM <testcase> <value>"; older ones print no SUM,
then ``sum_GBps`` is computed from the cells (``sum_printed`` false). Tests
reported as "Waived" have an empty matrix. ``bus_ids`` maps each GPU index to its bus id from
the "Device n: name (bus id)" header of v0.5+ (empty for older versions).

Raises ParseError without any "Running <testcase>." line. ``complete`` is false
when the last test has no matrix rows, or fewer rows than GPU columns for a
GPU(row)/GPU(column) matrix, or no SUM line where the output prints SUM lines.
"""
from __future__ import annotations

import re

from provision.parsers._util import finite, lines, non_negative, num, refuse, require_text, to_float, to_int

TOOL = "nvbandwidth"
TOOLS = (TOOL,)
_RUNNING = re.compile(r"^Running\s+(\S+?)\.?\s*$")
_SUM = re.compile(r"^SUM\s+(\S+)\s+([\d.]+)")
# ``:.*\(``, not ``:\s*.*\(``: two adjacent quantifiers over blanks backtrack quadratically.
_DEVICE = re.compile(r"^Device\s+(\d+):.*\(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\)\s*$")
_INDEX_ROW = re.compile(r"^\s*(\d+)((?:\s+(?:[\d.]+|N/A))+)\s*$")


def parse(text: str) -> dict:
    """Parse nvbandwidth text into the contract's dict (see module doc)."""
    require_text(text, "nvbandwidth")
    tests: list[dict] = []
    for row in lines(text):
        _line(row, tests)
    if not tests:
        raise refuse("nvbandwidth", "no 'Running <testcase>.' line")
    printed = any(t["sum_printed"] for t in tests)
    for test in tests:
        if test["sum_GBps"] is None and test["matrix"]:
            total = sum(v for r in test["matrix"].values() for v in r.values() if v)
            test["sum_GBps"] = round(finite(total, f"{test['name']} sum"), 2)
    version = re.search(r"nvbandwidth Version:\s*(\S+)", text)
    return {"tool": TOOL, "complete": _complete(tests[-1], printed),
            "version": version.group(1) if version else None,
            "bus_ids": {to_int(m.group(1), "device"): m.group(2) for m in map(_DEVICE.match, text.splitlines()) if m},
            "tests": [{k: v for k, v in t.items() if not k.startswith("_")} for t in tests]}


def _line(row: str, tests: list[dict]) -> None:
    """Start a test, read its caption, column line, matrix rows or SUM line."""
    running, total = _RUNNING.match(row), _SUM.match(row)
    if running:
        tests.append({"name": running.group(1), "caption": None, "matrix": {}, "sum_GBps": None,
                       "sum_printed": False, "waived": False, "_columns": None})
        return
    if not tests:
        return
    test = tests[-1]
    if total:
        test["sum_GBps"], test["sum_printed"] = to_float(total.group(2), f"SUM {total.group(1)}"), True
    elif "bandwidth" in row and "(GB/s)" in row:
        test["caption"] = row.strip()
    elif row.strip().lower().startswith("waived"):
        test["waived"] = True
    elif test["caption"] and test["_columns"] is None and re.fullmatch(r"[\d\s]+", row.strip() or "x"):
        test["_columns"] = [to_int(c, "column index") for c in row.split()]
    elif test["_columns"] is not None and _INDEX_ROW.match(row):
        _matrix_row(row, test)


def _matrix_row(row: str, test: dict) -> None:
    """One source row: {destination column: GB/s or None}."""
    tokens = row.split()
    cells = [non_negative(num(t), f"{test['name']} row {tokens[0]} bandwidth", "GB/s") for t in tokens[1:]]
    test["matrix"][to_int(tokens[0], "row index")] = dict(zip(test["_columns"], cells))


def _complete(test: dict, sums_printed: bool) -> bool:
    """The last test's matrix is whole (and summed where this version sums)."""
    if test["waived"]:
        return True
    if not test["matrix"] or (sums_printed and not test["sum_printed"]):
        return False
    columns = len(test["_columns"] or [])
    if any(len(cells) != columns for cells in test["matrix"].values()):
        return False
    square = (test["caption"] or "").count("GPU(") == 2
    return not square or len(test["matrix"]) == columns
