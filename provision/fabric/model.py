"""Fabric model: per plane, the switches, the HCAs and every cable, with roles and routes.

A *plane* is one InfiniBand subnet: a rail-optimised 8-HCA node has one HCA in each of 8
planes (NVIDIA DGX SuperPOD reference architecture, "compute fabric": rail-optimised,
https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html).
Node ids are ibnetdiscover's: ``S-<guid>`` for switches, ``H-<guid>`` for channel adapters
(``man ibnetdiscover``). A cable is a ``Link`` between (node, port) ends, listed once.

Roles: a switch with an HCA cable is a *leaf*; a switch cabled only to other switches is a
*spine* (a two-layer fat-tree; a switch's description does not tell, since unmanaged
switches all print the same one). A cable from a switch to itself is a self-loop and is
neither uplink nor downlink.

Routes follow destination-mod-k (D-mod-k) fat-tree routing, as OpenSM's ftree and
up/down engines spread destinations over uplinks (Zahavi, "D-Mod-K Routing Providing
Non-Blocking Traffic for Shift Permutations on Real Life Fat Trees", 2010,
https://ee.technion.ac.il/people/zahavi/pubs/D-Mod-K-Routing-For-Fat-Trees.pdf): traffic to
destination d (its index when HCAs are numbered leaf by leaf, in leaf-LID order, then port
order) leaves its source leaf on uplink ``d mod k`` (k = the leaf's uplinks in port order)
and comes down to the destination leaf on that spine's j-th cable to it, j being the uplink's
rank among the source leaf's cables to that spine.

Rates: IBTA lane rates (InfiniBand Trade Association roadmap, https://www.infinibandta.org/infiniband-roadmap/):
SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s per lane,
times the width's lanes (1x, 2x, 4x, 8x, 12x).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

LANE_Gbps = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
             "NDR": 100.0, "XDR": 200.0}
LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
_WIDTH_SPEED = re.compile(r"^(\d{1,2}x)([A-Z]{3}\d{0,2})$")


def split_width_speed(text: str) -> tuple[str, str]:
    """``"4xHDR"`` -> ``("4x", "HDR")``. Raises ValueError on anything else."""
    m = _WIDTH_SPEED.match(text or "")
    if not m or m.group(1) not in LANES or m.group(2) not in LANE_Gbps:
        raise ValueError(f"not an InfiniBand width and speed: {text!r}")
    return m.group(1), m.group(2)


def rate_Gbps(width: str, speed: str) -> float:
    """Signalling rate of a link in Gb/s (lanes x lane rate). Raises KeyError on unknown names."""
    return LANES[width] * LANE_Gbps[speed]


def width_speed_for(rate: float) -> str:
    """The 4x width and speed whose rate is ``rate`` Gb/s (200 -> "4xHDR"); ValueError if none."""
    for speed, lane in LANE_Gbps.items():
        if speed != "FDR10" and abs(4 * lane - rate) < 1e-6:
            return f"4x{speed}"
    raise ValueError(f"no 4x InfiniBand speed runs at {rate} Gb/s")


def hca_names(profile) -> list[str]:
    """The profile's InfiniBand HCA device names (``hca.devices``, else mlx5_0..mlx5_N-1): one rail
    (plane) each, in rail order."""
    hca = profile.hca
    return list(hca.devices or [f"mlx5_{i}" for i in range(hca.count)])


@dataclass(frozen=True)
class Link:
    """One cable: ends (``a``, ``a_port``) and (``b``, ``b_port``) as ibnetdiscover names
    them; ``width``/``speed`` the active values (the lower end's where they differ, then
    ``mismatch``)."""

    a: str
    a_port: int
    b: str
    b_port: int
    width: str
    speed: str
    mismatch: bool = False

    @property
    def width_speed(self) -> str:
        return f"{self.width}{self.speed}"

    @property
    def rate_Gbps(self) -> float:
        return rate_Gbps(self.width, self.speed)

    @property
    def self_loop(self) -> bool:
        return self.a == self.b

    @property
    def id(self) -> str:
        """``S-aaaa/1<->S-bbbb/3``, the ends in sorted order (stable whichever end printed it)."""
        ends = sorted([(self.a, self.a_port), (self.b, self.b_port)])
        return "<->".join(f"{n}/{p}" for n, p in ends)

    def touches(self, node: str) -> bool:
        return node in (self.a, self.b)

    def far_end(self, node: str) -> tuple[str, int]:
        """The other end from ``node``'s side."""
        return (self.b, self.b_port) if self.a == node else (self.a, self.a_port)

    def port_on(self, node: str) -> int:
        return self.a_port if self.a == node else self.b_port

    def to_dict(self) -> dict:
        return {"a": self.a, "a_port": self.a_port, "b": self.b, "b_port": self.b_port, "width": self.width,
                "speed": self.speed, "width_speed": self.width_speed, "mismatch": self.mismatch}


@dataclass
class Switch:
    guid: str
    description: str
    lid: int | None
    ports: int
    role: str = "unknown"  # leaf | spine | unknown (cabled to nothing but itself)


@dataclass
class Hca:
    """One HCA port on the fabric: ``host`` from its node description's first word (rdma-ndd's
    default "%h %d": hostname then device, rdma-core's rdma-ndd(8)), ``device`` from the rest."""

    guid: str
    description: str
    port: int
    lid: int | None
    host: str | None
    device: str | None
    leaf: str
    leaf_port: int
    link: Link


@dataclass
class Plane:
    """One subnet: ``switches`` by node id, the ``hcas`` cabled to it, every cable once.

    Built once: construction indexes the cables and HCAs by switch (one pass over each), so a
    switch's uplinks, downlinks and hosts cost its own cables, not the plane's (a 6,000-switch dump
    in seconds, not minutes: bench/fabric_scale.py). Replacing a cable in ``links`` afterwards is
    seen by ``degraded`` (which reads ``links``) but not by the per-switch answers.
    """

    name: str
    switches: dict[str, Switch]
    hcas: list[Hca]
    links: list[Link]
    _by_host: dict[str, Hca] = field(default_factory=dict, repr=False)
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _cabled: dict[str, list[Link]] = field(default_factory=dict, repr=False)  # node -> its cables, self-loops aside
    _on_leaf: dict[str, list[Hca]] = field(default_factory=dict, repr=False)  # leaf -> its HCAs, hcas' order
    _by_cable: dict[str, Hca] = field(default_factory=dict, repr=False)  # Link.id -> the HCA on that cable
    _up: dict[str, tuple[Link, ...]] = field(default_factory=dict, repr=False)  # leaf -> uplinks, port order

    def __post_init__(self) -> None:
        for lk in self.links:
            if not lk.self_loop:
                self._cabled.setdefault(lk.a, []).append(lk)
                self._cabled.setdefault(lk.b, []).append(lk)
        for h in self.hcas:
            self._on_leaf.setdefault(h.leaf, []).append(h)
            self._by_cable.setdefault(h.link.id, h)
        for guid, sw in self.switches.items():
            sw.role = "leaf" if guid in self._on_leaf else "spine" if self._cabled.get(guid) else "unknown"
        self._by_host = {h.host: h for h in self.hcas if h.host}
        order = {s.guid: i for i, s in enumerate(sorted(self.leaves(), key=lambda s: (s.lid or 0, s.guid)))}
        ranked = sorted(self.hcas, key=lambda h: (order.get(h.leaf, 0), h.leaf_port, h.guid))
        self._index = {h.guid: i for i, h in enumerate(ranked)}

    def leaves(self) -> list[Switch]:
        return [s for s in self.switches.values() if s.role == "leaf"]

    def spines(self) -> list[Switch]:
        return [s for s in self.switches.values() if s.role == "spine"]

    def uplinks(self, leaf: str) -> list[Link]:
        """The leaf's cables to other switches, in its port order."""
        ups = self._up.get(leaf)
        if ups is None:
            ups = self._up[leaf] = tuple(sorted((lk for lk in self._cabled.get(leaf, ())
                                                 if lk.far_end(leaf)[0] in self.switches),
                                                key=lambda lk: lk.port_on(leaf)))
        return list(ups)

    def downlinks(self, switch: str) -> list[Link]:
        """A leaf's HCA cables, or a spine's cables to leaves, in port order."""
        sw = self.switches[switch]
        if sw.role == "leaf":
            return sorted((h.link for h in self._on_leaf.get(switch, ())), key=lambda lk: lk.port_on(switch))
        return sorted(self._cabled.get(switch, ()), key=lambda lk: lk.port_on(switch))

    def hca_of(self, host: str) -> Hca | None:
        return self._by_host.get(host)

    def hcas_on(self, leaf: str) -> list[Hca]:
        """The HCAs cabled to ``leaf``, in its port order (equal ports in the order of ``hcas``)."""
        return sorted(self._on_leaf.get(leaf, ()), key=lambda h: h.leaf_port)

    def hca_on(self, link: Link) -> Hca | None:
        """The HCA at one end of ``link`` (None for a cable between switches)."""
        return self._by_cable.get(link.id)

    def hosts_on(self, leaf: str) -> list[str]:
        return [h.host for h in self.hcas_on(leaf) if h.host]

    def route(self, src_host: str, dst_host: str) -> list[Link]:
        """Cables from ``src_host``'s HCA to ``dst_host``'s, D-mod-k (module docstring).
        Raises KeyError for a host not on this plane."""
        src, dst = self._by_host[src_host], self._by_host[dst_host]
        if src.leaf == dst.leaf:
            return [src.link, dst.link]
        ups = self.uplinks(src.leaf)
        if not ups:
            return [src.link, dst.link]
        up = ups[self._index[dst.guid] % len(ups)]
        spine = up.far_end(src.leaf)[0]
        rank = [u for u in ups if u.far_end(src.leaf)[0] == spine].index(up)
        downs = [u for u in self.uplinks(dst.leaf) if u.far_end(dst.leaf)[0] == spine]
        middle = [up, downs[rank % len(downs)]] if downs else [up]
        return [src.link, *middle, dst.link]

    def oversubscription(self, leaf: str) -> float | None:
        """Downlink rate over uplink rate of a leaf (1.0 is non-blocking); None without uplinks."""
        up = sum(lk.rate_Gbps for lk in self.uplinks(leaf))
        down = sum(lk.rate_Gbps for lk in self.downlinks(leaf))
        return round(down / up, 3) if up else None

    def degraded(self, expected: str) -> list[Link]:
        """Cables (self-loops aside) running below ``expected`` width and speed (e.g. "4xNDR"),
        or whose ends disagree."""
        width, speed = split_width_speed(expected)
        want_lanes, want_rate = LANES[width], rate_Gbps(width, speed)
        return [lk for lk in self.links if not lk.self_loop
                and (lk.mismatch or LANES[lk.width] < want_lanes or lk.rate_Gbps < want_rate)]


@dataclass
class Fabric:
    """The planes of a cluster's compute fabric, in rail order."""

    planes: list[Plane]

    def plane_of(self, rail: int) -> Plane:
        return self.planes[rail]

    def to_dict(self, expected: str | None = None) -> dict:
        """``leaves``, ``spines`` (each with its plane, guid, description, hosts or downlinks,
        uplinks), ``degraded_links`` below ``expected`` (each with its plane) and per plane counts."""
        leaves, spines, degraded = [], [], []
        for plane in self.planes:
            for sw in plane.leaves():
                ups = plane.uplinks(sw.guid)
                leaves.append({"plane": plane.name, "guid": sw.guid, "description": sw.description, "lid": sw.lid,
                               "hosts": [{"host": h.host, "device": h.device, "port": h.leaf_port,
                                          "width_speed": h.link.width_speed} for h in plane.hcas_on(sw.guid)],
                               "uplinks": [_end(lk, sw.guid) for lk in ups],
                               "oversubscription": plane.oversubscription(sw.guid)})
            for sw in plane.spines():
                spines.append({"plane": plane.name, "guid": sw.guid, "description": sw.description, "lid": sw.lid,
                               "downlinks": [_end(lk, sw.guid) for lk in plane.downlinks(sw.guid)]})
            if expected:
                degraded += [{"plane": plane.name, **lk.to_dict()} for lk in plane.degraded(expected)]
        return {"planes": [{"name": p.name, "switches": len(p.switches), "hcas": len(p.hcas),
                            "cables": len(p.links), "self_loops": sum(lk.self_loop for lk in p.links)}
                           for p in self.planes],
                "leaves": leaves, "spines": spines, "degraded_links": degraded}


def _end(link: Link, node: str) -> dict:
    far, far_port = link.far_end(node)
    return {"port": link.port_on(node), "to": far, "to_port": far_port, "width_speed": link.width_speed}


# Naming: what an operator calls a switch or an HCA port, from what the dump says.
# A managed Mellanox/NVIDIA switch describes itself "MF0;<switch name>:<model>/U1" (the real NDR dump
# tests/data/ibnetdiscover/topograph_ndr_*: "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"; the UFM lab sample:
# "MF0;node90:SX6012/U1"): its name is the part between ';' and ':'.
_MANAGED = re.compile(r"^MF\d+;([^:;]+):")
# The firmware's default HCA description, no host in it (as provision.fabric.discover reads it).
_FIRMWARE_DEFAULT = re.compile(r"^MT\d+ .*Mellanox Technologies$")


def switch_name(description: str) -> str:
    """The name a switch's node description gives it: a managed switch's own name, else the
    description stripped ("" when there is none)."""
    text = (description or "").strip()
    managed = _MANAGED.match(text)
    return managed.group(1).strip() if managed else text


def hca_name(hca: Hca) -> str:
    """An HCA port as an operator names it: "host device" where the dump says (rdma-ndd's "%h %d"),
    else its node description unless it is the firmware's default (provision.fabric.discover), else
    its node id (``H-<guid>``)."""
    if hca.host:
        return f"{hca.host} {hca.device}" if hca.device else hca.host
    text = (hca.description or "").strip()
    return text if text and not _FIRMWARE_DEFAULT.match(text) else hca.guid


def names(plane: Plane) -> dict[str, str]:
    """Node id -> name for the plane's switches and HCAs (``switch_name``, ``hca_name``). A switch
    keeps its node id where its description gives no name, or the same name as another switch of the
    plane (unmanaged switches all print one description): a name must tell one switch."""
    by_name: dict[str, list[str]] = {}
    for guid, sw in plane.switches.items():
        by_name.setdefault(switch_name(sw.description), []).append(guid)
    out = {guid: name if name and len(guids) == 1 else guid for name, guids in by_name.items() for guid in guids}
    out.update({h.guid: hca_name(h) for h in plane.hcas})
    return out


def missing_uplinks(plane: Plane, named: dict[str, str] | None = None) -> list[dict]:
    """The leaves of ``plane`` with fewer uplinks than its best-cabled leaf (the fabric check's rule,
    provision/checks/fabric.py: a missing uplink is a dead port or cable the subnet manager routes
    around), in leaf-name order: {leaf, name, uplinks, expected, missing, short_of: [{spine, name,
    cables, usual}]}; ``short_of`` the spines the leaf has fewer cables to than most leaves have to
    that spine (where the missing cables would go)."""
    named = named or names(plane)
    per_leaf = {leaf.guid: Counter(lk.far_end(leaf.guid)[0] for lk in plane.uplinks(leaf.guid))
                for leaf in plane.leaves()}
    most = max((sum(c.values()) for c in per_leaf.values()), default=0)
    usual = {spine: Counter(c.get(spine, 0) for c in per_leaf.values()).most_common(1)[0][0]
             for spine in {s for c in per_leaf.values() for s in c}}
    out = []
    for guid, cables in per_leaf.items():
        have = sum(cables.values())
        if have < most:
            short = [{"spine": s, "name": named.get(s, s), "cables": cables.get(s, 0), "usual": n}
                     for s, n in sorted(usual.items(), key=lambda kv: named.get(kv[0], kv[0]))
                     if cables.get(s, 0) < n]
            out.append({"leaf": guid, "name": named.get(guid, guid), "uplinks": have, "expected": most,
                        "missing": most - have, "short_of": short})
    return sorted(out, key=lambda m: (m["name"], m["leaf"]))
