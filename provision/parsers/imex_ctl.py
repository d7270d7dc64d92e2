"""Parse ``nvidia-imex-ctl -N``: the IMEX domain's status as the daemons report it, text or ``-j`` JSON.

The formats, from their sources (no capture of this project's own: the simulated tool prints these):

- Options: ``-N`` "Gets the full status of the entire IMEX domain", ``-H`` "Show hostname alongside node IP",
  ``-j`` "Output of the -n/-N command will be in JSON" (NVIDIA IMEX guide, "IMEX Service Command Service",
  https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html).
- Text: a "Connectivity Table Legend:" (I Invalid, N Never Connected, R Recovering, D Disconnected,
  A Authenticating, C Connected; nvidia-imex 570.172 adds ``!V!`` version mismatch and ``!M!`` node map
  mismatch), a timestamp line, "Nodes:" with one ``Node #<i> - <ip> - <STATUS> [- Version: <v>]`` line each,
  the matrix `` Nodes From\\To  0 1 ...`` with one row per node (a legend code per cell), and
  ``Domain State: UP``. Sources: AWS's GB200 UltraServer IMEX validation output (18 nodes READY, version
  570.172, all C, UP; tests/data/imex/aws_p6e_gb200_18_nodes_up.txt) and NVIDIA/k8s-dra-driver-gpu's issue
  capture of a one-node compute domain (no Version column; tests/data/imex/dra_driver_one_node_up.txt).
- JSON: ``{"nodes": {"<i>": {"status", "host", "hostName", "version", "changed", "connections": {"<j>":
  {"host", "status": "CONNECTED", "changed"}}}}, "timestamp", "status": "UP"|"DOWN"|"DEGRADED"}``; an empty
  ``nodes`` map is refused as the text form refuses a list with no node line (a domain always lists the node asked);
  node
  status READY or UNAVAILABLE (a node whose daemon does not answer). Source: NVIDIA/DCGM
  dcgmlib/src/tests/DcgmImexManagerTests.cpp ("actual sample JSON from specification", IMEX 580.30) and
  dcgmlib/src/DcgmImexManager.cpp (reads the top-level ``status``; UP, DOWN, DEGRADED).

``nvidia-imex-ctl`` gives {``tool``, ``complete``, ``format`` ("text"/"json"), ``domain_state`` (as printed,
None when absent), ``nodes``: list of {``index``, ``host``, ``hostname`` (None unless printed), ``status``,
``version``, ``connections``: {peer index: status as printed: a legend letter in text, a word in JSON}}}.
The text matrix rows are the nodes' connections (row = from). ``connected`` is the per-cell reading:
"C" or "CONNECTED". ``complete`` is false when the text stops before "Domain State:" or a node listed has
no matrix row. Raises ParseError when the text holds neither the node list nor the JSON object.

The channel devices are read by ``provision.parsers.imex_channels``.
"""
from __future__ import annotations

import json
import re

from provision.errors import ParseError
from provision.parsers._util import lines, refuse, require_text, to_int

TOOL = "nvidia-imex-ctl"
TOOLS = (TOOL,)
CONNECTED = frozenset({"C", "CONNECTED"})  # the legend's "C - Connected - Ready for operation"; JSON's word
READY = "READY"

_NODE = re.compile(r"^\s*Node\s+#(\d+)\s+-\s+(.*)$")
_MATRIX_HEAD = re.compile(r"^\s*Nodes\s+From\\To\s+(.*)$")
_ROW = re.compile(r"^\s*(\d+)\s+(\S.*)$")
_STATE = re.compile(r"^\s*Domain\s+State:\s*(\S+)")


def parse(text: str) -> dict:
    """``nvidia-imex-ctl -N`` (text) or ``-N -j`` (JSON) into the dict of the module doc."""
    require_text(text, "nvidia-imex-ctl -N")
    body = text.strip()
    if body.startswith("{"):
        return _json(body)
    return _text(text)


def _text(text: str) -> dict:
    nodes: dict[int, dict] = {}
    columns: list[int] | None = None
    state = None
    for row in lines(text):
        node, head, st = _NODE.match(row), _MATRIX_HEAD.match(row), _STATE.match(row)
        if node:
            index = to_int(node.group(1), "node index")
            nodes[index] = {"index": index, **_node_fields(node.group(2)), "connections": {}}
        elif head:
            columns = [to_int(t, "matrix column") for t in head.group(1).split()]
        elif st:
            state = st.group(1)
        elif columns is not None and state is None and (cells := _ROW.match(row)):
            frm = to_int(cells.group(1), "matrix row")
            if frm in nodes:
                nodes[frm]["connections"] = dict(zip(columns, cells.group(2).split()))
    if not nodes:
        raise refuse("nvidia-imex-ctl -N", "no 'Node #<i> - <ip> - <status>' line")
    listed = sorted(nodes)
    complete = state is not None and all(len(nodes[i]["connections"]) == len(listed) for i in listed)
    return {"tool": TOOL, "complete": complete, "format": "text", "domain_state": state,
            "nodes": [nodes[i] for i in listed]}


def _node_fields(rest: str) -> dict:
    """"172.31.48.81    - READY                - Version: 570.172" -> host, hostname, status, version.
    With ``-H`` the host field carries the hostname beside the address, kept whole as ``host``."""
    parts = [p.strip() for p in rest.split(" - ")]
    version = None
    if parts and parts[-1].startswith("Version:"):
        version = parts.pop().split(":", 1)[1].strip() or None
    if len(parts) < 2 or not parts[-1]:
        raise ParseError(f"nvidia-imex-ctl node line {rest[:80]!r}: no '<address> - <status>'")
    return {"host": " - ".join(parts[:-1]), "hostname": None, "status": parts[-1], "version": version}


def _json(body: str) -> dict:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        # A JSON object cut short: not judged (complete false), never read as a healthy domain.
        if body.startswith("{") and '"nodes"' in body[:200]:
            return {"tool": TOOL, "complete": False, "format": "json", "domain_state": None, "nodes": []}
        raise refuse("nvidia-imex-ctl -N -j", "no JSON object with a 'nodes' map")
    nodes: list[dict] = []
    for key, raw in doc["nodes"].items():
        if not isinstance(raw, dict):
            raise ParseError(f"nvidia-imex-ctl -N -j: node {key!r} is not an object")
        conns = raw.get("connections") or {}
        if not isinstance(conns, dict):
            raise ParseError(f"nvidia-imex-ctl -N -j: node {key!r}: connections is not an object")
        nodes.append({"index": to_int(str(key), "node index"), "host": _str(raw.get("host")),
                      "hostname": _str(raw.get("hostName")), "status": _str(raw.get("status")),
                      "version": _str(raw.get("version")),
                      "connections": {to_int(str(k), "peer index"): _str(v.get("status")) if isinstance(v, dict)
                                      else None for k, v in conns.items()}})
    if not nodes:  # the text form refuses an empty list; an IMEX domain always lists its own node
        raise ParseError("nvidia-imex-ctl -N -j: the 'nodes' map is empty: the domain lists no node, not even this one")
    nodes.sort(key=lambda n: n["index"])
    return {"tool": TOOL, "complete": True, "format": "json", "domain_state": _str(doc.get("status")),
            "nodes": nodes}


def _str(value) -> str | None:
    return value.strip() or None if isinstance(value, str) else None
