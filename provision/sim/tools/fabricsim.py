"""The simulated fabric's physics: routes and what a cable, an HCA or a node does to traffic.

The rack's fabric is ``/etc/provision-sim/fabric.yaml`` in every node (written by ``sim up``
from provision/sim/synth.py, edited by ``sim fault``): per plane its switches, channel
adapters (host, device, LID) and cables (ends, ``width``, ``speed``, optional ``state``
"down" and ``flapping``). The subnet manager here routes destination-mod-k, as OpenSM's
ftree engine does (Zahavi 2010, see provision/fabric/model.py): destination index d (HCAs
numbered leaf by leaf in leaf-LID order, then port) leaves its source leaf on uplink
``d mod k``; a dead uplink is routed around (the next live uplink), so it costs an isolated
flow nothing, as on a real fabric after the SM sweeps.

A cable carries ``rate / nominal`` of a flow (1x instead of 4x: a quarter); a flapping cable
loses a random 30-80% of a run (the link down and retraining for part of it, then retransmissions).
The simulator models only flaps that cost a run more than the checks' 10% margin: one that costs
less is, by bandwidth, a healthy cable (its counters are ib_ports' business), and a draw near 1.0
would make a test of localization pass or fail by chance. Multi-node all-reduce is
ring-based (NCCL's ring algorithm, nccl-tests PERFORMANCE.md): per rail, the ring is as fast
as its slowest hop; NCCL splits the buffer evenly over its channels (one or more per rail),
so the collective ends when the slowest rail does: inter-node bus bandwidth is rails x the
slowest rail x ``NCCL_NET_EFFICIENCY``; a slow node (``faults.slow_node``) slows every
collective it joins.
"""
from __future__ import annotations

import os
import random

import yaml

FABRIC = "/etc/provision-sim/fabric.yaml"
LANE_Gbps = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
             "NDR": 100.0, "XDR": 200.0}
LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
# Multi-node all_reduce_perf on 3 nodes x 8 A100 with 4 HDR HCAs each peaked at 96 GB/s busbw
# against the 100 GB/s the HCAs carry (https://github.com/NVIDIA/nccl-tests/issues/119): the
# collective reaches about 0.96 of line rate, i.e. ~0.98 of the healthy ib_write_bw figure
# (itself ~0.98 of line rate, figures.yaml).
NCCL_NET_EFFICIENCY = 0.98


def load() -> dict | None:
    """The rack's fabric, None when the rack has none (env ``PROVISION_SIM_FABRIC`` overrides the path)."""
    path = os.environ.get("PROVISION_SIM_FABRIC", FABRIC)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        # libyaml's parser where PyYAML has it: pure Python took seconds for the MBs of a 1,024-node fabric
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or None


def cable_rate(cable: dict) -> float:
    return LANES.get(str(cable.get("width")), 4) * LANE_Gbps.get(str(cable.get("speed")), 0.0)


class Plane:
    """One plane of the world dict, indexed for routing."""

    def __init__(self, plane: dict):
        self.name = plane["name"]
        self.switches = {s["id"]: s for s in plane["switches"]}
        self.cas = {(c["host"], c["device"]): c for c in plane["cas"]}
        self.cables = plane["cables"]
        ca_ids = {c["id"] for c in plane["cas"]}
        self.host_cable = {}
        for cable in self.cables:
            for end, far in (("a", "b"), ("b", "a")):
                if cable[end] in ca_ids:
                    self.host_cable[cable[end]] = (cable, cable[far], cable[f"{far}_port"])
        leaves = sorted({leaf for _c, leaf, _p in self.host_cable.values()},
                        key=lambda g: (self.switches[g]["lid"], g))
        ranked = sorted(self.host_cable, key=lambda ca: (leaves.index(self.host_cable[ca][1]),
                                                         self.host_cable[ca][2], ca))
        self.index = {ca: i for i, ca in enumerate(ranked)}
        self.nominal = max((cable_rate(c) for c in self.cables), default=0.0)

    def uplinks(self, leaf: str) -> list[dict]:
        ups = [c for c in self.cables if leaf in (c["a"], c["b"]) and c["a"] != c["b"]
               and c["a"] in self.switches and c["b"] in self.switches]
        return sorted(ups, key=lambda c: c["a_port"] if c["a"] == leaf else c["b_port"])

    def route(self, src: tuple[str, str], dst: tuple[str, str]) -> list[dict]:
        """Cables from HCA ``src`` (host, device) to ``dst``; KeyError when either is not on the plane."""
        s_id, d_id = self.cas[src]["id"], self.cas[dst]["id"]
        s_cable, s_leaf, _ = self.host_cable[s_id]
        d_cable, d_leaf, _ = self.host_cable[d_id]
        if s_leaf == d_leaf:
            return [s_cable, d_cable]
        ups = self.uplinks(s_leaf)
        live = [u for u in ups if u.get("state") != "down"] or ups
        up = ups[self.index[d_id] % len(ups)]
        up = up if up in live else live[self.index[d_id] % len(live)]
        spine = up["b"] if up["a"] == s_leaf else up["a"]
        rank = [u for u in ups if spine in (u["a"], u["b"])].index(up)
        downs = [u for u in self.uplinks(d_leaf) if spine in (u["a"], u["b"])]
        return [s_cable, up, downs[rank % len(downs)], d_cable] if downs else [s_cable, up, d_cable]


def planes(world: dict | None) -> list[Plane]:
    return [Plane(p) for p in (world or {}).get("planes", [])]


def plane_of(world: dict | None, host: str, device: str) -> Plane | None:
    return next((p for p in planes(world) if (host, device) in p.cas), None)


def path_factor(plane: Plane, src: tuple[str, str], dst: tuple[str, str], rng: random.Random | None = None) -> float:
    """Fraction of a flow's healthy bandwidth the route src -> dst carries (cables only)."""
    rng = rng or random.Random()
    factor = 1.0
    for cable in plane.route(src, dst):
        if plane.nominal:
            factor = min(factor, cable_rate(cable) / plane.nominal)
        if cable.get("flapping"):
            factor = min(factor, rng.uniform(0.2, 0.7))
    return factor


def hca_factor(model: dict, device: str) -> float:
    """What the node's own HCA ``device`` allows: 0 when down, its rate over nominal, its slowness."""
    hca = next((h for h in model.get("hcas", []) if h["name"] == device), None)
    if hca is None or hca.get("state") != "Active":
        return 0.0
    nominal = float((model.get("nominal") or {}).get("hca_rate_Gbps") or hca["rate_Gbps"])
    slow = float(((model.get("faults") or {}).get("slow_hca") or {}).get(device, 1.0))
    return min(1.0, hca["rate_Gbps"] / nominal) * slow


def node_factor(model: dict) -> float:
    """A slow node's factor on every collective it joins (``faults.slow_node``)."""
    return float((model.get("faults") or {}).get("slow_node", 1.0))


def ring_net_busbw_GBps(world: dict | None, models: list[dict], rng: random.Random | None = None) -> float:
    """Inter-node bus bandwidth of a ring all-reduce over ``models`` (rank order, one per node):
    rails x the slowest rail's slowest hop x NCCL_NET_EFFICIENCY x the slowest node's factor, in GB/s."""
    rng = rng or random.Random()
    rails = []
    for hca in sorted(models[0].get("hcas", []), key=lambda h: h["name"]):
        device, worst = hca["name"], 1.0
        per_hca = float((models[0].get("performance") or {}).get("ib_write_bw_Gbps", 0.0)) / 8
        for i, model in enumerate(models):
            nxt = models[(i + 1) % len(models)]
            hop = min(hca_factor(model, device), hca_factor(nxt, device))
            plane = plane_of(world, model["hostname"], device)
            if plane is not None and (nxt["hostname"], device) in plane.cas:
                hop = min(hop, path_factor(plane, (model["hostname"], device), (nxt["hostname"], device), rng))
            worst = min(worst, hop)
        rails.append(per_hca * worst)
    return len(rails) * min(rails, default=0.0) * NCCL_NET_EFFICIENCY * min(node_factor(m) for m in models)
