"""Tool-output parsers: one module per tool format, each with a pure ``parse(text)``.

``PARSERS`` maps every tool name of the ``provision parse TOOL FILE`` contract
(tests/data/samples/CONTRACT.md) to its parse function; ``parse_tool`` is the one
entry point that names the source file in its errors.
"""
from __future__ import annotations

from typing import Callable

from provision.errors import ParseError
from provision.parsers import (bonding, dcgmi, dmesg_xid, fio, gpu_burn, ibstat, lspci, nccl_tests,
                               nvbandwidth, p2p, perftest, smi_csv, smi_nvlink, smi_query,
                               smi_table, smi_topo, smi_xml)

PARSERS: dict[str, Callable[[str], dict]] = {
    "nvidia-smi": smi_table.parse,
    "nvidia-smi-q": smi_query.parse,
    "nvidia-smi-qx": smi_xml.parse,
    "nvidia-smi-csv": smi_csv.parse,
    "nvidia-smi-topo": smi_topo.parse,
    "nvidia-smi-nvlink": smi_nvlink.parse,
    "nccl-tests": nccl_tests.parse,
    "perftest": perftest.parse,
    "ibstat": ibstat.parse,
    "ibstatus": ibstat.parse,
    "ibv_devinfo": ibstat.parse,
    "dcgmi-diag": dcgmi.parse,
    "nvbandwidth": nvbandwidth.parse,
    "p2pBandwidthLatencyTest": p2p.parse,
    "gpu-burn": gpu_burn.parse,
    "dmesg-xid": dmesg_xid.parse,
    "lspci": lspci.parse,
    "bonding": bonding.parse,
    "fio": fio.parse,
}


def parse_tool(tool: str, text: str, source: str = "<text>") -> dict:
    """Parse ``text`` as the output of ``tool``.

    Raises ParseError (one line, naming ``source``) for an unknown tool or for
    text that is not that tool's output at all.
    """
    parser = PARSERS.get(tool)
    if parser is None:
        raise ParseError(f"{source}: unknown tool {tool!r}; known tools: {', '.join(sorted(PARSERS))}")
    try:
        return parser(text)
    except ParseError as error:
        message = " ".join(str(error).split())
        raise ParseError(f"{source}: {message}") from None
