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
lines nor a verdict block.
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, require_text

TOOL = "gpu-burn"
TOOLS = (TOOL,)
_PROGRESS = re.compile(r"proc'd:(?P<procd>.*?)errors:(?P<errors>.*?)temps:(?P<temps>.*)$")
_VERDICT = re.compile(r"^\s*GPU\s+(\d+):\s*(OK|FAULTY)\s*$")
_NAME = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*\(UUID:")
# Lines gpu_burn prints before its first whole progress line (banner, device set-up, progress).
_STARTED = re.compile(r"Burning for \d+ seconds|Initialized device \d+ with|\d+\.\d+%\s+proc'd: \d+ \(")
_TESTED = re.compile(r"Tested\s+(\d+)\s+GPUs")


def parse(text: str) -> dict:
    """Parse gpu_burn output into the contract's dict (see module doc)."""
    require_text(text, "gpu-burn")
    rows = lines(text)
    progress = [m for m in map(_PROGRESS.search, rows) if m]
    verdicts = {int(m.group(1)): m.group(2) for m in map(_VERDICT.match, rows) if m}
    if not progress and not verdicts and _STARTED.search(text):
        # gpu_burn started (banner or a progress line cut before "temps:") but was cut off
        return {"tool": TOOL, "complete": False, "completed": False, "gpu_count": None, "gpus": [], "faulty_gpus": []}
    if not progress and not verdicts:
        raise refuse("gpu-burn", "no \"proc'd: ... errors: ... temps:\" progress line and no "
                     "'GPU n: OK|FAULTY' verdict")
    names = {int(m.group(1)): m.group(2) for m in map(_NAME.match, rows) if m}
    last = _last_whole([_values(m) for m in progress])
    tested = next((int(m.group(1)) for m in map(_TESTED.search, rows) if m), None)
    count = max(len(last[0]), len(verdicts), tested or 0)
    gpus = [_gpu(i, last, verdicts, names) for i in range(count)]
    done = bool(verdicts) and (tested is None or len(verdicts) == tested)
    return {"tool": TOOL, "complete": done, "completed": done, "gpu_count": tested or count or None,
            "gpus": gpus, "faulty_gpus": [i for i, v in sorted(verdicts.items()) if v == "FAULTY"]}


def _values(match: re.Match) -> tuple[list, list, list, list]:
    """Gflop/s, errors, WARNING flags and temperatures from one progress line."""
    gflops: list[float | None] = [float(g) for g in re.findall(r"\(([\d.]+)\s*Gflop/s\)", match.group("procd"))]
    if not gflops:
        gflops = [None] * len(re.findall(r"\d+", match.group("procd")))
    errors, warned = [], []
    for value, warning in re.findall(r"(-?\d+)\s*(\(WARNING!\))?", match.group("errors")):
        errors.append(int(value))
        warned.append(bool(warning))
    temps = [None if t == "N/A" else int(t) for t in re.findall(r"(\d+|N/A)\s*C?\b", match.group("temps"))]
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
