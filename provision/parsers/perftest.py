"""Parse perftest output: ``ib_{write,read,send,atomic}_{bw,lat}`` and ``raw_ethernet_*``.

Handles perftest 4.x-25.x / DOCA-OFED headers (two "Key : value" pairs per line,
TAB or space separated, new "Lock-free"/"Using Enhanced Reorder" fields), the
bandwidth table "#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]" in
MB/sec (default), MiB/sec (newer perftest) or Gb/sec (``--report_gbits``), the
latency table with 5 to 9 columns (percentile columns contain spaces), warning
lines ("Conflicting CPU frequency values detected ...") anywhere between header
and rows, ``-a`` runs with one row per size (the last, largest row is reported,
all are in ``rows``), and server and client output concatenated in one file
(the last result table is reported; ``result_tables`` counts them).

Units: ``bw_avg_Gbps`` converts MB/sec (x8/1000), MiB/sec (x8x2^20/1e9), Gb/sec
(as is); latencies in usec. ``complete`` is false when the last table is not
closed by a dashed line. Raises ParseError without a "#bytes" result header.
"""
from __future__ import annotations

import re
from typing import Any

from provision.parsers._util import lines, num, refuse, require_text

TOOL = "perftest"
TOOLS = (TOOL,)
_TITLE = re.compile(r"^\s*(\S.*?)\s+Test\s*$")
_PAIR = re.compile(r"(\w[\w*. -]*?)\s*:\s*(\S+)")
_UNIT = re.compile(r"BW average\[([^\]]+)\]")
_TO_GBPS = {"MB/sec": 8 / 1000, "MiB/sec": 8 * 2**20 / 1e9, "Gb/sec": 1.0, "Gbit/sec": 1.0}
_LAT_KEYS = ["t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec", "t_stdev_usec",
             "p99_usec", "p99_9_usec"]


def parse(text: str) -> dict:
    """Parse perftest text into the contract's dict (see module doc)."""
    require_text(text, "perftest")
    rows = lines(text)
    tables = _tables(rows)
    if not tables and any(_TITLE.match(r) for r in rows) and any("Device" in r for r in rows):
        return _started_only(rows)  # the test's banner, cut before any result
    if not tables:
        raise refuse("perftest", "no '#bytes #iterations ...' result header")
    header_at, data, closed = tables[-1]
    settings = _settings(rows[:header_at])
    table = [_row(rows[header_at], r) for r in data]
    result: dict[str, Any] = {"tool": TOOL, "complete": closed and bool(data), "result_tables": len(tables),
              "test": settings.get("title"), "device": settings.get("Device"),
              "link_type": settings.get("Link type"), "transport": settings.get("Transport type"),
              "connection": settings.get("Connection type"), "mtu": settings.get("Mtu"),
              "rows": table}
    last = table[-1] if table else {}
    result.update(msg_size=last.get("msg_size"), iterations=last.get("iterations"))
    result.update({k: v for k, v in last.items() if k not in ("msg_size", "iterations")})
    if "BW" in rows[header_at]:
        result.setdefault("bw_peak", None)
        result.setdefault("bw_avg", None)
        result["units"] = _units(rows[header_at])
        result["bw_avg_Gbps"] = _to_gbps(result["bw_avg"], result["units"])
    else:
        result.update({key: result.get(key) for key in _LAT_KEYS})
    return result


def _started_only(rows: list[str]) -> dict:
    """A run cut off after perftest's settings banner: what it tested, no results."""
    settings = _settings(rows)
    result: dict[str, Any] = {"tool": TOOL, "complete": False, "result_tables": 0, "test": settings.get("title"),
              "device": settings.get("Device"), "link_type": settings.get("Link type"), "rows": [],
              "msg_size": None, "iterations": None}
    if "BW" in (settings.get("title") or ""):
        result.update(bw_peak=None, bw_avg=None, units=None, bw_avg_Gbps=None)
    else:
        result.update({key: None for key in _LAT_KEYS})
    return result


def _tables(rows: list[str]) -> list[tuple[int, list[str], bool]]:
    """Each result table: its header index, its data lines, whether dashes closed it."""
    tables = []
    for i, row in enumerate(rows):
        if row.strip().startswith("#bytes"):
            tables.append(_table_body(rows, i))
    return tables


def _table_body(rows: list[str], start: int) -> tuple[int, list[str], bool]:
    """Data lines after a header (warnings skipped) up to the closing dashes."""
    data: list[str] = []
    for row in rows[start + 1:]:
        stripped = row.strip()
        if stripped.startswith("---"):
            return start, data, True
        if stripped.startswith(("#bytes", "*")) or _TITLE.match(row):
            break
        tokens = stripped.split()
        if tokens and all(num(t) is not None and re.fullmatch(r"[\d.eE+-]+", t) for t in tokens):
            data.append(stripped)
    return start, data, False


def _settings(rows: list[str]) -> dict:
    """Title and "Key : value" settings of the header block before a table."""
    settings: dict[str, str] = {}
    for row in rows:
        title = _TITLE.match(row)
        if title and ":" not in row:
            settings = {"title": title.group(1)}
        elif ":" in row and "address" not in row:
            settings.update((k.strip(), v) for k, v in _PAIR.findall(row))
    return settings


def _row(header: str, data: str) -> dict:
    """One data line as numbers, keyed by the table kind."""
    values = [num(t) for t in data.split()]
    row = {"msg_size": values[0], "iterations": values[1]}
    if "BW" in header:
        names = ["bw_peak", "bw_avg", "msg_rate_Mpps"]
    else:
        names = _LAT_KEYS
    row.update(zip(names, values[2:]))
    return row


def _units(header: str) -> str | None:
    """The bandwidth unit as printed: "MB/sec", "MiB/sec" or "Gb/sec"."""
    match = _UNIT.search(header)
    return match.group(1) if match else None


def _to_gbps(value: float | None, units: str | None) -> float | None:
    """Bandwidth in Gb/s (10^9 bits per second)."""
    factor = _TO_GBPS.get(units or "")
    return None if value is None or factor is None else round(value * factor, 6)
