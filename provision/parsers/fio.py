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
group" (text) or when the JSON document is cut short (then no jobs are read).
"""
from __future__ import annotations

import json
import re

from provision.parsers import _fio_text
from provision.parsers._util import refuse, require_text

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
    jobs = [_json_job(job, data.get("global options", {})) for job in data.get("jobs", [])]
    return {"tool": TOOL, "complete": True, "fio_version": data.get("fio version"),
            "jobs": jobs, "errors": sum(job["err"] or 0 for job in jobs)}


def _json_job(job: dict, global_options: dict) -> dict:
    """One JSON job: bandwidth (KiB/s in JSON) as MiB/s, IOPS, p99 latency in ms."""
    options = {**global_options, **job.get("job options", {})}
    record = {"name": job.get("jobname"), "rw": options.get("rw") or options.get("readwrite"),
              "bs": options.get("bs") or options.get("blocksize"), "err": job.get("error"),
              "ioengine": options.get("ioengine"), "iodepth": options.get("iodepth")}
    worst = None
    for direction in ("read", "write"):
        stats = job.get(direction) or {}
        active = stats.get("io_bytes", 0) > 0
        record[f"{direction}_bw_MiBps"] = round(stats["bw"] / 1024, 3) if active else None
        record[f"{direction}_iops"] = stats.get("iops") if active else None
        p99 = _json_p99(stats) if active else None
        record[f"{direction}_lat_p99_ms"] = p99
        worst = p99 if worst is None or (p99 is not None and p99 > worst) else worst
    record["lat_p99_ms"] = worst
    return record


def _json_p99(stats: dict) -> float | None:
    """99th percentile completion (or total) latency in ms from ns or usec stats."""
    for key, scale in (("clat_ns", 1e-6), ("lat_ns", 1e-6), ("clat", 1e-3)):
        percentiles = (stats.get(key) or {}).get("percentile") or {}
        value = percentiles.get("99.000000")
        if value is not None:
            return round(value * scale, 6)
    return None

