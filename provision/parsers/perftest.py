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

GPUDirect runs (``--use_cuda=N``, ``--use_cuda_bus_id``, ``--use_cuda_dmabuf``; perftest 4.4+ /
25.x, src/cuda_memory.c): ``cuda`` is {``device`` ("Picking device No. N", "Picking GPU number N", or
the "[pid = P, dev = N] device name = [...]" line of old perftest that printed "There are N devices
supporting CUDA, picking first..."), ``pci`` (the picked device's "CUDA device N: PCIe address is
BB:DD" as printed, or the bus id after "Finding PCIe BUS"), ``name`` (the "device name = [...]"),
``dmabuf`` (perftest printed "using DMA-BUF for GPU buffer" or "Calling ibv_reg_dmabuf_mr")}, None
when the run printed no "initializing CUDA" line. ``errors``: perftest's failure lines (stripped, as
printed) from ``_ERRORS``; a text with such a line and no result table parses (``bw_avg_Gbps`` None,
``complete`` true: the run ended in its failure) so a check can fail it; a text with neither a result,
a known failure, nor perftest's banner raises ParseError.

Units: ``bw_avg_Gbps`` converts MB/sec (x8/1000), MiB/sec (x8x2^20/1e9), Gb/sec
(as is); latencies in usec. ``complete`` is false when the last table is not
closed by a dashed line. Raises ParseError without a "#bytes" result header.
"""
from __future__ import annotations

import re
from typing import Any

from provision.parsers._util import lines, non_negative, num, refuse, require_text, to_int

TOOL = "perftest"
TOOLS = (TOOL,)
_KEY_CHARS = frozenset("*. -")  # with word characters, what a settings key is made of ("ibv_wr* API")
_UNIT = re.compile(r"BW average\[([^\]]+)\]")
_TO_GBPS = {"MB/sec": 8 / 1000, "MiB/sec": 8 * 2**20 / 1e9, "Gb/sec": 1.0, "Gbit/sec": 1.0}
# Failure lines perftest prints (fprintf(stderr, ...) unless noted), at linux-rdma/perftest
# 00b55b6660d0170dabe2c1b49193e8fbe265086e: src/perftest_resources.c:2306 "Couldn't allocate MR with
# error=%d" (older perftest, and :4298, "Couldn't allocate MR"), :2309 "OFED stack does not support
# DMA-BUF", :2471/:2480 "failed to create mr", :2800 "Failed to init memory", :2814 "Failed to create
# MR"; src/write_bw.c:174 (and the other tests) " Couldn't create IB resources"; src/cuda_memory.c
# (printf): :60 "cuInit(0) returned %d", :67 "cuDeviceGetCount() returned %d", :72 "There are no
# available device(s) that support CUDA", :76 "No such device ID (%d) exists in system", :101
# "cuCtxCreate_v2() error=%d" (older "cuCtxCreate() error="), :108 "cuCtxSetCurrent() error=%d", :146
# "Failed to load CUDA library dynamically", :163 "cuDeviceGetByPCIBusId failed with error: ...",
# :171 "Couldn't init GPU context: %d", :181 "DMA-BUF is not supported on this GPU", :226
# "cuMemAllocHost error=%d", :236 "cuMemAlloc error=%d", :271 "support for
# CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE is missing", :278 "cuMemGetHandleForAddressRange
# error=%d"; src/perftest_parameters.c:3706 "CUDA DMA-BUF cannot be used without CUDA".
_ERRORS = ("Couldn't allocate MR", "OFED stack does not support DMA-BUF", "failed to create mr",
           "Failed to init memory", "Failed to create MR", "Couldn't create IB resources", "cuInit(0) returned",
           "cuDeviceGetCount() returned", "There are no available device(s) that support CUDA",
           "No such device ID", "cuCtxCreate", "cuCtxSetCurrent() error", "Failed to load CUDA library",
           "cuDeviceGetByPCIBusId failed", "Couldn't init GPU context", "DMA-BUF is not supported on this GPU",
           "cuMemAllocHost error", "cuMemAlloc error", "support for CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE",
           "cuMemGetHandleForAddressRange error", "CUDA DMA-BUF cannot be used without CUDA")
_CUDA_PICK = re.compile(r"^Picking (?:device No\.|GPU number) (\d{1,6})$")
_CUDA_DEV = re.compile(r"^\[pid = \d{1,12}, dev = (\d{1,6})\] device name = \[(.*)\]$")
_CUDA_PCI = re.compile(r"^CUDA device (\d{1,6}): PCIe address is (\S+)$")
_LAT_KEYS = ["t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec", "t_stdev_usec",
             "p99_usec", "p99_9_usec"]


def parse(text: str) -> dict:
    """Parse perftest text into the contract's dict (see module doc)."""
    require_text(text, "perftest")
    rows = lines(text)
    tables = _tables(rows)
    extra = {"cuda": _cuda(rows), "errors": _errors(rows)}
    if not tables and extra["errors"]:
        return _started_only(rows) | extra | {"complete": True}  # the run ended in a known failure
    if not tables and any(_title(r) for r in rows) and any("Device" in r for r in rows):
        return _started_only(rows) | extra  # the test's banner, cut before any result
    if not tables:
        raise refuse("perftest", "no '#bytes #iterations ...' result header or known failure line")
    header_at, data, closed = tables[-1]
    settings = _settings(rows[:header_at])
    table = [_row(rows[header_at], r) for r in data]
    result: dict[str, Any] = {"tool": TOOL, "complete": closed and bool(data), "result_tables": len(tables),
              "test": settings.get("title"), "device": settings.get("Device"),
              "link_type": settings.get("Link type"), "transport": settings.get("Transport type"),
              "connection": settings.get("Connection type"), "mtu": settings.get("Mtu"),
              "rows": table, **extra}
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
    if "BW" in (settings.get("title") or "") or not settings.get("title"):
        result.update(bw_peak=None, bw_avg=None, units=None, bw_avg_Gbps=None)
    else:
        result.update({key: None for key in _LAT_KEYS})
    return result


def _errors(rows: list[str]) -> list[str]:
    """perftest's failure lines (``_ERRORS``), stripped, in order."""
    return [row.strip() for row in rows if row.strip().startswith(_ERRORS)]


def _cuda(rows: list[str]) -> dict | None:
    """The CUDA device a ``--use_cuda`` run picked (see module doc); None without "initializing CUDA"."""
    if not any(row.strip() == "initializing CUDA" for row in rows):
        return None
    device: int | None = None
    name: str | None = None
    pci: str | None = None
    addresses: dict[int, str] = {}
    dmabuf = False
    for row in rows:
        stripped = row.strip()
        if (pick := _CUDA_PICK.match(stripped)) and device is None:
            device = to_int(pick.group(1), "CUDA device")
        elif dev := _CUDA_DEV.match(stripped):
            device = to_int(dev.group(1), "CUDA device") if device is None else device
            name = dev.group(2).strip() or None
        elif address := _CUDA_PCI.match(stripped):
            addresses.setdefault(to_int(address.group(1), "CUDA device"), address.group(2))
        elif stripped.startswith("Finding PCIe BUS "):
            pci = stripped.removeprefix("Finding PCIe BUS ").strip() or None
        elif stripped.startswith(("using DMA-BUF for GPU buffer", "Calling ibv_reg_dmabuf_mr")):
            dmabuf = True
    return {"device": device, "pci": addresses.get(device, pci) if device is not None else pci,
            "name": name, "dmabuf": dmabuf}


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
    for row in map(rows.__getitem__, range(start + 1, len(rows))):  # a slice copies: quadratic in tables
        stripped = row.strip()
        if stripped.startswith("---"):
            return start, data, True
        if stripped.startswith(("#bytes", "*")) or _title(row):
            break
        tokens = stripped.split()
        if len(tokens) > 1 and all(re.fullmatch(r"[\d.eE+-]+", t) and num(t) is not None for t in tokens):
            data.append(stripped)
    return start, data, False


def _settings(rows: list[str]) -> dict:
    """Title and "Key : value" settings of the header block before a table."""
    settings: dict[str, str] = {}
    for row in rows:
        title = _title(row)
        if title and ":" not in row:
            settings = {"title": title}
        elif ":" in row and "address" not in row:
            settings.update(_pairs(row))
    return settings


def _title(row: str) -> str | None:
    """The test's title from a banner line "   RDMA_Write BW Test", else None.

    String operations: the pattern ``^\\s*(\\S.*?)\\s+Test\\s*$`` is quadratic on a run of blanks.
    """
    head = row.strip().removesuffix("Test")
    if len(head) == len(row.strip()) or not head[-1:].isspace():
        return None
    return head.rstrip() or None


def _pairs(row: str) -> list[tuple[str, str]]:
    """The "Key : value" pairs of one settings line, in order (two per line, TAB or space separated).

    What ``re.findall(r"(\\w[\\w*. -]*?)\\s*:\\s*(\\S+)", row)`` finds, in one pass: from each colon
    back over blanks and key characters (not into the previous pair) to the key's first word
    character, and forward to the value. That pattern is quadratic on a long line of blanks.
    """
    pairs: list[tuple[str, str]] = []
    done = 0  # where the previous pair's value ended
    for colon in [i for i, c in enumerate(row) if c == ":"]:
        if colon < done:
            continue
        key = _key_before(row, colon, done)
        if key is None:
            continue
        first = colon + 1
        while first < len(row) and row[first].isspace():
            first += 1
        last = first
        while last < len(row) and not row[last].isspace():
            last += 1
        if last > first:
            pairs.append((row[key[0]:key[1]], row[first:last]))
            done = last
    return pairs


def _key_before(row: str, colon: int, done: int) -> tuple[int, int] | None:
    """(start, end) of the key ending before ``colon``: blanks skipped, then key characters back
    to ``done`` or another character, from the first word character; None when there is none."""
    end = colon
    while end > done and row[end - 1].isspace():
        end -= 1
    start = end
    while start > done and (row[start - 1] in _KEY_CHARS or _word(row[start - 1])):
        start -= 1
    while start < end and not _word(row[start]):
        start += 1
    return (start, end) if start < end else None


def _word(char: str) -> bool:
    """A regular expression's ``\\w``: a letter, digit or underscore."""
    return char.isalnum() or char == "_"


def _row(header: str, data: str) -> dict:
    """One data line as numbers, keyed by the table kind."""
    values = [non_negative(num(t), "result") for t in data.split()]
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
