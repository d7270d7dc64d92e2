"""Parse the listing of the IMEX channel devices: ``find /dev -maxdepth 2 ( -path /dev -o -path
'/dev/nvidia-caps-imex-channels*' ) -print`` prints ``/dev`` (always: the listing ran), then
``/dev/nvidia-caps-imex-channels`` when the folder exists and one ``/dev/nvidia-caps-imex-channels/channel<N>``
per channel device. find exits 0 whether or not anything matched, so a missing channel is judged, not an exit
status. The device path: NVIDIA IMEX guide, "IMEX Channels"
(https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/imexchannels.html); the channels do not survive a
reboot unless created at boot (the driver's ``NVreg_CreateImexChannel0`` or mknod by a boot unit).

``imex-channels`` gives {``tool``, ``complete`` (true: the listing has no end marker), ``folder`` (bool: the
channel folder exists), ``channels``: the channel numbers, sorted}. Text without the ``/dev`` line, or with a line
that is none of those paths, is a ParseError (not this listing).
"""
from __future__ import annotations

import re

from provision.parsers._util import lines, refuse, to_int

TOOL = "imex-channels"
TOOLS = (TOOL,)
ROOT = "/dev"
FOLDER = "/dev/nvidia-caps-imex-channels"
_CHANNEL = re.compile(r"^/dev/nvidia-caps-imex-channels/channel(\d+)$")
_WHAT = "IMEX channel listing (find /dev ... nvidia-caps-imex-channels)"


def parse(text: str) -> dict:
    """The listing into {tool, complete, folder, channels}; ParseError for text that is not this listing."""
    rows = [row.strip().rstrip("/") or "/" for row in lines(text) if row.strip()]
    if ROOT not in rows:
        raise refuse(_WHAT, "no '/dev' line (the start of the listing)")
    channels = []
    for row in rows:
        if row in (ROOT, FOLDER):
            continue
        m = _CHANNEL.match(row)
        if m is None:
            raise refuse(_WHAT, f"line {row[:60]!r} is not {FOLDER}/channelN")
        channels.append(to_int(m.group(1), "channel number"))
    return {"tool": TOOL, "complete": True, "folder": FOLDER in rows or bool(channels),
            "channels": sorted(set(channels))}
