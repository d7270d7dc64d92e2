"""A fabric plane from ``ibnetdiscover`` output (parsed by ``provision.parsers.ibnetdiscover``).

One dump is one plane (one subnet, as seen from the HCA port it ran on). Switch roles come from
cabling (``provision.fabric.model``), never from descriptions: unmanaged switches all print the same
one. Two kinds of channel adapter are not hosts' HCAs:

- SHARP Aggregation Nodes: each Quantum switch carries one as a CA on its last port, described
  "Mellanox Technologies Aggregation Node" (the real NDR dump tests/data/ibnetdiscover/topograph_ndr_*:
  all 40 switches, spines too, show one on port 65; NVIDIA SHARP documentation, "Aggregation Nodes").
  Counting them would make every spine a leaf, so they and their cables are left out of the plane.
- HCAs still printing the firmware's default node description ("MT4129 ConnectX7   Mellanox
  Technologies" in the same dump, "MT23108 InfiniHost Mellanox Technologies" in ``man ibnetdiscover``'s
  example) because rdma-ndd did not set "<hostname> <device>": they stay HCAs, with no host.

Otherwise an HCA's host is the first word of its description (rdma-ndd's "%h %d", rdma-ndd(8)) when it
is one of ``hosts``, or always when ``hosts`` is None; its device is the rest ("mlx5_0", "HCA-1").
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Iterable

from provision.errors import ParseError
from provision.fabric.model import Fabric, Hca, Link, Plane, Switch
from provision.parsers import parse_tool

AGGREGATION_NODE = "Aggregation Node"  # SHARP AN description (module docstring)
_DEFAULT_DESCRIPTION = re.compile(r"^MT\d+ .*Mellanox Technologies$")  # firmware default (module docstring)


def plane_from_ibnetdiscover(parsed: dict, name: str, hosts: list[str] | None = None) -> Plane:
    """The plane named ``name`` from one parsed dump (``parse_tool("ibnetdiscover", ...)``'s dict).

    ``hosts``: the inventory's host names an HCA description may start with (None: any first word).
    Raises ParseError for a cable whose width and speed neither end could name ("4x???": an
    infiniband-diags older than the link's speed).
    """
    left_out = {c["guid"] for c in parsed["cas"] if AGGREGATION_NODE in (c["description"] or "")}
    cas = {c["guid"]: c for c in parsed["cas"] if c["guid"] not in left_out}
    switches = {s["guid"]: Switch(s["guid"], s["description"], s["lid"], s["ports"] or 0) for s in parsed["switches"]}
    links = [_link(lk, name) for lk in parsed["links"] if lk["a"] not in left_out and lk["b"] not in left_out]
    hcas = []
    for link in links:
        for ca_end, sw_end in (("a", "b"), ("b", "a")):
            ca, sw = getattr(link, ca_end), getattr(link, sw_end)
            if ca in cas and sw in switches:
                hcas.append(_hca(cas[ca], getattr(link, f"{ca_end}_port"), sw, getattr(link, f"{sw_end}_port"),
                                 link, hosts))
    return Plane(name, switches, hcas, links)


def planes(parsed: dict) -> dict[str, Plane]:
    """Step key (HCA device) -> its plane, from each dump's parse (``parse_tool("ibnetdiscover", ...)``).
    Raises ParseError on a dump with no switch."""
    out = {}
    for dev, result in parsed.items():
        if not result.get("switches"):
            raise ParseError(f"{dev}: ibnetdiscover found no switch")
        out[dev] = plane_from_ibnetdiscover(result, dev, None)
    return out


def fabric_from_dumps(dumps: Iterable[tuple[str, str]], hosts: list[str] | None = None,
                      names: list[str] | None = None, warn: Callable[[str], None] | None = None) -> Fabric:
    """A fabric of one plane per ``(source, text)`` dump, in the order given; plane i is named
    ``names[i]`` (default: the source). ``warn`` gets one line per tool error line and per
    incomplete dump. Raises ParseError naming the source for text that is not ibnetdiscover output
    or holds no cable."""
    planes: list[Plane] = []
    seen: dict[str, str] = {}  # switch id -> the source of the plane it is in
    for i, (source, text) in enumerate(dumps):
        parsed = parse_tool("ibnetdiscover", text, source)
        for line in parsed["errors"]:
            if warn is not None:
                warn(f"{source}: ibnetdiscover reported: {line}")
        if warn is not None and not parsed["complete"]:
            warn(f"{source}: the dump is incomplete ({_why_incomplete(parsed)})")
        if not parsed["links"]:
            raise ParseError(f"{source}: ibnetdiscover found no cable (the HCA port it ran on has no link?)")
        try:
            plane = plane_from_ibnetdiscover(parsed, names[i] if names else source, hosts)
        except ParseError as exc:
            raise ParseError(f"{source}: {exc}") from None
        # A switch is in one subnet: a dump sharing one with an earlier dump is that plane again (the same
        # file twice, or HCAs of one node on a single-subnet fabric); count it once.
        again = next((seen[g] for g in plane.switches if g in seen), None)
        if again is not None:
            if warn is not None:
                warn(f"{source}: the same plane as {again} (they share switches): counted once")
            continue
        if any(p.name == plane.name for p in planes):
            raise ParseError(f"{source}: two planes named {plane.name!r}")
        seen.update(dict.fromkeys(plane.switches, source))
        planes.append(plane)
    return Fabric(planes)


def _why_incomplete(parsed: dict) -> str:
    """What a parsed dump that is not ``complete`` lacks, for the warning."""
    why = []
    if parsed["missing_blocks"]:
        why.append(f"{len(parsed['missing_blocks'])} nodes without their own block")
    one_end = sum(1 for lk in parsed["links"] if not (lk["a_width_speed"] and lk["b_width_speed"]))
    if one_end:
        why.append(f"{one_end} cables printed by one end only")
    if parsed["unparsed_lines"]:
        why.append(f"{parsed['unparsed_lines']} lines not read")
    return "; ".join(why) or "cut short, or without its '# Topology file' header"


def common_width_speed(fabric: Fabric) -> str | None:
    """The most common width and speed among the fabric's cables (self-loops aside), e.g. "4xNDR"."""
    counts = Counter(lk.width_speed for p in fabric.planes for lk in p.links if not lk.self_loop)
    return counts.most_common(1)[0][0] if counts else None


def _link(cable: dict, plane: str) -> Link:
    if not (cable["width"] and cable["speed"]):
        printed = cable["a_width_speed"] or cable["b_width_speed"]
        raise ParseError(f"plane {plane}: cable {cable['a']}/{cable['a_port']}<->{cable['b']}/{cable['b_port']} "
                         f"has no width and speed ibnetdiscover could name ({printed!r})")
    return Link(cable["a"], cable["a_port"], cable["b"], cable["b_port"], cable["width"], cable["speed"],
                bool(cable["mismatch"]))


def _hca(ca: dict, port: int, leaf: str, leaf_port: int, link: Link, hosts: list[str] | None) -> Hca:
    description = ca["description"] or ""
    host, device = host_and_device(description, hosts)
    lid = (ca.get("lids") or {}).get(str(port))
    return Hca(ca["guid"], description, port, lid, host, device, leaf, leaf_port, link)


def host_and_device(description: str, hosts: list[str] | None = None) -> tuple[str | None, str | None]:
    """``("node07", "mlx5_0")`` from "node07 mlx5_0"; (None, None) for a firmware default description
    or, with ``hosts``, a first word that is not one of them."""
    first, _, rest = description.strip().partition(" ")
    if not first or _DEFAULT_DESCRIPTION.match(description.strip()):
        return None, None
    if hosts is not None and first not in hosts:
        return None, None
    return first, rest.strip() or None
