"""Parse ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``.

The header names the query fields, with the unit in brackets unless ``nounits``
("utilization.gpu [%]", "power.draw [W]"); ``columns`` holds the names without
units and ``units`` the units. Values keep their unit unless ``nounits`` ("182.89 W");
numeric values become numbers, "[N/A]"/"N/A"/"[Not Supported]" become None, other
text stays text. With ``noheader`` the columns are unknown: ``columns`` is None and
rows are keyed by position (0, 1, ...). Lines before the header (a ``watch``
banner) and repeated headers (``-l`` loops) are skipped. A last row with fewer
fields than the header is dropped and makes ``complete`` false. Raises ParseError
when no line has the shape of a CSV header or row.
"""
from __future__ import annotations

import csv
import re

from provision.parsers._util import is_missing, lines, non_negative, num, refuse, require_text, temperature

TOOL = "nvidia-smi-csv"
TOOLS = (TOOL,)
_FIELD = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?:\s*\[([^\]]+)\])?$")
_PLAIN_FIELDS = {"index", "name", "uuid", "serial", "count", "timestamp", "pstate",
                 "driver_version", "vbios_version", "compute_mode", "gom", "persistence_mode"}
_VALUE = re.compile(r"^[-+]?\d+(?:\.\d+)?(?:\s*(%|W|MiB|MHz|C|KiB|GiB|MB|GB|s|ms|us|V|mV))?$")
# Units of quantities that cannot be negative (power, memory, clocks, utilisation, time).
_NOT_NEGATIVE = {"%", "W", "MiB", "MHz", "KiB", "GiB", "MB", "GB", "s", "ms", "us"}


def parse(text: str) -> dict:
    """Parse nvidia-smi CSV query output into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi --format=csv")
    try:
        records = [[c.strip() for c in r] for r in csv.reader(lines(text), skipinitialspace=True) if r]
    except csv.Error as exc:  # a field over csv.field_size_limit() (128 KiB)
        raise refuse("nvidia-smi --format=csv", f"unreadable CSV ({exc})") from None
    start = next((i for i, r in enumerate(records) if _is_header(r)), None)
    if start is None:
        return _headless(records)
    header = records[start]
    names = [re.sub(r"\s*\[[^\]]*\]$", "", h) for h in header]
    units = [_unit(h) for h in header]
    rows, complete = _rows(records[start + 1:], header, names, units)
    return {
        "tool": TOOL,
        "complete": complete,
        "columns": names,
        "units": dict(zip(names, units)),
        "rows": rows,
    }


def _is_header(record: list[str]) -> bool:
    """A header: every field is a query name such as "power.draw [W]"."""
    return all(_FIELD.match(field) for field in record) and any(
        "." in f or f.split()[0] in _PLAIN_FIELDS for f in record)


def _unit(field: str) -> str | None:
    """The unit in a header field's brackets ("power.draw [W]" -> "W"), if any."""
    match = _FIELD.match(field)
    return match.group(1) if match else None


def _rows(records: list[list[str]], header: list[str], names: list[str],
          units: list[str | None]) -> tuple[list[dict], bool]:
    """Rows as dicts of converted values; False when the last row was cut short.

    A row is cut short when it has too few fields or a value lost the unit that
    the header promises (a truncated "184.35 W" reads "1").
    """
    rows, complete = [], True
    for record in records:
        if record == header:
            continue
        if len(record) != len(names) or not _has_units(record, units):
            complete = False
            continue
        rows.append({name: _value(v, name, unit) for name, v, unit in zip(names, record, units)})
        complete = True
    return rows, complete and bool(rows)


def _has_units(record: list[str], units: list[str | None]) -> bool:
    """Every numeric value of a column with a unit carries that unit."""
    return all(not unit or is_missing(v) or not _VALUE.match(v) or v.endswith(unit)
               for v, unit in zip(record, units))


def _headless(records: list[list[str]]) -> dict:
    """``noheader`` output: rows keyed by position when every line is a value row.

    Every line but a ``watch`` banner must have the same number of fields (the
    last may be cut short) and hold a number; otherwise this is not CSV output.
    """
    body = [r for r in records if not r[0].startswith("Every ")]
    width = len(body[0]) if body else 0
    whole = [r for r in body if len(r) == width]
    rows = [dict(enumerate(map(_value, r))) for r in whole]
    cut = len(body) - len(whole)
    if width < 2 or cut > 1 or (cut and len(body[-1]) == width) or \
            not all(any(_VALUE.match(v) for v in r) for r in whole):
        raise refuse("nvidia-smi --format=csv", "no 'name [unit], ...' header line and no value rows")
    return {"tool": TOOL, "complete": cut == 0, "columns": None, "units": None, "rows": rows}


def _value(text: str, name: str = "value", unit: str | None = None) -> int | float | str | None:
    """A number where the field is numeric (with or without its unit), else the text.

    A temperature (a ``temperature.*`` field, or "C") outside ``TEMP_RANGE_C`` and a negative
    power, memory, clock, utilisation or time raise ParseError: no working GPU reads so.
    """
    if is_missing(text):
        return None
    match = _VALUE.match(text)
    if not match:
        return text
    value = num(text)
    unit = match.group(1) or unit
    if unit == "C" or str(name).startswith("temperature."):
        return temperature(value, str(name))
    return non_negative(value, str(name), unit or "") if unit in _NOT_NEGATIVE else value
