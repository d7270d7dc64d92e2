"""Build a two-layer fat-tree fabric for a list of hosts: one plane per rail.

Shape: hosts fill leaves in order (``hosts_per_leaf`` each, port 1 up); a leaf has
``ceil(hosts_per_leaf / oversubscription)`` uplinks on the ports after its hosts, uplink j
going to spine ``j mod spines``; spines take their leaves' cables in leaf order. This is the
layout of NVIDIA's reference fat-trees (DGX SuperPOD reference architecture: a scalable
unit's leaves each cabled evenly to every spine of its rail plane,
https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html).

Size (``size``): with no leaf or spine count given, a leaf takes at most the hosts a
non-blocking leaf of ``radix`` ports has room for, radix/2 down and radix/2 up at 1:1 (at
oversubscription o, radix*o/(1+o) down), so leaves = ceil(hosts / that); never fewer than two
leaves (the small racks' shape: two leaves of two hosts at 4 nodes). Spines: the fewest, at least
two, that divide a leaf's uplinks evenly (every leaf cabled alike to every spine) and leave no
spine more cables than its radix. This is the two-level folded Clos of NVIDIA's SuperPOD (H100:
32 nodes per 64-port NDR leaf, 32 uplinks per leaf, 1,024 node-leaf and 1,024 leaf-spine cables
at 4 scalable units, Table 4 of the network-fabrics page above) and of Al-Fares, Loukissas and
Vahdat, "A Scalable, Commodity Data Center Network Architecture" (SIGCOMM 2008): k-port switches
in two levels reach k*k/2 hosts at full bisection bandwidth (2,048 at radix 64); more needs a
third level, which this model does not build (ValueError).

Switch descriptions are those unmanaged switches print (every switch alike, so roles come
from cabling): "Quantum Mellanox Technologies" (HDR, QM8790) and "Quantum-2 Mellanox
Technologies" (NDR, QM9790), in the form of the shared sample's "SwitchIB Mellanox
Technologies" (tests/data/ibnetdiscover/). Radix: 40 ports (QM8700/8790, HDR) or 64 (QM9700/9790, NDR),
from NVIDIA's switch datasheets.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from provision.fabric.model import Fabric, Hca, Link, Plane, Switch, split_width_speed

RADIX = {"HDR": 40, "NDR": 64, "EDR": 36, "XDR": 64}
DESCRIPTION = {"HDR": "Quantum Mellanox Technologies", "NDR": "Quantum-2 Mellanox Technologies",
               "EDR": "SwitchIB Mellanox Technologies", "XDR": "Quantum-3 Mellanox Technologies"}
SWITCH_LID_BASE = 0x2000  # above the HCA LIDs the simulated rack hands out (provision/sim/hwmodel.py)


@dataclass(frozen=True)
class Port:
    """An HCA port to cable: its GUID (``0x`` hex), LID and device name."""

    guid: str
    lid: int
    device: str


def _guid(*parts: object) -> str:
    return "0x" + hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:16]


def node_id(kind: str, guid: str) -> str:
    """ibnetdiscover's node id: ``S-`` or ``H-`` then the 16 hex digits of the GUID."""
    return f"{kind}-{int(guid, 16):016x}"


def default_ports(hosts: list[str], rails: int) -> dict[str, list[Port]]:
    """Deterministic HCA ports for hosts that bring none: LIDs from 0x10 up, as the simulated rack's."""
    return {h: [Port(_guid(h, "hca", r), 0x10 + i * rails + r, f"mlx5_{r}") for r in range(rails)]
            for i, h in enumerate(hosts)}


@dataclass(frozen=True)
class Shape:
    """A fat-tree's size: ``leaves`` and ``spines`` per plane, hosts per leaf (hosts fill leaves in
    order, the last may have fewer) and uplinks per leaf."""

    leaves: int
    spines: int
    per_leaf: int
    uplinks: int


def leaf_shape(hosts: int, radix: int, oversubscription: float = 1.0,
               leaves: int | None = None) -> tuple[int, int, int]:
    """(leaves, hosts per leaf, uplinks per leaf) of ``hosts`` hosts on ``radix``-port leaves (module
    docstring); ``leaves`` when given is kept (at most ``hosts``), a leaf then having one uplink per
    ``oversubscription`` hosts on it. Checks no port count: ``size`` does."""
    down = max(1, math.floor(radix * oversubscription / (1 + oversubscription)))
    grown = leaves is None and hosts > 2 * down  # past two leaves: every leaf cabled as a full one
    if leaves is None:
        leaves = max(2, math.ceil(hosts / down))
    leaves = max(1, min(hosts, leaves))
    per_leaf = math.ceil(hosts / leaves)
    wanted = (down if grown else per_leaf) / oversubscription
    ups = 0 if leaves == 1 else (math.ceil(wanted) if wanted <= radix else radix + 1)
    return leaves, per_leaf, ups


def even_spines(leaves: int, ups: int, radix: int) -> int | None:
    """The fewest spines, at least two (one for a single uplink), that divide a leaf's ``ups``
    uplinks evenly and get at most ``radix`` cables each; None when no count does."""
    return next((d for d in range(min(2, ups), ups + 1) if ups % d == 0 and leaves * (ups // d) <= radix), None)


def size(hosts: int, radix: int, oversubscription: float = 1.0, leaves: int | None = None,
         spines: int | None = None, speed: str = "") -> Shape:
    """The two-level fat-tree of ``hosts`` hosts on ``radix``-port switches (``leaf_shape``,
    ``even_spines``); counts given are kept. Raises ValueError when the hosts and uplinks of a leaf,
    or the cables of a spine, exceed ``radix`` (the message names the switch by ``speed``, e.g. NDR)."""
    switch = f"{radix}-port {speed} switch" if speed else f"{radix}-port switch"
    leaves, per_leaf, ups = leaf_shape(hosts, radix, oversubscription, leaves)
    if per_leaf + ups > radix:
        raise ValueError(f"{per_leaf} hosts and {ups if ups <= radix else f'over {radix}'} uplinks per leaf "
                         f"exceed a {switch}")
    if leaves == 1:
        return Shape(1, 0, per_leaf, 0)
    if spines is None:
        spines = even_spines(leaves, ups, radix)
        if spines is None:
            raise ValueError(f"{leaves} leaves of {ups} uplinks exceed the {radix} ports of any spine (two levels "
                             f"of {switch}es reach {radix * radix // 2} hosts; more needs a third level)")
    if leaves * math.ceil(ups / spines) > radix:
        raise ValueError(f"{leaves * math.ceil(ups / spines)} leaf cables on a spine exceed a {switch}")
    return Shape(leaves, spines, per_leaf, ups)


def fat_tree(hosts: list[str], rails: int = 1, leaves: int | None = None,  # noqa: PLR0913 (below)
             spines: int | None = None, width_speed: str = "4xNDR", oversubscription: float = 1.0,
             ports: dict[str, list[Port]] | None = None, name: str = "fabric") -> Fabric:
    # One of PLR0913's two exceptions (the other: Check.__init__, a dataclass's own fields): the simulated
    # fabric's description, every parameter but ``hosts`` an optional keyword a scenario file's ``fabric:`` block
    # names one for one (provision/sim/scenario.py), called with keywords by the sim, the benches and 60-odd tests;
    # a wrapper type would only rename them.
    """A fat-tree over ``hosts`` with ``rails`` planes, ``leaves`` and ``spines`` as given or as ``size``
    chooses them for the switch radix of ``width_speed``'s rate. ``ports[host][rail]`` are the HCAs to
    cable (default ``default_ports``). Raises ValueError when a switch would need more ports than its radix."""
    width, speed = split_width_speed(width_speed)
    radix = RADIX.get(speed, 64)
    shape = size(len(hosts), radix, oversubscription, leaves, spines, speed)
    ports = ports or default_ports(hosts, rails)
    planes = []
    for rail in range(rails):
        planes.append(_plane(hosts, rail, shape, (width, speed, radix), ports, name))
    return Fabric(planes)


def _plane(hosts, rail, shape: Shape, cabling: tuple[str, str, int], ports, name) -> Plane:
    """Plane ``rail`` of ``shape`` (leaves, spines, hosts per leaf, uplinks per leaf), its cables of ``cabling``'s
    width and speed, its switches of its radix."""
    leaves, spines, per_leaf, ups = shape.leaves, shape.spines, shape.per_leaf, shape.uplinks
    width, speed, radix = cabling
    desc = DESCRIPTION.get(speed, "Quantum-2 Mellanox Technologies")
    lid = SWITCH_LID_BASE + rail * 0x100
    leaf_ids = [node_id("S", _guid(name, rail, "leaf", i)) for i in range(leaves)]
    spine_ids = [node_id("S", _guid(name, rail, "spine", i)) for i in range(spines)]
    switches = {g: Switch(g, desc, lid + i, radix) for i, g in enumerate(leaf_ids + spine_ids)}
    links, hcas = [], []
    for i, host in enumerate(hosts):
        leaf, port = leaf_ids[i // per_leaf], i % per_leaf + 1
        hca = ports[host][rail]
        ca = node_id("H", hca.guid)
        link = Link(leaf, port, ca, 1, width, speed)
        links.append(link)
        hcas.append(Hca(ca, f"{host} {hca.device}", 1, hca.lid, host, hca.device, leaf, port, link))
    spine_next = [1] * spines
    for leaf in leaf_ids:
        for j in range(ups):
            s = j % spines
            links.append(Link(leaf, per_leaf + 1 + j, spine_ids[s], spine_next[s], width, speed))
            spine_next[s] += 1
    return Plane(f"{name}-rail{rail}", switches, hcas, links)


def world(fabric: Fabric) -> dict:
    """The fabric as the plain dict the simulated rack keeps (``/etc/provision-sim/fabric.yaml``):
    per plane its switches, channel adapters and cables, every field a simulated ibnetdiscover prints."""
    planes = []
    for plane in fabric.planes:
        planes.append({
            "name": plane.name,
            "switches": [{"id": s.guid, "description": s.description, "lid": s.lid, "ports": s.ports,
                          "guid": "0x" + s.guid[2:]} for s in plane.switches.values()],
            "cas": [{"id": h.guid, "description": h.description, "host": h.host, "device": h.device,
                     "port": h.port, "lid": h.lid, "guid": "0x" + h.guid[2:]} for h in plane.hcas],
            "cables": [lk.to_dict() for lk in plane.links],
        })
    return {"planes": planes}
