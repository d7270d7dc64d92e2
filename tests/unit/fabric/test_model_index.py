"""The fabric model indexed by switch (issue 21, cause 5) answers exactly as the former model, which scanned
every cable for every switch, and its work no longer grows with switches x cables.

``Scan`` below is the former model's answers, copied from provision/fabric/model.py and
provision/checks/fabric.py as they were at a7e01ba (roles, uplinks, downlinks, hosts, the HCA on a cable,
D-mod-k routes, oversubscription, degraded cables, ``Fabric.to_dict``), run on the same plane objects. The
planes: every ibnetdiscover capture of tests/data (real NDR dump with SHARP nodes, self-loops, mismatched
ends, a lone CA), synthetic fat-trees of several shapes, and a hand-made plane with the odd cases (a switch
cabled only to itself, one cabled to nothing, leaf-leaf and spine-spine cables, a cable twice, equal ports).
"""
from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest

from provision.sim import synth
from provision.fabric.discover import plane_from_ibnetdiscover
from provision.fabric.model import LANES, Fabric, Hca, Link, Plane, Switch, rate_Gbps, split_width_speed
from provision.parsers import parse_tool

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURES = sorted((DATA / "ibnetdiscover").glob("*.txt")) + sorted((DATA / "samples").glob("ibnetdiscover_*.txt"))


class Scan:
    """The former model's answers for ``plane``: every question scans ``links`` or ``hcas`` whole."""

    def __init__(self, plane: Plane):
        self.p = plane
        ca_switches = {h.leaf for h in plane.hcas}
        self.role = {}
        for guid in plane.switches:
            others = [lk for lk in plane.links if lk.touches(guid) and not lk.self_loop]
            self.role[guid] = "leaf" if guid in ca_switches else "spine" if others else "unknown"
        self._index: dict[str, int] | None = None
        self._cable_ids = [(h.link.id, h) for h in plane.hcas]  # Link.id computed once per HCA, not per question

    def leaves(self) -> list[str]:
        return [g for g in self.p.switches if self.role[g] == "leaf"]

    def spines(self) -> list[str]:
        return [g for g in self.p.switches if self.role[g] == "spine"]

    def uplinks(self, leaf: str) -> list[Link]:
        ups = [lk for lk in self.p.links if lk.touches(leaf) and not lk.self_loop
               and lk.far_end(leaf)[0] in self.p.switches]
        return sorted(ups, key=lambda lk: lk.port_on(leaf))

    def downlinks(self, switch: str) -> list[Link]:
        if self.role[switch] == "leaf":
            return sorted((h.link for h in self.p.hcas if h.leaf == switch), key=lambda lk: lk.port_on(switch))
        return sorted((lk for lk in self.p.links if lk.touches(switch) and not lk.self_loop),
                      key=lambda lk: lk.port_on(switch))

    def hosts_on(self, leaf: str) -> list[str]:
        return [h.host for h in sorted(self.p.hcas, key=lambda h: h.leaf_port) if h.leaf == leaf and h.host]

    def hca_on(self, link: Link) -> Hca | None:
        return next((h for cable, h in self._cable_ids if cable == link.id), None)

    def index(self) -> dict[str, int]:
        if self._index is not None:
            return self._index
        order = {g: i for i, g in enumerate(sorted(self.leaves(), key=lambda g: (self.p.switches[g].lid or 0, g)))}
        ranked = sorted(self.p.hcas, key=lambda h: (order.get(h.leaf, 0), h.leaf_port, h.guid))
        self._index = {h.guid: i for i, h in enumerate(ranked)}
        return self._index

    def route(self, src_host: str, dst_host: str) -> list[Link]:
        by_host = {h.host: h for h in self.p.hcas if h.host}
        src, dst = by_host[src_host], by_host[dst_host]
        if src.leaf == dst.leaf:
            return [src.link, dst.link]
        ups = self.uplinks(src.leaf)
        if not ups:
            return [src.link, dst.link]
        up = ups[self.index()[dst.guid] % len(ups)]
        spine = up.far_end(src.leaf)[0]
        rank = [u for u in ups if u.far_end(src.leaf)[0] == spine].index(up)
        downs = [u for u in self.uplinks(dst.leaf) if u.far_end(dst.leaf)[0] == spine]
        return [src.link, *([up, downs[rank % len(downs)]] if downs else [up]), dst.link]

    def oversubscription(self, leaf: str) -> float | None:
        up = sum(lk.rate_Gbps for lk in self.uplinks(leaf))
        down = sum(lk.rate_Gbps for lk in self.downlinks(leaf))
        return round(down / up, 3) if up else None

    def degraded(self, expected: str) -> list[Link]:
        width, speed = split_width_speed(expected)
        lanes, rate = LANES[width], rate_Gbps(width, speed)
        return [lk for lk in self.p.links if not lk.self_loop
                and (lk.mismatch or LANES[lk.width] < lanes or lk.rate_Gbps < rate)]

    def to_dict(self, expected: str) -> dict:
        p, leaves, spines = self.p, [], []
        for g in self.leaves():
            sw = p.switches[g]
            leaves.append({"plane": p.name, "guid": g, "description": sw.description, "lid": sw.lid,
                           "hosts": [{"host": h.host, "device": h.device, "port": h.leaf_port,
                                      "width_speed": h.link.width_speed}
                                     for h in sorted(p.hcas, key=lambda h: h.leaf_port) if h.leaf == g],
                           "uplinks": [_end(lk, g) for lk in self.uplinks(g)],
                           "oversubscription": self.oversubscription(g)})
        for g in self.spines():
            sw = p.switches[g]
            spines.append({"plane": p.name, "guid": g, "description": sw.description, "lid": sw.lid,
                           "downlinks": [_end(lk, g) for lk in self.downlinks(g)]})
        return {"planes": [{"name": p.name, "switches": len(p.switches), "hcas": len(p.hcas), "cables": len(p.links),
                            "self_loops": sum(lk.self_loop for lk in p.links)}],
                "leaves": leaves, "spines": spines,
                "degraded_links": [{"plane": p.name, **lk.to_dict()} for lk in self.degraded(expected)]}


def _end(link: Link, node: str) -> dict:
    far, far_port = link.far_end(node)
    return {"port": link.port_on(node), "to": far, "to_port": far_port, "width_speed": link.width_speed}


def odd_plane() -> Plane:
    """A small fat-tree plus the odd cases (module docstring)."""
    base = synth.fat_tree([f"n{i}" for i in range(8)], leaves=2, spines=2).planes[0]
    switches = {g: Switch(s.guid, s.description, s.lid, s.ports) for g, s in base.switches.items()}
    leaf_a, leaf_b = (s.guid for s in base.leaves())
    spine_a, spine_b = (s.guid for s in base.spines())
    switches["S-loop"] = Switch("S-loop", "loop", 90, 64)
    switches["S-alone"] = Switch("S-alone", "alone", None, 64)
    links = list(base.links) + [
        Link("S-loop", 1, "S-loop", 2, "4x", "NDR"),  # cabled only to itself: unknown
        Link(leaf_a, 1, leaf_a, 30, "4x", "NDR"),  # a self-loop on a leaf: neither up nor down
        Link(leaf_a, 40, leaf_b, 40, "4x", "HDR"),  # leaf to leaf: an uplink of both
        Link(spine_a, 50, spine_b, 50, "2x", "NDR", mismatch=True),  # spine to spine
        Link(leaf_b, 41, spine_a, 41, "4x", "NDR"),
        Link(leaf_b, 41, spine_a, 41, "4x", "NDR"),  # the same cable listed twice
        Link(leaf_b, 12, spine_b, 12, "4x", "NDR"),  # two uplinks on one port number
        Link(spine_b, 12, leaf_b, 13, "4x", "NDR"),
        Link(leaf_a, 44, "H-1111", 1, "4x", "NDR"),  # a CA with no host, same leaf port as another HCA
    ]
    hcas = [Hca(h.guid, h.description, h.port, h.lid, h.host, h.device, h.leaf, h.leaf_port, h.link)
            for h in base.hcas]
    hcas.append(Hca("H-1111", "MT4129 ConnectX7   Mellanox Technologies", 1, 300, None, None, leaf_a, 1, links[-1]))
    return Plane("odd", switches, hcas, links)


def _captures() -> list:
    out = []
    for path in CAPTURES:
        parsed = parse_tool("ibnetdiscover", path.read_text())
        out.append(pytest.param(lambda parsed=parsed, name=path.stem: plane_from_ibnetdiscover(parsed, name, None),
                                id=path.stem))
    return out


PLANES = _captures() + [
    pytest.param(lambda: synth.fat_tree([f"node{i:02d}" for i in range(1, 9)], rails=2).planes[1], id="fat-tree-8"),
    pytest.param(lambda: synth.fat_tree([f"g{i}" for i in range(12)], leaves=3, spines=2, width_speed="4xHDR")
                 .planes[0], id="fat-tree-12-hdr"),
    pytest.param(lambda: synth.fat_tree([f"h{i}" for i in range(100)], oversubscription=2.0).planes[0],
                 id="fat-tree-100-2to1"),
    pytest.param(lambda: synth.fat_tree([f"h{i:03d}" for i in range(256)]).planes[0], id="fat-tree-256"),
    pytest.param(odd_plane, id="odd-cases"),
]


@pytest.mark.parametrize("build", PLANES)
def test_the_indexed_model_answers_as_the_scanning_one(build) -> None:
    plane = build()
    scan = Scan(plane)
    assert {g: s.role for g, s in plane.switches.items()} == scan.role
    assert [s.guid for s in plane.leaves()] == scan.leaves()
    assert [s.guid for s in plane.spines()] == scan.spines()
    others = [h.guid for h in plane.hcas[:3]] + ["S-not-in-this-plane"]
    for guid in [*plane.switches, *others]:
        assert plane.uplinks(guid) == scan.uplinks(guid), guid
        assert plane.hosts_on(guid) == scan.hosts_on(guid), guid
    for guid in plane.switches:
        assert plane.downlinks(guid) == scan.downlinks(guid), guid
    for leaf in scan.leaves():
        assert plane.oversubscription(leaf) == scan.oversubscription(leaf), leaf
    for link in plane.links:
        assert plane.hca_on(link) is scan.hca_on(link), link.id
    hosts = sorted({h.host for h in plane.hcas if h.host})
    for src in islice(hosts, 0, None, max(1, len(hosts) // 12)):
        for dst in islice(hosts, 0, None, max(1, len(hosts) // 12)):
            assert plane.route(src, dst) == scan.route(src, dst), (src, dst)
    for expected in ("4xNDR", "4xHDR", "4xEDR", "1xSDR"):
        assert plane.degraded(expected) == scan.degraded(expected)
    assert Fabric([plane]).to_dict("4xHDR") == scan.to_dict("4xHDR")
    assert plane.uplinks(scan.leaves()[0]) is not plane.uplinks(scan.leaves()[0]) if scan.leaves() else True


def test_the_odd_plane_exercises_each_odd_case() -> None:
    """The odd cases are there: a test of equality over cases that never occur would prove nothing."""
    plane = odd_plane()
    roles = {g: s.role for g, s in plane.switches.items()}
    assert roles["S-loop"] == "unknown" and roles["S-alone"] == "unknown"
    leaf_b = plane.leaves()[1].guid
    ports = [lk.port_on(leaf_b) for lk in plane.uplinks(leaf_b)]
    assert ports.count(41) == 2 and ports.count(12) == 1 and 13 in ports and 40 in ports
    assert plane.hosts_on(plane.leaves()[0].guid)[0] == "n0"  # the hostless CA on port 1 names no host
    assert len(plane.hcas_on(plane.leaves()[0].guid)) == 5


class Counted(list):
    """A list that counts how often it is walked whole."""

    walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()


def _walks(hosts: int) -> tuple[int, int, int]:
    """(switches, walks of the cables, walks of the HCAs) to build a plane of ``hosts`` hosts and ask every
    switch for its uplinks, downlinks and hosts, every host for its route to one other, and for the view."""
    base = synth.fat_tree([f"h{i:04d}" for i in range(hosts)]).planes[0]
    links, hcas = Counted(base.links), Counted(base.hcas)
    plane = Plane(base.name, {g: Switch(s.guid, s.description, s.lid, s.ports) for g, s in base.switches.items()},
                  hcas, links)
    names = [h.host for h in base.hcas]
    for guid in plane.switches:
        plane.uplinks(guid), plane.downlinks(guid), plane.hosts_on(guid)
    for src, dst in zip(names, reversed(names)):
        plane.route(src, dst)
    Fabric([plane]).to_dict("4xNDR")
    return len(plane.switches), links.walks, hcas.walks


def test_the_work_does_not_grow_with_switches_times_cables() -> None:
    """The former model walked every cable once per switch to build the plane and once per uplinks call
    (a 96-switch plane: hundreds of walks, thousands with routes); indexed, a plane is walked a fixed number
    of times, whatever its size."""
    small, large = _walks(128), _walks(2048)
    assert small[0] == 6 and large[0] == 96  # switches: 4 leaves + 2 spines, 64 leaves + 32 spines
    assert small[1:] == large[1:]
    assert large[1] <= 3 and large[2] <= 4
