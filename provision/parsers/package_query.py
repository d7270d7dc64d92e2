"""Parse installed-package lines: ``dpkg-query -W --showformat='${Package} ${Version}
${db:Status-Abbrev}\\n' PKG...`` ("libnccl2 2.21.5-1+cuda12.4 ii "; dpkg 1.16.2+ for
db:Status-Abbrev) or ``rpm -q --queryformat '%{NAME} %{VERSION}-%{RELEASE}\\n' PKG...``
("libnccl 2.21.5-1+cuda12.4"; rpm 4.x).

``packages`` maps each name to its ``version`` as printed and its ``status`` (dpkg's two or
three letters, "ii" installed; None for rpm, which prints no status). Raises ParseError unless
every non-blank line is a package line; ``complete`` is false when the text does not end with a
newline (both tools end every line with one).
"""
from __future__ import annotations

import re

from provision.parsers._util import refuse, require_text

TOOL = "package-query"
TOOLS = (TOOL,)
_PACKAGE = re.compile(r"^([a-z0-9][a-z0-9+.-]+) (\S+)(?: (\S{2,3}))?\s*$")


def parse(text: str) -> dict:
    """Parse dpkg-query / rpm -q lines into the contract's dict (see module doc)."""
    require_text(text, "dpkg-query/rpm -q")
    found = {}
    for row in (r.strip() for r in text.splitlines()):
        if not row:
            continue
        match = _PACKAGE.match(row)
        if match is None:
            raise refuse("dpkg-query/rpm -q", f"not a package line: {row[:80]!r}")
        name, version, status = match.groups()
        found[name] = {"version": version, "status": status}
    return {"tool": TOOL, "complete": text.endswith("\n"), "packages": found}
