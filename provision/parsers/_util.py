"""Small helpers shared by the tool-output parsers: numbers, "N/A", lines.

Every helper is pure. ``num`` and friends return ``None`` for the placeholders
the NVIDIA and Mellanox tools print where they have no value ("N/A",
"[N/A]", "Unknown", "[Not Supported]", "-", "ERR!"), never 0.
"""
from __future__ import annotations

import re

from provision.errors import ParseError

_MISSING = {"", "n/a", "[n/a]", "na", "none", "unknown", "[unknown]", "[not supported]",
            "not supported", "-", "--", "err!", "[err!]", "<unknown>"}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_MPI_TAG = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?")


def is_missing(text: str | None) -> bool:
    """True when ``text`` is a tool's placeholder for "no value"."""
    return text is None or text.strip().lower() in _MISSING


def num(text: str | None) -> int | float | None:
    """The first number in ``text`` ("72W" -> 72, "43.89 W" -> 43.89, "16x" -> 16).

    Integers stay ``int``; placeholders and text without a number give ``None``.
    """
    if text is None or is_missing(text):
        return None
    match = _NUMBER.search(text)
    if not match:
        return None
    token = match.group(0)
    if re.fullmatch(r"[-+]?\d+", token):
        return int(token)
    return float(token)


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
    """Drop an ``mpirun --tag-output`` prefix such as ``[1,0]<stdout>:``."""
    return _MPI_TAG.sub("", line)


def require_text(text: str, what: str) -> None:
    """Raise ParseError when ``text`` is empty: no tool prints nothing at all."""
    if not text or not text.strip():
        raise ParseError(f"not {what} output: the text is empty")


def refuse(what: str, missing: str) -> ParseError:
    """The one-line error for text that is not ``what``'s output."""
    return ParseError(f"not {what} output: {missing}")
