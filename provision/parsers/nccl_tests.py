"""Parse the output of any nccl-tests ``*_perf`` binary (all_reduce_perf, ...).

Header generations handled:
- very old: no ``#`` in front of header and summary lines, an ``error`` column
  holding the max relative error ("1e+00"), no device list;
- old (2.0-2.10): ``#`` header, ``redop`` column only where the collective has one,
  ``error`` column, "Rank n Pid ... device n [0x..] <gpu>" lines;
- current (2.10+): ``redop`` and ``root`` on every collective, ``#wrong`` column,
  "Rank n Group n Pid ..." lines, "# nccl-tests version ..." and "# Collective
  test starting: X_perf" lines.
Also: ``mpirun --tag-output`` prefixes (``[1,0]<stdout>:``), NCCL INFO/WARN log
lines interleaved anywhere (WARN lines are kept in ``warnings``), validation off
(``-c 0``: "N/A" in the wrong column -> ``wrong`` None), and nccl-tests' failure reports
(common.cu's NCCLCHECK/CUDACHECK: ``HOST: Test NCCL failure common.cu:LINE 'ERROR / LAST ERROR'`` and
``Test CUDA failure``), kept in ``failures`` as {``host``, ``kind`` (NCCL or CUDA), ``text`` (between the quotes)}.

Units: ``size_bytes`` bytes, ``time_us`` microseconds, ``*_GBps`` GB/s.
``complete`` is false without the "Avg bus bandwidth" line or a failure report. A log with only NCCL
lines (or only failure reports) parses with no rows. Raises ParseError when the text has no nccl-tests
header, result row, summary, NCCL log line or failure report.
"""
from __future__ import annotations

import re
from typing import Any

from provision.parsers._util import is_digits, lines, non_negative, num, refuse, require_text, strip_mpi_tag, to_int

TOOL = "nccl-tests"
TOOLS = (TOOL,)
_NCCL_LOG = re.compile(r"\bNCCL (INFO|WARN)\b")
_FAILURE = re.compile(r"^\s*(?:(\S+): )?Test (NCCL|CUDA) failure \S+ '(.*)'\s*$")
# Header facts: (key, the literal a line must hold, pattern); the literal skips the search.
_SETTINGS = [("nthread", "nThread", re.compile(r"\bnThread (\d+)")), ("ngpus", "nGpus", re.compile(r"\bnGpus (\d+)")),
             ("validation", "validation", re.compile(r"\bvalidation: (\d+)")),
             ("version", "nccl-tests version", re.compile(r"nccl-tests version (\S+)"))]
_COMMAND = re.compile(r"\b([a-z_]+)_perf\b(.*)")
# The GPU name's trailing blanks are stripped in code: ``(.*?)\s*$`` is quadratic on a run of spaces.
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)"
                   r"\s+\[([^\]]*)\]\s+(.*)$")
_TYPE = re.compile(r"^(?:u?int\d*|half|float\d*|bfloat16|double|char|f8e\w+|fp8\w*)$")
_ELEMENT_BYTES = {"int8": 1, "uint8": 1, "char": 1, "half": 2, "float16": 2, "bfloat16": 2,
                  "int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
                  "int64": 8, "uint64": 8, "double": 8, "float64": 8}


def parse(text: str) -> dict:
    """Parse nccl-tests output into the contract's dict (see module doc)."""
    require_text(text, "nccl-tests")
    # error_codes: a dict used as an ordered set (a list's `in` is quadratic in distinct codes)
    state: dict[str, Any] = {"rows": [], "warnings": [], "error_codes": {}, "ranks": {}, "header": {}, "failures": []}
    for row in lines(text):
        _line(strip_mpi_tag(row), state)
    header = state["header"]
    if not (state["rows"] or header or state["warnings"] or state.get("log") or state["failures"]):
        raise refuse("nccl-tests", "no 'size count type' header, result rows, NCCL log lines or failure reports")
    return _result(state)


def _line(row: str, state: dict) -> None:
    """Route one line: failure report, NCCL log, data row, or header/summary."""
    failure = _FAILURE.match(row) if " failure " in row else None
    if failure:
        state["failures"].append({"host": failure.group(1), "kind": failure.group(2), "text": failure.group(3)})
        return
    log = _NCCL_LOG.search(row) if "NCCL " in row else None
    if log:
        state["log"] = True
        if log.group(1) == "WARN":
            state["warnings"].append(row.strip())
        code = re.search(r"->\s*(\d+)", row)
        if code:
            state["error_codes"].setdefault(to_int(code.group(1), "NCCL error code"))
        return
    data = _data_row(row.split())
    if data:
        state["rows"].append(data)
    else:
        _header_line(row.lstrip("#").strip(), state)


def _header_line(row: str, state: dict) -> None:
    """Header facts: command line, test settings, ranks, columns and summaries."""
    header = state["header"]
    rank = _RANK.search(row)
    if rank:
        state["ranks"][to_int(rank.group(1), "rank")] = {
            "host": rank.group(2), "device": to_int(rank.group(3), "device"), "bus": rank.group(4),
            "name": rank.group(5).rstrip()}
    elif row.split()[:2] == ["size", "count"]:
        header["columns"] = row.split()
    elif row.startswith("Out of bounds values"):
        match = re.search(r":\s*(\d+)\s+(\w+)", row)
        header["oob"] = (to_int(match.group(1), "out of bounds values"), match.group(2) == "FAILED") if match else None
    elif row.startswith("Avg bus bandwidth"):
        header["avg"] = non_negative(num(row.partition(":")[2]), "Avg bus bandwidth", "GB/s")
    else:
        _settings(row, header)


def _settings(row: str, header: dict) -> None:
    """nThread/nGpus/validation, version, collective name and command-line options."""
    for key, literal, pattern in _SETTINGS:
        match = pattern.search(row) if literal in row else None
        if match:
            header[key] = match.group(1) if key == "version" else to_int(match.group(1), key)
    command = _COMMAND.search(row) if "_perf" in row else None
    if command and "collective" not in header:
        header["collective"] = command.group(1)
        for key, option in (("cmd_g", r"(?:-g|--ngpus)[\s=]*(\d+)"), ("cmd_t", r"(?:-t|--nthreads)[\s=]*(\d+)")):
            found = re.search(option, command.group(2))
            if found:
                header[key] = to_int(found.group(1), key)


def _data_row(tokens: list[str]) -> dict | None:
    """One result row, or None when the tokens are not one."""
    if len(tokens) < 11 or not (is_digits(tokens[0]) and is_digits(tokens[1]) and _TYPE.match(tokens[2])):
        return None
    tail = tokens[-8:]
    if not all(num(t) is not None or t == "N/A" for t in tail):
        return None
    middle = tokens[3:-8]
    redop = next((t for t in middle if not re.fullmatch(r"-?\d+", t)), None)
    root = next((to_int(t, "root") for t in middle if re.fullmatch(r"-?\d+", t)), None)
    return {"size_bytes": to_int(tokens[0], "size"), "count": to_int(tokens[1], "count"), "type": tokens[2],
            "redop": redop, "root": root,
            "out_of_place": _half(tail[:4]), "in_place": _half(tail[4:])}


def _half(tokens: list[str]) -> dict:
    """time, algbw, busbw and the wrong count (or, old format, the max error)."""
    wrong = tokens[3]
    record = {"time_us": non_negative(num(tokens[0]), "time", "us"),
              "algbw_GBps": non_negative(num(tokens[1]), "algbw", "GB/s"),
              "busbw_GBps": non_negative(num(tokens[2]), "busbw", "GB/s"),
              "wrong": to_int(wrong, "#wrong") if is_digits(wrong) else None}
    if not is_digits(wrong) and wrong != "N/A":
        record["max_error"] = non_negative(num(wrong), "max error")
    return record


def _result(state: dict) -> dict:
    """Assemble the contract's dict from what the lines gave."""
    header, rows = state["header"], state["rows"]
    largest = max(rows, key=lambda r: r["size_bytes"]) if rows else None
    at_max = [r for r in rows if largest and r["size_bytes"] == largest["size_bytes"]]
    oob = header.get("oob")
    collective, source = _collective(header, rows, _nranks(state))
    return {
        "tool": TOOL,
        "complete": header.get("avg") is not None or bool(state["failures"]),  # a failure report ends a run too
        "nccl_tests_version": header.get("version"),
        "collective": collective,
        "collective_source": source,
        "nranks": _nranks(state),
        "devices": [dict(rank=k, **v) for k, v in sorted(state["ranks"].items())],
        "validation": header.get("validation"),
        "rows": rows,
        "avg_busbw_GBps": header.get("avg"),
        "max_size_bytes": largest["size_bytes"] if largest else None,
        "busbw_at_max_size_GBps": _at_max(at_max, "busbw_GBps"),
        "algbw_at_max_size_GBps": _at_max(at_max, "algbw_GBps"),
        "wrong": _wrong(header, rows),
        "out_of_bounds_values": oob[0] if oob else None,
        "out_of_bounds_failed": oob[1] if oob else None,
        "warnings": state["warnings"],
        "error_codes": list(state["error_codes"]),
        "failures": state["failures"],
    }


def _at_max(rows: list[dict], key: str) -> dict:
    """Out-of-place and in-place values of the last row at the largest size."""
    last = rows[-1] if rows else None
    return {side: last[side][key] if last else None for side in ("out_of_place", "in_place")}


def _nranks(state: dict) -> int | None:
    """Ranks listed, else nThread x nGpus from the header or the command line."""
    if state["ranks"]:
        return len(state["ranks"])
    header = state["header"]
    if "ngpus" in header:
        return header["ngpus"] * header.get("nthread", 1)
    if "cmd_g" in header or "cmd_t" in header:
        return header.get("cmd_g", 1) * header.get("cmd_t", 1)
    return None


def _wrong(header: dict, rows: list[dict]) -> int | None:
    """Total wrong elements; None when validation was off or nothing says."""
    halves = [r[side] for r in rows for side in ("out_of_place", "in_place")]
    if header.get("validation") == 0 or (halves and all(h["wrong"] is None and "max_error" not in h
                                                       for h in halves)):
        return None
    if any(h["wrong"] is not None for h in halves):
        return sum(h["wrong"] or 0 for h in halves)
    oob = header.get("oob")
    return oob[0] if oob else None


def _collective(header: dict, rows: list[dict], nranks: int | None) -> tuple[str | None, str | None]:
    """The collective as printed, else inferred from redop/root and size/count."""
    if "collective" in header:
        return header["collective"], "printed"
    if not rows:
        return None, None
    row = rows[-1]
    element = _ELEMENT_BYTES.get(row["type"])
    redop = row["redop"] not in (None, "none")
    if row["root"] is not None and row["root"] >= 0:
        return ("reduce" if redop else "broadcast"), "inferred"
    if redop and element and row["count"]:
        ratio = row["size_bytes"] / (row["count"] * element)
        if ratio == 1:
            return "all_reduce", "inferred"
        if nranks and ratio == nranks:
            return "reduce_scatter", "inferred"
    return None, None
