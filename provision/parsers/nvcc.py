"""Parse ``nvcc --version`` (CUDA 11.x-12.x).

The banner's last lines read "Cuda compilation tools, release 12.4, V12.4.131": ``release`` is
the toolkit's major.minor ("12.4"), ``version`` the compiler's own V number ("12.4.131"; it
ships in toolkit 12.4.1, so it is not the toolkit's patch level). Raises ParseError without the
"Cuda compiler driver" or "Cuda compilation tools" banner; ``complete`` is false when the
release line is missing (the output was cut before it).
"""
from __future__ import annotations

import re

from provision.parsers._util import refuse, require_text

TOOL = "nvcc"
TOOLS = (TOOL,)
_NVCC = re.compile(r"Cuda compilation tools, release (\d+\.\d+), V(\S+)")


def parse(text: str) -> dict:
    """Parse nvcc --version text into the contract's dict (see module doc)."""
    require_text(text, "nvcc --version")
    if "Cuda compiler driver" not in text and "Cuda compilation tools" not in text:
        raise refuse("nvcc --version", "no 'Cuda compilation tools' banner")
    match = _NVCC.search(text)
    return {"tool": TOOL, "complete": match is not None,
            "release": match.group(1) if match else None, "version": match.group(2) if match else None}
