"""Parse ``uname -r``: the running kernel's release ("6.8.0-45-generic", "5.14.0-427.13.1.el9_4.x86_64").

The kernel prints utsname()->release, which starts with VERSION.PATCHLEVEL[.SUBLEVEL] and carries
the build's EXTRAVERSION and LOCALVERSION (Makefile: KERNELRELEASE), so a release is digits.digits
followed by characters from [0-9A-Za-z._+~-]. No public capture of a bare ``uname -r`` was used: the
format is the kernel's; the tests use releases seen in the captures under tests/data/samples/.
``kernel`` is the first non-empty line, stripped. Raises ParseError when there is none or it is not a
release string.
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, require_text

TOOL = "uname-r"
TOOLS = (TOOL,)
_RELEASE = re.compile(r"\d{1,4}\.\d{1,4}[0-9A-Za-z._+~-]{0,200}")


def parse(text: str) -> dict:
    """Parse ``uname -r`` output into {"kernel": release}."""
    require_text(text, "uname -r")
    first = next(row.strip() for row in lines(text) if row.strip())
    if not _RELEASE.fullmatch(first):
        raise refuse("uname -r", f"first line {first[:40]!r} is not a kernel release")
    return {"tool": TOOL, "complete": True, "kernel": first}
