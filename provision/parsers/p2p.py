"""Parse CUDA samples ``p2pBandwidthLatencyTest`` (CUDA 9 to 12.x samples).

Reads the device list ("Device: n, <name>, pciBusID: 4a, ..."), the "Device=a
CAN/CANNOT Access Peer Device=b" lines, the "P2P Connectivity Matrix", the four
bandwidth matrices ("Unidirectional/Bidirectional P2P=Enabled/Disabled Bandwidth
[(P2P Writes|Reads)] Matrix (GB/s)", header "D\\D") and the latency matrices
("P2P=Enabled/Disabled Latency ... Matrix (us)", a "GPU" table and a "CPU" table).

Units: bandwidth GB/s, latency us; the diagonal (local copies) is kept as printed.
Matrices are {src: {dst: value}}. Raises ParseError without the "[P2P (Peer-to-Peer)
GPU Bandwidth Latency Test]" banner or any matrix title. ``complete`` is false
without the closing "NOTE: The CUDA Samples are not meant for performance..." line.
"""
from __future__ import annotations

import re
from typing import Any

from provision.parsers._util import is_digits, lines, non_negative, num, refuse, require_text, to_int

TOOL = "p2pBandwidthLatencyTest"
TOOLS = (TOOL,)
# The name is left-stripped in code: ``,\s*(.*?),`` backtracks quadratically over a run of blanks.
_DEVICE = re.compile(r"^Device:\s*(\d+),(.*?),\s*pciBusID:\s*([0-9a-fA-F]+),\s*pciDeviceID:\s*"
                     r"([0-9a-fA-F]+),\s*pciDomainID:\s*([0-9a-fA-F]+)")
_ACCESS = re.compile(r"^Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+)")
_TITLES = [
    (re.compile(r"^P2P Connectivity Matrix"), "connectivity"),
    (re.compile(r"^Unidirectional P2P=Disabled Bandwidth"), "uni_p2p_disabled_GBps"),
    (re.compile(r"^Unidirectional P2P=Enabled Bandwidth"), "uni_p2p_enabled_GBps"),
    (re.compile(r"^Bidirectional P2P=Disabled Bandwidth"), "bi_p2p_disabled_GBps"),
    (re.compile(r"^Bidirectional P2P=Enabled Bandwidth"), "bi_p2p_enabled_GBps"),
    (re.compile(r"^P2P=Disabled Latency"), "latency_p2p_disabled"),
    (re.compile(r"^P2P=Enabled Latency"), "latency_p2p_enabled"),
]
_MATRICES = [key for _, key in _TITLES if not key.startswith("latency")] + [
    f"{key}_{sub}_us" for _, key in _TITLES if key.startswith("latency") for sub in ("gpu", "cpu")]


def parse(text: str) -> dict:
    """Parse p2pBandwidthLatencyTest text into the contract's dict (see module doc)."""
    require_text(text, "p2pBandwidthLatencyTest")
    state: dict[str, Any] = {"devices": [], "access": {}, "current": None, "sub": "gpu", "columns": []}
    state.update({key: {} for key in _MATRICES})
    banner = False
    for row in lines(text):
        banner = banner or "P2P (Peer-to-Peer) GPU Bandwidth Latency Test" in row
        _line(row, state)
    if not banner and not any(state[key] for key in _MATRICES):
        raise refuse("p2pBandwidthLatencyTest", "no '[P2P (Peer-to-Peer) GPU Bandwidth Latency "
                     "Test]' banner or result matrix")
    del state["current"], state["sub"], state["columns"]
    devices = state.pop("devices")
    return {"tool": TOOL, "complete": "CUDA Samples are not meant for performance" in text,
            "gpu_count": len(devices) or len(state["connectivity"]) or None,
            "gpus": devices, "peer_access": state.pop("access"), **state}


def _line(row: str, state: dict) -> None:
    """Route one line: device, peer access, matrix title, column header or matrix row."""
    device, access = _DEVICE.match(row), _ACCESS.match(row)
    title = next((key for pattern, key in _TITLES if pattern.match(row.strip())), None)
    tokens = row.split()
    if device:
        state["devices"].append({"index": to_int(device.group(1), "device"), "name": device.group(2).lstrip(),
                                 "pci_bus_id": device.group(3), "pci_domain_id": device.group(5)})
    elif access:
        peers = state["access"].setdefault(to_int(access.group(1), "device"), {})
        peers[to_int(access.group(3), "peer device")] = access.group(2) == "CAN"
    elif title:
        state["current"], state["sub"] = title, "gpu"
    elif tokens and tokens[0] in ("D\\D", "GPU", "CPU") and state["current"]:
        state["sub"], state["columns"] = tokens[0].lower(), [to_int(t, "column") for t in tokens[1:] if is_digits(t)]
    elif state["current"] and len(tokens) > 1 and is_digits(tokens[0]) and num(tokens[1]) is not None:
        key = state["current"]
        if key.startswith("latency"):
            key = f"{key}_{'cpu' if state['sub'] == 'cpu' else 'gpu'}_us"
        # bandwidths, latencies and the 0/1 connectivity cells are never negative
        cells = [non_negative(num(t), f"{key} row {tokens[0]}") for t in tokens[1:]]
        state[key][to_int(tokens[0], "row")] = dict(zip(state["columns"], cells))
    elif row.strip() and not row.startswith(" ") and state["current"] and not is_digits(tokens[0]):
        state["current"] = None
