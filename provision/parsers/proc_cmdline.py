"""Parse ``/proc/cmdline``: the kernel's boot parameters, one line (Documentation/admin-guide/kernel-parameters.rst).

Parameters are separated by blanks; a value may be double-quoted to hold blanks
(``param="spaces in here"``, lib/cmdline.c next_arg()); the quotes are dropped. ``params`` is every
parameter in order as [key, value or None] (``quiet`` -> ["quiet", None]; ``root=UUID=x`` ->
["root", "UUID=x"]: the key ends at the first "="), ``args`` maps each key to its last value (the kernel
takes the last of repeated parameters). Raises ParseError for an empty text, more than one non-empty
line (not /proc/cmdline), or a line without any ``key=value`` parameter.
"""
from __future__ import annotations

from provision.parsers._util import lines, refuse, require_text

TOOL = "proc-cmdline"
TOOLS = (TOOL,)


def parse(text: str) -> dict:
    """Parse /proc/cmdline into {"params": [[key, value], ...], "args": {key: value}}."""
    require_text(text, "/proc/cmdline")
    rows = [row for row in lines(text) if row.strip()]
    if len(rows) != 1:
        raise refuse("/proc/cmdline", f"{len(rows)} non-empty lines, the kernel writes one")
    params = [_param(token) for token in _tokens(rows[0])]
    if not any(value is not None for _, value in params):
        raise refuse("/proc/cmdline", "no key=value parameter")
    return {"tool": TOOL, "complete": True, "params": [list(p) for p in params],
            "args": {key: value for key, value in params}}


def _tokens(line: str) -> list[str]:
    """Blank-separated parameters; blanks inside double quotes stay (lib/cmdline.c next_arg())."""
    tokens: list[str] = []
    current: list[str] = []
    quoted = False
    for char in line.strip():
        if char == '"':
            quoted = not quoted
        elif char.isspace() and not quoted:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        tokens.append("".join(current))
    return tokens


def _param(token: str) -> tuple[str, str | None]:
    key, equals, value = token.partition("=")
    key = key.replace('"', "")
    if not equals:
        return key, None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return key, value
