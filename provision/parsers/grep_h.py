"""Parse ``grep -H`` output, "path:value" per line (the sysfs reads of the host_settings check).

``grep -r -H --include=scaling_governor . /sys/devices/system/cpu/cpufreq`` prints
"/sys/devices/system/cpu/cpufreq/policy0/scaling_governor:performance" and
``find /sys/kernel/iommu_groups ... -exec grep -H . {} +`` prints "/sys/kernel/iommu_groups/7/type:DMA"
(grep's -H: "the file name for each match", the name then ":" then the line; GNU grep manual).
``files`` maps each path to its value (the text after the path's colon, stripped of the line end); a
path printed twice keeps its first value. No public capture was used: the format is grep's. A text with
no non-blank character is ``{"files": {}}`` (grep found nothing: no cpufreq driver, no IOMMU groups).
The path is the text before the first ":", and must be a path (contain "/", no blanks). A line of the tools'
own complaints ("grep: PATH: No such file or directory", "find: 'PATH': Permission denied": GNU grep's and
findutils' diagnostics, program name then ": ") goes to ``errors`` as printed (a step that reads its exit
status from the text keeps standard error after standard output). Raises ParseError for any other non-empty line.
"""
from __future__ import annotations

from provision.parsers._util import lines, refuse

TOOL = "grep-h"
TOOLS = (TOOL,)
DIAGNOSTICS = ("grep: ", "find: ")  # the programs' own messages: the program name, then ": "


def parse(text: str) -> dict:
    """Parse ``grep -H`` output into {"files": {path: value}}."""
    files: dict[str, str] = {}
    errors: list[str] = []
    for number, row in enumerate(lines(text), 1):
        if not row.strip():
            continue
        if row.startswith(DIAGNOSTICS):
            errors.append(row.strip())
            continue
        path, colon, value = row.partition(":")
        if not colon or "/" not in path or any(c.isspace() for c in path):
            raise refuse("grep -H", f"line {number} is not 'path:value'")
        files.setdefault(path, value.rstrip("\r\n"))
    return {"tool": TOOL, "complete": True, "files": files, "errors": errors}
