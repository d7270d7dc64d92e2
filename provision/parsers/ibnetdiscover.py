"""Parse ``ibnetdiscover`` topology output (infiniband-diags, rdma-core; MLNX_OFED / DOCA ship the same tool).

The format is what rdma-core's ``infiniband-diags/ibnetdiscover.c`` prints (``out_switch``,
``out_ca``, ``out_switch_port``, ``out_ca_port``, ``dump_topology``;
https://github.com/linux-rdma/rdma-core/blob/master/infiniband-diags/ibnetdiscover.c):

- a header: ``# Topology file: generated on ...`` and ``# Initiated from node G port P``;
- per node an id block (``vendid=``, ``devid=``, ``sysimgguid=``, ``switchguid=``/``caguid=``/``rtguid=``)
  then ``Switch N "S-<16 hex>" # "desc" base|enhanced port 0 lid L lmc M`` or ``Ca N "H-..." # "desc"``
  (``Rt`` for routers), N being the node's port count;
- per cabled port one line. On a switch: ``[p] "H-..."[q](portguid) # "far desc" lid L 4xHDR`` (the guid
  only when the far end is not a switch; ``lid`` is the far end's). On a CA:
  ``[p](portguid) "S-..."[q] # lid L lmc M "far desc" lid L2 4xHDR`` (``lid L`` is this port's own LID);
- with ``-g`` (grouping) ``Chassis N (guid ...)``, ``# Spine Nodes``/``# Line Nodes`` comments,
  ``Non-Chassis Nodes`` and ``[ext N]`` after a port number; with ``-f`` `` s=.. w=.. v=..`` after the rate.

Separators are tabs in rdma-core's output and single spaces in copies (tests/data/ibnetdiscover/ and the
shared samples have both); blank lines between blocks may be missing. Ports print as plain integers:
``out_switch_port`` writes ``[%d]`` (and ``[ext %d]`` under ``-g``) and nothing else, so NDR split ports
(a Quantum-2 port split into two 2x ports) are ordinary IB port numbers; the "1/1/1" labels are switch
CLI interface names, not ibnetdiscover's (the real Quantum-2 dump in tests/data/ibnetdiscover/ prints
``[1]`` ... ``[65]``). Widths and speeds are ``dump_linkwidth_compat``/``dump_linkspeedext_compat``'s:
1x 2x 4x 8x 12x, SDR DDR QDR FDR10 FDR EDR HDR NDR (XDR for newer builds); ``??``/``???`` where the tool
could not name the value, read as null.

Every cable is listed once, whichever of its ends printed it: a self-loop (a switch port cabled to
another port of the same switch) prints twice in one block and is one cable; a port looped back to
itself prints once and counts as printed by both its ends. A port printed with two different far ends
(two dumps pasted into one file) is a ParseError: the tool prints one far end per port. Where the two ends print
different width/speed, the cable's ``width_speed`` is the lower (by rate, then by lanes) and
``mismatch`` is true; ``a_width_speed``/``b_width_speed`` keep what each end printed (null for an end
that did not print the cable). Lines that are none of the above and look like the tool's or libibmad's
stderr (``src/query_smp.c:195; ...``, ``ibwarn: [pid] func: ...``, ``<prog>: iberror: failed: ...``
from ibdiag_common.c ``ibexit``) go to ``errors``; other stray lines to ``unparsed``.

``complete`` is true when the header was printed, every node block has its port lines, every cable
was printed by both its ends (a full dump prints every port of every node it found) and the last line
is whole. Raises ParseError when the text holds no node line (the real tool prints at least the node
it started from, else only its iberror line).
"""
from __future__ import annotations

import re

from provision.errors import ParseError
from provision.parsers._util import lines, refuse, require_text, to_int

TOOLS = ("ibnetdiscover",)
WIDTH_LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}  # dump_linkwidth_compat
# dump_linkspeed(ext)_compat, Gb/s per lane (IBTA roadmap, as provision.fabric.model.LANE_Gbps)
SPEED_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
              "NDR": 100.0, "XDR": 200.0}
MAX_PORT = 255  # a port number is an 8-bit field of the SMP (IBTA spec vol. 1, NodeInfo NumPorts)
MAX_LID = 0xFFFF  # a LID is 16 bits (IBTA spec vol. 1, section 4.1.3)
MAX_UNPARSED = 100  # stray lines kept verbatim; the rest are counted

_NODE = re.compile(r'^(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+"([SHR]-[0-9a-fA-F]{16})"[ \t]*#[ \t]*"(.*)$')
_SWITCH_TAIL = re.compile(r"^[ \t]*(?:base|enhanced) port 0 lid (\d+) lmc (\d+)")
_PORT = re.compile(r'^\[(\d+)\](?:\[ext \d+\])?(?:\([0-9a-fA-F]+\))?[ \t]*"([SHR]-[0-9a-fA-F]{16})"'
                   r'\[(\d+)\](?:\[ext \d+\])?(?:[ \t]*\([0-9a-fA-F]+\))?[ \t]*#[ \t]*(.*)$')
_OWN_LID = re.compile(r"^lid (\d+) lmc (\d+)[ \t]+")
_FAR_TAIL = re.compile(r"^(\d+)[ \t]+(\?\?|\d{1,2}x)(\?\?\?|[A-Z]{3}\d{0,2})(?:[ \t]|$)")
_HEADER = re.compile(r"^#[ \t]*Topology file:")
_FROM = re.compile(r"^#[ \t]*Initiated from node ([0-9a-fA-F]{1,16}) port")
_KNOWN = re.compile(r"^(?:#|(?:vendid|devid|sysimgguid|switchguid|caguid|rtguid)=|Chassis \d|Non-Chassis Nodes"
                    r"|Hostname: )")
_ERROR_START = re.compile(r"^(?:ibwarn|ibpanic|ibnetdiscover|\S+\.c:\d+;)", re.IGNORECASE)
_ERROR_WORDS = ("iberror", "error", "failed", "timed out", "bad status")  # anywhere in the line, any case


def parse(text: str) -> dict:
    """The contract's dict: ``switches``, ``cas``, ``links``, ``errors``, ``complete`` (module doc).

    Units: ``lid`` a LID, ``ports`` a port count, ports numbered from 1. Raises ParseError when the
    text is not ibnetdiscover output, when a port number or LID is out of its field's range, or when
    a port is printed cabled to two different far ends.
    """
    require_text(text, "ibnetdiscover")
    state = _State()
    rows = lines(text)
    while rows and not rows[-1].strip():
        rows.pop()
    for row in rows:
        state.read(row.rstrip())
    if not state.nodes:  # the real tool prints at least the node it started from, or an iberror line alone
        stray = state.errors or state.unparsed
        said = f" (it printed: {_printable(stray[0][:200])})" if stray else ""
        raise refuse("ibnetdiscover", "no 'Switch N \"S-<16 hex digits>\"' or 'Ca N \"H-<16 hex digits>\"' "
                     f"node line{said}")
    return state.result(last_whole=bool(rows) and state.last_ok)


class _State:
    """What has been read so far: nodes by id, cables by their sorted ends, stray lines."""

    def __init__(self) -> None:
        self.header = False
        self.initiator = ""
        self.nodes: dict[str, dict] = {}
        self.cables: dict[tuple, dict] = {}
        self.current: dict | None = None
        self.errors: list[str] = []
        self.unparsed: list[str] = []
        self.unparsed_count = 0
        self.last_ok = True
        self.ends: dict[tuple[str, int], tuple[str, int]] = {}  # (node, port) -> the far (node, port)

    def read(self, row: str) -> None:
        self.last_ok = True
        if not row.strip():
            return
        if _HEADER.match(row):
            self.header = True
        start = _FROM.match(row)
        if start:
            self.initiator = start.group(1).lower().zfill(16)
        node = _NODE.match(row)
        port = None if node else _PORT.match(row)
        if node:
            self._node(node)
        elif port and self.current is not None:
            self._port(port)
        elif port or not _KNOWN.match(row):
            self._stray(row)

    def _node(self, m: re.Match) -> None:
        kind, count, nid, rest = m.group(1), _port_no(m.group(2), "port count", low=0), m.group(3), m.group(4)
        description, _, tail = rest.rpartition('"')
        if not _:
            description, tail = rest, ""
        node = self._get(nid, description)
        node.update(kind=kind, ports=count, printed=True, port_lines=0)
        if kind == "Switch":
            sw = _SWITCH_TAIL.match(tail)
            node["lid"] = _lid(sw.group(1)) if sw else None
        self.current = node

    def _port(self, m: re.Match) -> None:
        here = self.current
        assert here is not None
        port, far, far_port, tail = _port_no(m.group(1)), m.group(2), _port_no(m.group(3)), m.group(4)
        own = _OWN_LID.match(tail)
        if own:
            here.setdefault("port_lids", {})[port] = _lid(own.group(1))
            tail = tail[own.end():]
        quote, _, after = tail.rpartition('" lid ')
        far_tail = _FAR_TAIL.match(after) if _ else None
        if not (far_tail and quote.startswith('"')):
            self._stray(f"[{port}] ... {tail}"[:200])
            return
        far_node = self._get(far, quote[1:])
        far_lid = _lid(far_tail.group(1))
        if far.startswith("S-"):
            far_node.setdefault("lid", far_lid)
        else:
            far_node.setdefault("port_lids", {}).setdefault(far_port, far_lid)
        here["port_lines"] += 1
        self._cable(here["guid"], port, far, far_port, far_tail.group(2), far_tail.group(3))

    def _cable(self, node: str, port: int, far: str, far_port: int, width: str, speed: str) -> None:
        here, there = (node, port), (far, far_port)
        for near, other in ((here, there), (there, here)):  # a port has one cable: the tool prints one far end
            seen = self.ends.setdefault(near, other)
            if seen != other:
                raise ParseError(f"port {near[1]} of {near[0]} is printed cabled to both {seen[0]}[{seen[1]}] and "
                                 f"{other[0]}[{other[1]}] (two dumps pasted together?)")
        key = tuple(sorted([here, there]))
        printed = f"{width}{speed}"
        cable = self.cables.get(key)
        if cable is None:
            cable = {"a": node, "a_port": port, "b": far, "b_port": far_port, "a_width_speed": None,
                     "b_width_speed": None}
            self.cables[key] = cable
        if here == there:  # a port looped back to itself prints once, as both its ends
            cable["a_width_speed"] = cable["b_width_speed"] = printed
            return
        end = "a" if (cable["a"], cable["a_port"]) == (node, port) else "b"
        cable[f"{end}_width_speed"] = printed

    def _get(self, nid: str, description: str) -> dict:
        node = self.nodes.get(nid)
        if node is None:
            node = {"guid": nid, "description": description, "printed": False, "ports": None, "port_lines": 0}
            self.nodes[nid] = node
        elif not node["printed"] and description:
            node["description"] = description
        return node

    def _stray(self, row: str) -> None:
        self.last_ok = False
        low = row.lower()
        if _ERROR_START.match(row) or any(word in low for word in _ERROR_WORDS):
            self.errors.append(row.strip())
            return
        self.unparsed_count += 1
        if len(self.unparsed) < MAX_UNPARSED:
            self.unparsed.append(row.strip()[:200])

    def result(self, last_whole: bool) -> dict:
        links = [_link(c) for c in self.cables.values()]
        ends_cabled: dict[str, set[int]] = {}
        for lk in links:
            ends_cabled.setdefault(lk["a"], set()).add(lk["a_port"])
            ends_cabled.setdefault(lk["b"], set()).add(lk["b_port"])
        switches = [_switch(n) for n in self.nodes.values() if n["guid"].startswith("S-")]
        cas = [_ca(n, ends_cabled.get(n["guid"], set())) for n in self.nodes.values() if n["guid"][0] in "HR"]
        # Every node but the one discovery started from is found through a cable, so only that one may
        # print a block without port lines (its port is down: tests/data/ibnetdiscover/topograph_gb200_*).
        whole = all(lk["a_width_speed"] and lk["b_width_speed"] for lk in links) and all(
            n["port_lines"] or n["guid"][2:].lower() == self.initiator for n in self.nodes.values() if n["printed"])
        return {"tool": "ibnetdiscover", "complete": bool(self.header and self.nodes and whole and last_whole),
                "switches": switches, "cas": cas, "links": links, "errors": self.errors,
                "unparsed": self.unparsed, "unparsed_lines": self.unparsed_count,
                "missing_blocks": sorted(n["guid"] for n in self.nodes.values() if not n["printed"])}


def _switch(node: dict) -> dict:
    return {"guid": node["guid"], "description": node["description"], "lid": node.get("lid"),
            "ports": node["ports"], "printed": node["printed"]}


def _ca(node: dict, cabled: set[int]) -> dict:
    lids = node.get("port_lids", {})
    ports = sorted(cabled)
    return {"guid": node["guid"], "description": node["description"], "ports_cabled": len(ports),
            "ports": node["ports"], "lids": {str(p): lids.get(p) for p in ports},
            "lid": lids.get(ports[0]) if ports else None, "router": node["guid"].startswith("R-"),
            "printed": node["printed"]}


def _link(cable: dict) -> dict:
    """The contract's cable from its two printed ends (the lower where they differ)."""
    ends = [v for v in (cable["a_width_speed"], cable["b_width_speed"]) if v]
    parsed = [_width_speed(v) for v in ends]
    known = [p for p in parsed if p[0] and p[1]]
    width, speed = min(known, key=_rank) if known else (parsed[0] if parsed else (None, None))
    return {"a": cable["a"], "a_port": cable["a_port"], "b": cable["b"], "b_port": cable["b_port"],
            "width": width, "speed": speed, "width_speed": f"{width}{speed}" if width and speed else None,
            "mismatch": len(set(ends)) > 1, "self_loop": cable["a"] == cable["b"],
            "a_width_speed": cable["a_width_speed"], "b_width_speed": cable["b_width_speed"]}


def _width_speed(printed: str) -> tuple[str | None, str | None]:
    """``"4xHDR"`` -> ("4x", "HDR"); the tool's ``??``/``???`` (and names it does not print) -> None."""
    m = re.match(r"^(\d{1,2}x|\?\?)(.*)$", printed)
    width, speed = (m.group(1), m.group(2)) if m else (None, None)
    return (width if width in WIDTH_LANES else None), (speed if speed in SPEED_GBPS else None)


def _rank(pair: tuple) -> tuple[float, int]:
    width, speed = pair
    return WIDTH_LANES[width] * SPEED_GBPS[speed], WIDTH_LANES[width]


def _printable(text: str) -> str:
    """``text`` for a one-line message: control characters (binary junk, terminal escapes) shown as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _port_no(token: str, what: str = "port number", low: int = 1) -> int:
    value = to_int(token, what)
    if not low <= value <= MAX_PORT:
        raise ParseError(f"{what} {value} is outside {low}..{MAX_PORT}: not a port an InfiniBand node has")
    return value


def _lid(token: str) -> int:
    value = to_int(token, "LID")
    if value > MAX_LID:
        raise ParseError(f"LID {value} is over {MAX_LID}: not a 16-bit InfiniBand LID")
    return value
