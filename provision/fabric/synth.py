"""Build a two-layer fat-tree fabric for a list of hosts: one plane per rail.

Shape: hosts fill leaves in order (``hosts_per_leaf`` each, port 1 up); a leaf has
``ceil(hosts_per_leaf / oversubscription)`` uplinks on the ports after its hosts, uplink j
going to spine ``j mod spines``; spines take their leaves' cables in leaf order. This is the
layout of NVIDIA's reference fat-trees (DGX SuperPOD reference architecture: a scalable
unit's leaves each cabled evenly to every spine of its rail plane,
https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html).

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


def fat_tree(hosts: list[str], rails: int = 1, leaves: int = 2, spines: int = 2, width_speed: str = "4xNDR",
             oversubscription: float = 1.0, ports: dict[str, list[Port]] | None = None,
             name: str = "fabric") -> Fabric:
    """A fat-tree over ``hosts`` with ``rails`` planes. ``ports[host][rail]`` are the HCAs to cable
    (default ``default_ports``). Raises ValueError when a leaf would need more ports than its radix."""
    width, speed = split_width_speed(width_speed)
    radix = RADIX.get(speed, 64)
    leaves = max(1, min(leaves, len(hosts)))
    per_leaf = math.ceil(len(hosts) / leaves)
    ups = 0 if leaves == 1 else math.ceil(per_leaf / oversubscription)
    if per_leaf + ups > radix:
        raise ValueError(f"{per_leaf} hosts and {ups} uplinks per leaf exceed a {radix}-port {speed} switch")
    ports = ports or default_ports(hosts, rails)
    planes = []
    for rail in range(rails):
        planes.append(_plane(hosts, rail, leaves, spines if leaves > 1 else 0, per_leaf, ups, width, speed, radix,
                             ports, name))
    return Fabric(planes)


def _plane(hosts, rail, leaves, spines, per_leaf, ups, width, speed, radix, ports, name) -> Plane:
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
