"""Parse ``nvidia-smi nvlink -s`` (``--status``).

Handles every driver's layout: a "GPU n: <name> (UUID: ...)" line (UUID may be
redacted) followed by "Link k: 25.781 GB/s" or "Link k: <inactive>" lines; GPUs
without NVLink print no link lines, and newer drivers print "NVML: Unable to
retrieve NVLink information as all links are inActive" instead. Output elided by
hand ("....") is read for the GPUs present (``elided`` true).

Units: ``speed_GBps`` in GB/s as printed (None when inactive). Raises ParseError
when no "GPU n: ..." line is followed by link lines (``nvidia-smi -L`` output, or
GPUs without NVLink, are not NVLink status). ``complete`` is false when the text ends
with the last GPU showing fewer links than the others (its links cut off).
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, non_negative, num, refuse, require_text, to_int

TOOL = "nvidia-smi-nvlink"
TOOLS = (TOOL,)
# The name, UUID and status are cut out in code: lazy groups before ``\s*$`` are quadratic on
# a long run of blanks.
_GPU = re.compile(r"^GPU\s+(\d+):(.*)$")
_LINK = re.compile(r"^\s*Link\s+(\d+):(.*)$")
_ALL_INACTIVE = re.compile(r"all links are inactive", re.IGNORECASE)


def parse(text: str) -> dict:
    """Parse ``nvidia-smi nvlink -s`` text into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi nvlink -s")
    gpus: list[dict] = []
    for row in lines(text):
        gpu, link = _GPU.match(row), _LINK.match(row)
        if link and not link.group(2).strip():
            link = None
        if gpu:
            name, uuid = _name_uuid(gpu.group(2).strip())
            gpus.append({"index": to_int(gpu.group(1), "GPU index"), "name": name or None,
                         "uuid": uuid, "links": [], "all_inactive": False})
        elif link and gpus:
            gpus[-1]["links"].append(_link(link))
        elif gpus and _ALL_INACTIVE.search(row):
            gpus[-1]["all_inactive"] = True
    if not any(g["links"] or g["all_inactive"] for g in gpus):
        raise refuse("nvidia-smi nvlink -s", "no 'GPU n: ...' line followed by 'Link k: ...' lines")
    return {
        "tool": TOOL,
        "complete": _complete(gpus),
        "elided": any(re.fullmatch(r"\s*\.{3,}\s*", row) for row in lines(text)),
        "gpus": gpus,
    }


def _name_uuid(text: str) -> tuple[str, str | None]:
    """"NVIDIA A100 (UUID: GPU-...)" -> (name, uuid); a text without "(UUID: ...)" at its end is all name."""
    if text.endswith(")"):
        inner = text[:-1]
        start = inner.find("(UUID:", inner.rfind(")") + 1)
        if start >= 0:
            return inner[:start].rstrip(), inner[start + 6:].lstrip()
    return text, None


def _complete(gpus: list[dict]) -> bool:
    """The last GPU shows as many links as the others (or says all are inactive)."""
    most = max(len(g["links"]) for g in gpus)
    return gpus[-1]["all_inactive"] or len(gpus[-1]["links"]) == most


def _link(match: re.Match) -> dict:
    """One link: active with its speed, or inactive."""
    status = match.group(2).strip()
    active = "inactive" not in status.lower()
    speed = non_negative(num(status), f"link {match.group(1)} speed", "GB/s") if active else None
    return {"link": to_int(match.group(1), "link"), "active": active, "speed_GBps": speed, "status": status}
