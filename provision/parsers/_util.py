"""Small helpers shared by the tool-output parsers: numbers, "N/A", lines, input bounds.

Every helper is pure. ``num`` and friends return ``None`` for the placeholders
the NVIDIA and Mellanox tools print where they have no value ("N/A",
"[N/A]", "Unknown", "[Not Supported]", "-", "ERR!"), never 0.

Numbers read from tool output are finite or the parse fails: a token that is
longer than ``MAX_NUMBER_CHARS`` or overflows a float ("1e400") raises ParseError
rather than becoming infinity (which would pass a lower bound and make report.json
invalid JSON) or a ValueError (Python's int() refuses more than 4300 digits).
``to_int``/``to_float`` convert a token the caller's pattern already matched;
``in_range``, ``non_negative`` and ``temperature`` refuse physically impossible
values. ``check_size`` bounds the text a parser is handed.
"""
from __future__ import annotations

import math
import re

from provision.errors import ParseError

# The largest saved output parse_tool reads (a week of `journalctl -k` on a busy node is a few
# MiB) and the longest line: a kernel log record is at most 1-2 KiB (CONSOLE_LOG_MAX, later
# PRINTK_MESSAGE_MAX, https://github.com/torvalds/linux/blob/master/kernel/printk/internal.h) and
# the widest tables (`nvidia-smi topo -m` on 72 GPUs) a few hundred characters, so a longer line
# is not a tool's output.
MAX_TEXT_CHARS = 64 * 2**20
MAX_LINE_CHARS = 64 * 2**10
# The longest number any supported tool prints is a byte count (fio's io_bytes: 20 digits).
MAX_NUMBER_CHARS = 64
# GPU temperatures a sensor can report: silicon operating ranges in NVIDIA's data-centre GPU
# datasheets are 0 to about 105 C (slowdown and shutdown near 90-105 C); readings outside
# -50..150 C are a broken sensor or corrupt output, never a temperature to judge.
TEMP_RANGE_C = (-50.0, 150.0)

_MISSING = {"", "n/a", "[n/a]", "na", "none", "unknown", "[unknown]", "[not supported]",
            "not supported", "-", "--", "err!", "[err!]", "<unknown>"}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NON_FINITE = re.compile(r"[-+]?(?:inf|infinity|nan)", re.IGNORECASE)
_MPI_TAG = re.compile(r"^(\[\d+,\d+\]<(?:stdout|stderr)>:)\s?")


def is_missing(text: str | None) -> bool:
    """True when ``text`` is a tool's placeholder for "no value"."""
    return text is None or text.strip().lower() in _MISSING


def num(text: str | None) -> int | float | None:
    """The first number in ``text`` ("72W" -> 72, "43.89 W" -> 43.89, "16x" -> 16).

    Integers stay ``int``; placeholders and text without a number give ``None``. A value
    printed as "inf", "nan" (C's printf of a non-finite double) or one that overflows a
    float ("1e400") is a ParseError: no tool's figure is infinite.
    """
    if text is None or is_missing(text):
        return None
    first = text.split(None, 1)[0]
    if _NON_FINITE.fullmatch(first):
        raise ParseError(f"value {_show(first)} is not a finite number")
    match = _NUMBER.search(text)
    if not match:
        return None
    token = match.group(0)
    if re.fullmatch(r"[-+]?\d+", token):
        return to_int(token)
    return to_float(token)


def to_int(token: str, what: str = "number") -> int:
    """``int(token)`` for a token a pattern matched as digits; ParseError if it is not one or too long."""
    if len(token) > MAX_NUMBER_CHARS:
        raise ParseError(f"{what} {_show(token)} is longer than {MAX_NUMBER_CHARS} characters")
    try:
        return int(token)
    except ValueError:
        raise ParseError(f"{what} {_show(token)} is not an integer") from None


def to_float(token: str, what: str = "number") -> float:
    """``float(token)``, finite; ParseError for "1.2.3", "inf", "nan", "1e400" or a token too long."""
    if len(token) > MAX_NUMBER_CHARS:
        raise ParseError(f"{what} {_show(token)} is longer than {MAX_NUMBER_CHARS} characters")
    try:
        value = float(token)
    except ValueError:
        raise ParseError(f"{what} {_show(token)} is not a number") from None
    if not math.isfinite(value):
        raise ParseError(f"{what} {_show(token)} is not a finite number")
    return value


def finite(value: float, what: str = "number") -> float:
    """``value`` unless it is infinite or NaN (ParseError naming ``what``)."""
    if not math.isfinite(value):
        raise ParseError(f"{what} is {value} (not a finite number)")
    return value


def in_range(value, low: float | None, high: float | None, what: str, unit: str = ""):
    """``value`` (None passes through) unless it lies outside [low, high]: ParseError naming it."""
    if value is None:
        return None
    if isinstance(value, float):
        finite(value, what)
    if (low is not None and value < low) or (high is not None and value > high):
        unit = unit and " " + unit
        if high is None:
            wrong = "negative" if low == 0 else f"below {low:g}{unit}"
        else:
            wrong = f"above {high:g}{unit}" if low is None else f"outside {low:g}..{high:g}{unit}"
        shown = value if isinstance(value, int) else f"{value:g}"
        raise ParseError(f"{what} {shown}{unit} is {wrong}: not a reading a working tool prints")
    return value


def non_negative(value, what: str, unit: str = ""):
    """``value`` (None passes) unless negative: bandwidths, rates and counts cannot be."""
    return in_range(value, 0, None, what, unit)


def temperature(value, what: str = "temperature"):
    """A temperature in C (None passes) inside ``TEMP_RANGE_C``, else ParseError."""
    return in_range(value, *TEMP_RANGE_C, what, "C")


def check_size(text: str) -> None:
    """ParseError when ``text`` is over ``MAX_TEXT_CHARS`` or has a line over ``MAX_LINE_CHARS``."""
    if len(text) > MAX_TEXT_CHARS:
        raise ParseError(f"the text is {len(text)} characters, over the {MAX_TEXT_CHARS} a tool's output may have")
    if len(text) > MAX_LINE_CHARS:
        longest = max(map(len, lines(text)))
        if longest > MAX_LINE_CHARS:
            raise ParseError(f"a line is {longest} characters, over the {MAX_LINE_CHARS} a tool's output line "
                             "may have")


def is_digits(token: str) -> bool:
    """True for a token of ASCII digits ("²" is ``str.isdigit`` but not a number int() reads)."""
    return token.isascii() and token.isdigit()


def integer(text: str | None) -> int | None:
    """``num`` truncated to an int (None stays None)."""
    value = num(text)
    return None if value is None else int(value)


def yes_no(text: str | None) -> bool | None:
    """"Yes"/"No", "On"/"Off", "Enabled"/"Disabled", "True"/"False" -> bool; else None."""
    if text is None or is_missing(text):
        return None
    word = text.strip().lower()
    if word in {"yes", "on", "enabled", "true", "active"}:
        return True
    if word in {"no", "off", "disabled", "false", "not active"}:
        return False
    return None


def clean(text: str | None) -> str | None:
    """Stripped ``text``, or None for a placeholder."""
    return None if text is None or is_missing(text) else text.strip()


def lines(text: str) -> list[str]:
    """Lines of ``text`` split on \\n, \\r\\n and bare \\r (progress output)."""
    return re.split(r"\r\n|\r|\n", text)


def strip_mpi_tag(line: str) -> str:
    """Drop an ``mpirun --tag-output`` prefix such as ``[1,0]<stdout>:``, and the same tag inside the
    line: Open MPI tags each piece of output it forwards, so a line that reached mpirun in two reads
    carries its tag again where it was cut (seen with Debian 12's Open MPI 4.1.4 in
    ``tests/integration/test_mpi_rack.py``: ``   268435456      67108864    [1,0]<stdout>: float     sum``).
    A tag of another rank inside the line is left: that line is two ranks' output interleaved."""
    m = _MPI_TAG.match(line)
    return line[m.end():].replace(m.group(1), "") if m else line


def require_text(text: str, what: str) -> None:
    """Raise ParseError when ``text`` is empty: no tool prints nothing at all."""
    if not text or not text.strip():
        raise ParseError(f"not {what} output: the text is empty")


def refuse(what: str, missing: str) -> ParseError:
    """The one-line error for text that is not ``what``'s output."""
    return ParseError(f"not {what} output: {missing}")


def _show(token: str) -> str:
    """A token for an error message, cut to 20 characters."""
    return repr(token if len(token) <= 20 else token[:20] + "...")
