"""Text from nodes and files, made safe to print on the operator's terminal.

A node controls much of what the console shows: a tool's last stderr line in the summary, an IB
node description in ``provision fabric``, a text value in ``provision history``, an install task's
message. A terminal obeys the control characters in it: ESC starts a CSI or OSC sequence (clear
the screen, set the window title, colour a fake "all nodes passed" line), CR returns to the line's
start so what follows overwrites it, BS erases, BEL rings, the C1 controls (U+0080-U+009F) are
8-bit CSI/OSC on many terminals, and the bidirectional overrides and isolates (Unicode UAX #9,
and Trojan Source, CVE-2021-42574) reorder what is shown. ``visible`` writes each of them as a
Python escape (``\\x1b``, ``\\r``, ``\\u202e``) so the text reads as it was sent and does nothing.
Every line ``provision`` prints goes through it (``provision.cli``); ``newlines=False`` is for a
field inside a line, where a newline would start a line the node wrote.
"""
from __future__ import annotations

# Unicode bidi embedding, override and isolate controls and the marks (UAX #9, Table 1).
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# The line and paragraph separators: a line break to some viewers, invisible to others.
SEPARATORS = "\u2028\u2029"


def _escape(code: int) -> str:
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CONTROLS = [c for c in range(0x20) if c not in (0x09, 0x0A)] + [0x7F] + list(range(0x80, 0xA0))
_ESCAPES = {c: _escape(c) for c in _CONTROLS + [ord(ch) for ch in BIDI + SEPARATORS]}
_LINES = str.maketrans(_ESCAPES)  # a tab and a newline kept
_FIELD = str.maketrans({**_ESCAPES, 0x0A: "\\n"})


def visible(text: object, newlines: bool = True) -> str:
    """``text`` (str() of it) with every terminal control character written as an escape; a tab kept,
    and a newline kept unless ``newlines`` is False."""
    return str(text).translate(_LINES if newlines else _FIELD)


def cut(text: str, most: int = 300) -> str:
    """``text`` at most ``most`` characters: a longer one keeps its start and end around the count left out
    (a 100,000-character path in an error message still names where it starts and ends)."""
    if len(text) <= most:
        return text
    keep = max(most - 40, 20)
    left = len(text) - keep
    return f"{text[: keep // 2]}...[{left} characters]...{text[len(text) - keep // 2:]}"


def cut_words(text: str, most_word: int = 200, most: int = 2000) -> str:
    """``text`` with each word (a run without spaces) longer than ``most_word`` cut (``cut``), then the whole
    at most ``most`` characters: an error message naming a 100,000-character path stays one readable line."""
    words = [cut(w, most_word) for w in text.split(" ")]
    return cut(" ".join(words), most)
