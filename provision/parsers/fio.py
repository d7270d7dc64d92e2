"""Parse ``fio`` results: normal text output (fio 3.x) and ``--output-format=json``
(fio 2.x ``clat`` in usec and 3.x ``clat_ns``), with or without lines before the JSON.

Text: the job line "name: (g=0): rw=write, bs=(R) 1024KiB-1024KiB, (W) ..." (or
fio 2's "bs=4K-4K/4K-4K/4K-4K"), "name: (groupid=0, jobs=1): err= 0: ...", per
direction "write: IOPS=6067, BW=6068MiB/s (6363MB/s)(711GiB/120007msec)" (IOPS may
read "12.3k"; BW in B/KiB/MiB/GiB/s) and "clat percentiles (usec|msec|nsec)" blocks.

Units: ``*_bw_MiBps`` MiB/s, ``*_iops`` per second, ``lat_p99_ms`` ms (the
worse of read and write, from clat percentiles, or lat percentiles where only those
are printed). ``errors`` sums every job's err. Raises ParseError when neither a
fio job line nor fio JSON is present. ``complete`` is false without "Run status
group" (text) or when the JSON document is cut short (then no jobs are read). A JSON figure
that is not a finite, non-negative number (Python's json reads NaN, Infinity and 1e400 as
floats), a member of the wrong type, or a document nested past the recursion limit is a
ParseError.
"""
from __future__ import annotations

import json
import re
from typing import Any

from provision.parsers import _fio_text
from provision.parsers._util import finite, non_negative, refuse, require_text

TOOL = "fio"
TOOLS = (TOOL,)


def parse(text: str) -> dict:
    """Parse fio text or JSON output into the contract's dict (see module doc)."""
    require_text(text, "fio")
    start = text.find("{")
    if start >= 0 and '"fio version"' in text[start:start + 200]:
        return _json(text[start:])
    if not _fio_text.JOB.search(text) and not _fio_text.GROUP.search(text):
        raise refuse("fio", "no 'name: (groupid=..., jobs=...): err=...' line and no fio JSON")
    return _fio_text.parse(text, TOOL)


def _json(text: str) -> dict:
    """``--output-format=json``; a cut-short document gives no jobs, complete false."""
    try:
        data, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        version = re.search(r'"fio version"\s*:\s*"([^"]*)"', text)
        return {"tool": TOOL, "complete": False, "fio_version": version.group(1) if version else None,
                "jobs": [], "errors": None}
    except (ValueError, RecursionError) as exc:  # a number over 4300 digits; arrays nested too deep
        raise refuse("fio", f"the JSON document is unreadable ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs", []), list):
        raise refuse("fio", "the JSON document is not an object with a 'jobs' list")
    jobs = [_json_job(_object(job, "jobs[]"), _object(data.get("global options"), "global options"))
            for job in data.get("jobs", [])]
    return {"tool": TOOL, "complete": True, "fio_version": _text(data.get("fio version"), "fio version"),
            "jobs": jobs, "errors": sum(job["err"] or 0 for job in jobs)}


def _json_job(job: dict, global_options: dict) -> dict:
    """One JSON job: bandwidth (KiB/s in JSON) as MiB/s, IOPS, p99 latency in ms."""
    options = {**global_options, **_object(job.get("job options"), "job options")}
    record = {"name": _text(job.get("jobname"), "jobname"),
              "rw": _text(options.get("rw") or options.get("readwrite"), "rw"),
              "bs": _text(options.get("bs") or options.get("blocksize"), "bs"),
              "err": _number(job.get("error"), "error", integer=True),
              "ioengine": _text(options.get("ioengine"), "ioengine"),
              "iodepth": _text(options.get("iodepth"), "iodepth")}
    worst = None
    for direction in ("read", "write"):
        stats = _object(job.get(direction), direction)
        active = (_number(stats.get("io_bytes"), f"{direction}.io_bytes") or 0) > 0
        bw = _number(stats.get("bw"), f"{direction}.bw") if active else None
        if active and bw is None:
            raise refuse("fio", f"JSON job {record['name']!r} {direction} has io_bytes but no bw")
        record[f"{direction}_bw_MiBps"] = round(bw / 1024, 3) if bw is not None else None
        record[f"{direction}_iops"] = _number(stats.get("iops"), f"{direction}.iops") if active else None
        p99 = _json_p99(stats, direction) if active else None
        record[f"{direction}_lat_p99_ms"] = p99
        worst = p99 if worst is None or (p99 is not None and p99 > worst) else worst
    record["lat_p99_ms"] = worst
    return record


def _json_p99(stats: dict, direction: str) -> float | None:
    """99th percentile completion (or total) latency in ms from ns or usec stats."""
    for key, scale in (("clat_ns", 1e-6), ("lat_ns", 1e-6), ("clat", 1e-3)):
        percentiles = _object(_object(stats.get(key), f"{direction}.{key}").get("percentile"), "percentile")
        value = _number(percentiles.get("99.000000"), f"{direction}.{key} p99")
        if value is not None:
            return round(value * scale, 6)
    return None


def _object(value: Any, key: str) -> dict:
    """A JSON object member ({} when absent); ParseError for another type."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise refuse("fio", f"JSON {key!r} is not an object")
    return value


def _number(value: Any, key: str, integer: bool = False) -> int | float | None:
    """A JSON number: finite and not negative (fio's figures are sizes, rates, counts and times);
    None when absent. Python's json reads NaN, Infinity and 1e400 (inf): all refused, and so is an integer
    wider than the 64-bit integers fio keeps its counters in (its json.c prints them as long long)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise refuse("fio", f"JSON {key!r} is not a number: {str(value)[:40]!r}")
    if isinstance(value, float):
        finite(value, f"fio JSON {key!r}")
    elif value.bit_length() > 64:
        raise refuse("fio", f"JSON {key!r} is wider than 64 bits: {str(value)[:40]!r}...")
    return non_negative(value, f"fio JSON {key!r}")


def _text(value: Any, key: str) -> Any:
    """A JSON scalar kept as printed (fio writes options as strings); ParseError for a list or object."""
    if isinstance(value, (dict, list)):
        raise refuse("fio", f"JSON {key!r} is not a scalar")
    if isinstance(value, float):
        finite(value, f"fio JSON {key!r}")
    return value
