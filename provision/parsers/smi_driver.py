"""Parse ``nvidia-smi --query-gpu=driver_version --format=csv,noheader`` (nvidia-smi 535-570).

One driver version per GPU line ("550.54.15"). ``driver_version`` is the version every line
gives and ``gpu_count`` the number of lines. Raises ParseError unless every non-blank line is a
version, or when the lines give several versions (a node runs one driver); ``complete`` is
false when the text does not end with a newline.
"""
from __future__ import annotations

import re

from provision.errors import ParseError
from provision.parsers._util import refuse, require_text

TOOL = "nvidia-smi-driver"
TOOLS = (TOOL,)
_VERSION = re.compile(r"^\d+(?:\.\d+)+$")


def parse(text: str) -> dict:
    """Parse driver_version lines into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi driver_version")
    rows = [r.strip() for r in text.splitlines() if r.strip()]
    odd = next((r for r in rows if not _VERSION.match(r)), None)
    if odd is not None:
        raise refuse("nvidia-smi driver_version", f"not a version line: {odd[:80]!r}")
    versions = sorted(set(rows))
    if len(versions) > 1:
        raise ParseError(f"nvidia-smi reported several driver versions: {', '.join(versions)}")
    return {"tool": TOOL, "complete": text.endswith("\n"), "driver_version": versions[0], "gpu_count": len(rows)}
