"""fio's normal text output (fio 2.x and 3.x), for ``provision.parsers.fio``.

Bandwidth is converted to MiB/s from whatever unit fio printed (binary units by
default, decimal with ``--kb_base=1000``, fio 2's "KB/s" meaning KiB/s);
latencies to usec (stats) and ms (percentiles).
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, non_negative, num, to_float, to_int

# [^:\n]: a job name never spans lines; [^:]* would run from every line start to the end of the
# text, quadratic in the number of lines.
JOB = re.compile(r"^(\S[^:\n]*): \(groupid=\d+, jobs=(\d+)\): err=\s*(-?\d+)", re.MULTILINE)
GROUP = re.compile(r"^(\S[^:\n]*): \(g=\d+\): rw=(\w+), bs=(.*?), ioengine=(\w+), iodepth=(\d+)",
                   re.MULTILINE)
_DIRECTION = re.compile(r"^\s+(read|write|trim)\s*:\s*(.*)$")
_STAT = re.compile(r"^\s+(clat|lat) \((nsec|usec|msec)\):\s*min=\s*([\d.]+k?),\s*max=\s*([\d.]+k?),"
                   r"\s*avg=\s*([\d.]+)")
_PERCENTILES = re.compile(r"^\s+(clat|lat) percentiles \((nsec|usec|msec)\):")
_BW = re.compile(r"(?:BW|bw)=\s*([\d.]+)\s*([KMGk]i?B/s|B/s)(?:\s*\(([\d.]+)\s*([KMGk]i?B/s|B/s)\))?")
# fio 3 "(711GiB/120007msec)"; fio 2 "io=7168.0MB, ..., runt= 1234msec", searched in two steps (one
# pattern with ``.*?runt=`` is quadratic on a line of repeated "io=1KB").
_IO = re.compile(r"\(([\d.]+[KMGT]i?B)/(\d+)msec\)")
_IO2 = re.compile(r"io=\s*([\d.]+[KMGT]i?B)")
_RUNT = re.compile(r"runt=\s*(\d+)msec")
# (?<![\d.]): a percentile starts where a number starts, so a long digit run is scanned once.
_PERCENTILE = re.compile(r"(?<![\d.])([\d.]+)th=\[\s*(\d+)\]")
# fio 2 prints "KB/s" for KiB/s; fio 3 prints "kB/s", "MB/s", "GB/s" for decimal units.
_TO_MIB = {"B/s": 2**-20, "KiB/s": 2**-10, "MiB/s": 1, "GiB/s": 2**10, "KB/s": 2**-10,
           "kB/s": 1e3 / 2**20, "MB/s": 1e6 / 2**20, "GB/s": 1e9 / 2**20}
_DECIMAL = {"kB/s", "MB/s", "GB/s"}
_DISK = re.compile(r"^\s+(\S+): ios=.*util=([\d.]+)%")
_TO_USEC = {"nsec": 1e-3, "usec": 1.0, "msec": 1e3}


def parse(text: str, tool: str) -> dict:
    """Jobs, error total and disk utilisation from fio text."""
    defs = {m.group(1): m.groups()[1:] for m in GROUP.finditer(text)}
    jobs: list[dict] = []
    state = {"direction": None, "percentiles": None}
    rows = lines(text)
    for row in rows:
        _line(row, jobs, defs, state)
    for job in jobs:
        p99 = [job.get(f"{d}_lat_p99_ms") for d in ("read", "write")]
        job["lat_p99_ms"] = max((p for p in p99 if p is not None), default=None)
    version = next((r.strip() for r in rows if re.fullmatch(r"fio-\d\S*", r.strip())), None)
    return {"tool": tool, "complete": "Run status group" in text, "fio_version": version,
            "jobs": jobs, "errors": sum(j["err"] for j in jobs) if jobs else None,
            "disks": _disks(rows)}


def _line(row: str, jobs: list[dict], defs: dict, state: dict) -> None:
    """Route one line to the job, direction or percentile block it belongs to."""
    job, direction = JOB.match(row), _DIRECTION.match(row)
    stat, percentiles = _STAT.match(row), _PERCENTILES.match(row)
    if job:
        jobs.append(_new_job(job, defs.get(job.group(1))))
        state.update(direction=None, percentiles=None)
    elif not jobs:
        return
    elif direction:
        state.update(direction=direction.group(1), percentiles=None)
        jobs[-1].update(_direction(direction.group(1), direction.group(2)))
    elif stat and state["direction"] and stat.group(1) == "clat":
        _clat(jobs[-1], state["direction"], stat)
    elif percentiles and state["direction"]:
        state["percentiles"] = (percentiles.group(1), _TO_USEC[percentiles.group(2)] / 1e3)
    elif state["percentiles"] and row.strip().startswith("|"):
        _percentile_row(jobs[-1], state, row)
    else:
        state["percentiles"] = None


def _new_job(match: re.Match, definition: tuple | None) -> dict:
    """A job record from its result line and its "(g=0): rw=..." definition line."""
    rw, bs, engine, depth = definition or (None, None, None, None)
    return {"name": match.group(1), "rw": rw, "bs": _block_size(bs, rw), "ioengine": engine,
            "iodepth": to_int(depth, "iodepth") if depth else None, "numjobs": to_int(match.group(2), "jobs"),
            "err": to_int(match.group(3), "err"),
            "write_bw_MiBps": None, "write_iops": None, "read_bw_MiBps": None, "read_iops": None}


def _block_size(bs: str | None, rw: str | None) -> str | None:
    """The block size of the job's direction: "(R) 4KiB-4KiB, (W) ..." or "4K-4K/4K-4K/..."."""
    if not bs:
        return None
    parts = dict(re.findall(r"\((R|W|T)\)\s*([^,\s]+)", bs))
    if not parts:
        parts = dict(zip("RWT", bs.split("/")))
    chosen = parts.get("W" if rw and "write" in rw and "rw" not in rw else "R")
    return chosen.split("-")[0] if chosen else None


def _direction(name: str, text: str) -> dict:
    """Bandwidth, IOPS, I/O size and runtime of one direction line."""
    bw, (io, runtime) = _BW.search(text), _io(text)
    iops = re.search(r"(?:IOPS|iops)=\s*([\d.]+)([kM]?)", text)
    values = [(to_float(bw.group(i), f"{name} bandwidth"), bw.group(i + 1)) for i in (1, 3) if bw and bw.group(i)]
    mib = [v * _TO_MIB[u] for v, u in values if u not in _DECIMAL]
    mb = [v * _TO_MIB[u] * 2**20 / 1e6 for v, u in values if u in _DECIMAL]
    if not mib and mb:
        mib = [mb[0] * 1e6 / 2**20]
    scale = {"": 1, "k": 1e3, "M": 1e6}
    return {
        f"{name}_bw_MiBps": num(str(round(mib[0], 3))) if mib else None,
        f"{name}_bw_MBps": num(str(round(mb[0], 3))) if mb else None,
        f"{name}_iops": num(str(round(to_float(iops.group(1), f"{name} IOPS") * scale[iops.group(2)], 3)))
        if iops else None,
        f"{name}_io": io,
        f"{name}_runtime_ms": to_int(runtime, f"{name} runtime") if runtime else None,
    }


def _io(text: str) -> tuple[str | None, str | None]:
    """I/O size and runtime (ms) of a direction line, fio 3 or fio 2 style."""
    fio3 = _IO.search(text)
    if fio3:
        return fio3.group(1), fio3.group(2)
    fio2 = _IO2.search(text)
    runt = _RUNT.search(text, fio2.end()) if fio2 else None
    return (fio2.group(1), runt.group(1)) if fio2 and runt else (None, None)


def _clat(job: dict, direction: str, stat: re.Match) -> None:
    """Completion latency min/max/avg in usec."""
    scale = _TO_USEC[stat.group(2)]
    def value(text: str) -> float:
        number = to_float(text.removesuffix("k"), f"{direction} clat")
        return number * 1e3 if text.endswith("k") else number
    for key, index in (("min", 3), ("max", 4), ("avg", 5)):
        job[f"{direction}_clat_{key}_usec"] = num(str(round(value(stat.group(index)) * scale, 3)))


def _percentile_row(job: dict, state: dict, row: str) -> None:
    """"|  1.00th=[    4],  5.00th=[ 7], ..." into ms values keyed "1.00".

    The p99 comes from clat percentiles, or from lat percentiles where fio printed
    only those (``--lat_percentiles=1 --clat_percentiles=0``).
    """
    kind, to_ms = state["percentiles"]
    direction = state["direction"]
    table = job.setdefault(f"{direction}_{kind}_percentiles_ms", {})
    for pct, value in _PERCENTILE.findall(row):
        table[pct] = num(str(round(to_int(value, f"{kind} percentile") * to_ms, 6)))
    if "99.00" in table and (kind == "clat" or f"{direction}_clat_percentiles_ms" not in job):
        job[f"{direction}_lat_p99_ms"] = table["99.00"]


def _disks(rows: list[str]) -> list[dict]:
    """Disk stats lines: device name and utilisation %."""
    disks = []
    for row in rows:
        match = _DISK.match(row)
        if match:
            disks.append({"name": match.group(1),
                          "util_pct": non_negative(to_float(match.group(2), "disk util"), "disk util", "%")})
    return disks
