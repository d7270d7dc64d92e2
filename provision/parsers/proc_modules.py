"""Parse ``/proc/modules`` (kernel/module/procfs.c m_show()): one loaded module per line.

Each line is "name size refcount used_by state address [taint]", e.g. "nvidia 54300672 67
nvidia_modeset,nvidia_uvm, Live 0x0000000000000000 (POE)": ``used_by`` is the comma-separated list
(trailing comma) or "-" for none, ``state`` one of "Live", "Loading", "Unloading". ``modules`` maps
each name to {``size`` (bytes), ``used_by`` (list), ``state``}. Raises ParseError for an empty text or a
non-empty line that is not of that form.
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, non_negative, refuse, require_text, to_int

TOOL = "proc-modules"
TOOLS = (TOOL,)
_LINE = re.compile(r"^([\w-]{1,64}) (\d{1,20}) (-?\d{1,10}|-) (\S{1,4096}) (Live|Loading|Unloading) "
                   r"(0x[0-9a-fA-F]{1,16})(?: \([A-Z+-]{1,32}\))?$")


def parse(text: str) -> dict:
    """Parse /proc/modules into {"modules": {name: {"size", "used_by", "state"}}}."""
    require_text(text, "/proc/modules")
    modules: dict[str, dict] = {}
    for number, row in enumerate(lines(text), 1):
        if not row.strip():
            continue
        match = _LINE.match(row.strip())
        if not match:
            raise refuse("/proc/modules", f"line {number} is not 'name size refcount used_by state address'")
        name, size, _, used, state, _ = match.groups()
        modules[name] = {"size": non_negative(to_int(size, "module size"), f"{name} size"),
                         "used_by": [] if used == "-" else [m for m in used.split(",") if m],
                         "state": state}
    return {"tool": TOOL, "complete": True, "modules": modules}
