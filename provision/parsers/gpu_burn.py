"""Parse ``gpu_burn`` (wilicc/gpu-burn) output, old and current releases.

Progress lines are rewritten in place with carriage returns, so the text is split
on ``\\r`` as well as newlines. A progress line reads "50.0%  proc'd: 2261 (7150
Gflop/s) - 0 (0 Gflop/s) ...   errors: 0 - 0 ...   temps: 38 C - 36 C ..."; old
releases print "proc'd: 4356 / 4356" without Gflop/s. Error counts may be negative
(int overflow, as printed) and followed by "(WARNING!)" which swallows the next
" - " separator. The verdict block "Tested N GPUs:" / "GPU n: OK|FAULTY" may be
indented with TABs or spaces; the start-up "GPU n: <name> (UUID: ...)" list gives
names. Per-device lines may be glued to "Killing processes.." on one line.

Units: ``gflops`` Gflop/s, ``temp_C`` C; values are from the last progress line.
``completed``/``complete`` are false without the verdict block (gpu_burn always
exits 0, so the verdict is the result). Raises ParseError with neither progress
lines nor a verdict block, for a temperature outside ``TEMP_RANGE_C`` (provision/parsers/_util.py)
and for more than ``MAX_GPUS`` GPUs.
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, require_text, temperature, to_float, to_int

TOOL = "gpu-burn"
TOOLS = (TOOL,)
_VERDICT = re.compile(r"^\s*GPU\s+(\d+):\s*(OK|FAULTY)\s*$")
_NAME = re.compile(r"^GPU\s+(\d+):(.*?)\(UUID:")
# Lines gpu_burn prints before its first whole progress line (banner, device set-up, progress).
# (?<!\d): a percentage starts where a number starts, so a long digit run is scanned once, not
# once from each of its digits (quadratic).
_STARTED = re.compile(r"Burning for \d+ seconds|Initialized device \d+ with|(?<!\d)\d+\.\d+%\s+proc'd: \d+ \(")
_TESTED = re.compile(r"Tested\s+(\d+)\s+GPUs")
_GFLOPS = re.compile(r"\(([\d.]+)\s*Gflop/s\)")
_ERRORS = re.compile(r"(-?\d+)\s*(\(WARNING!\))?")
_TEMPS = re.compile(r"(?<![\d-])(-?\d+|N/A)\s*C?\b")
# A node with more GPUs than this is not a node: "Tested 99999999999 GPUs" must not build
# a list of that many records (NVL72 racks hold 72 GPUs in 18 trays of 4).
MAX_GPUS = 1024


def parse(text: str) -> dict:
    """Parse gpu_burn output into the contract's dict (see module doc)."""
    require_text(text, "gpu-burn")
    rows = lines(text)
    progress = [p for p in map(_progress, rows) if p]
    verdicts = {to_int(m.group(1), "GPU index"): m.group(2) for m in map(_VERDICT.match, rows) if m}
    if not progress and not verdicts and _STARTED.search(text):
        # gpu_burn started (banner or a progress line cut before "temps:") but was cut off
        return {"tool": TOOL, "complete": False, "completed": False, "gpu_count": None, "gpus": [], "faulty_gpus": []}
    if not progress and not verdicts:
        raise refuse("gpu-burn", "no \"proc'd: ... errors: ... temps:\" progress line and no "
                     "'GPU n: OK|FAULTY' verdict")
    names = {to_int(m.group(1), "GPU index"): m.group(2).strip() for m in map(_NAME.match, rows) if m}
    last = _last_whole([_values(p) for p in progress])
    tested = next((to_int(m.group(1), "tested GPUs") for m in map(_TESTED.search, rows) if m), None)
    count = max(len(last[0]), len(verdicts), tested or 0)
    if count > MAX_GPUS:
        raise refuse("gpu-burn", f"{count} GPUs, more than the {MAX_GPUS} a node can hold")
    gpus = [_gpu(i, last, verdicts, names) for i in range(count)]
    done = bool(verdicts) and (tested is None or len(verdicts) == tested)
    return {"tool": TOOL, "complete": done, "completed": done, "gpu_count": tested or count or None,
            "gpus": gpus, "faulty_gpus": [i for i, v in sorted(verdicts.items()) if v == "FAULTY"]}


def _progress(row: str) -> dict[str, str] | None:
    """The "proc'd:", "errors:" and "temps:" parts of a progress line, else None.

    Found with str.find, not ``proc'd:(.*?)errors:(.*?)temps:(.*)``, whose chained lazy groups
    backtrack quadratically on a long line with many "errors:" and no "temps:".
    """
    procd = row.find("proc'd:")
    errors = row.find("errors:", procd + 7) if procd >= 0 else -1
    temps = row.find("temps:", errors + 7) if errors >= 0 else -1
    if temps < 0:
        return None
    return {"procd": row[procd + 7:errors], "errors": row[errors + 7:temps], "temps": row[temps + 6:]}


def _values(parts: dict[str, str]) -> tuple[list, list, list, list]:
    """Gflop/s, errors, WARNING flags and temperatures from one progress line."""
    gflops: list[float | None] = [to_float(g, "Gflop/s") for g in _GFLOPS.findall(parts["procd"])]
    if not gflops:
        gflops = [None] * len(re.findall(r"\d+", parts["procd"]))
    errors, warned = [], []
    for value, warning in _ERRORS.findall(parts["errors"]):
        errors.append(to_int(value, "error count"))
        warned.append(bool(warning))
    temps = [None if t == "N/A" else temperature(to_int(t, "temperature"), "GPU temperature")
             for t in _TEMPS.findall(parts["temps"])]
    return gflops, errors, warned, temps


def _last_whole(values: list[tuple]) -> tuple:
    """The last progress line with as many temperatures as GPUs (not cut off)."""
    whole = [v for v in values if v[0] and len(v[0]) == len(v[1]) == len(v[3])]
    return whole[-1] if whole else values[-1] if values else ([], [], [], [])


def _gpu(index: int, last: tuple, verdicts: dict, names: dict) -> dict:
    """One GPU: verdict and last reported numbers."""
    gflops, errors, warned, temps = last
    def at(values: list):
        return values[index] if index < len(values) else None
    value = at(gflops)
    return {"index": index, "name": names.get(index), "verdict": verdicts.get(index),
            "gflops": int(value) if value is not None and value.is_integer() else value,
            "errors": at(errors), "warning": bool(at(warned)), "temp_C": at(temps)}
