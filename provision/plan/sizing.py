"""Cluster sizing: ``provision plan --gpus N --profile P [--switch-radix R] [--oversubscription D:U]``.

A two-layer fat-tree (leaf and spine, a folded Clos) of switches with R ports: each leaf gives
D/(D+U) of its ports to HCAs and the rest to spines, one cable per port. A spine's R ports reach
at most R leaves, so one two-layer tree carries at most R x down endpoints (R^2/2 at 1:1: Leiserson,
"Fat-trees", IEEE Trans. Computers C-34(10), 1985; Al-Fares et al., "A scalable, commodity data
center network architecture", SIGCOMM 2008, https://doi.org/10.1145/1402958.1402967).

- With several HCAs per node the fabric is rail-optimized: rail r of every node goes to plane r,
  one tree per rail (NVIDIA DGX SuperPOD reference architecture,
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html).
- When a plane's endpoints exceed one two-layer tree, it is split into zones, each its own tree,
  as DeepSeek split 10,000 PCIe A100s on 40-port HDR switches into two zones (Fire-Flyer AI-HPC,
  SC24, https://arxiv.org/abs/2408.14158): jobs then stay within a zone, or cross a zone link.
- Leaves per zone = ceil(endpoints / down). Spines cable evenly: every leaf has the same whole number k
  of cables to every spine, so spines = up / k with k the largest divisor of a leaf's uplinks for which a
  spine's ports take every leaf (leaves x k <= R). ceil(leaves x up / R) spines would leave some leaf-spine
  pairs with one cable more than others (1.25 or 1.6 cables a pair), and destination-mod-k routing (OpenSM's
  ftree) then loads the doubled cables twice: no longer a fat-tree. k = 1 always fits, as a zone's leaves
  are at most R.
- Fabric managers: each tree is a subnet with its subnet manager on one of its leaf ports, as the DGX
  SuperPOD takes a node slot of the compute fabric for its UFM appliances (RA-11333-001, Table 4: "a DGX
  system must be removed to accommodate for UFM connectivity").
- Storage and management, after the DGX SuperPOD reference architecture for DGX H100 (RA-11333-001 V11,
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/ ;
  Table 7 and Table 8 for its 4-SU, 127-node pod): a storage fabric of its own (InfiniBand, QM9700
  switches), ``STORAGE_PORTS_PER_NODE`` ports per GPU node, ``STORAGE_PORTS_PER_POD`` storage-appliance
  ports per pod, and one subnet manager port; sized here as a non-blocking (1:1) two-layer tree, an upper
  bound (the RA runs the GPU nodes' side near 4:3 and the storage devices at 1:1). Management:
  ``MANAGEMENT_PER_POD`` management servers and ``UFM_PER_POD`` UFM appliances per started pod.
- Power: GPUs x the profile's gpu.power_cap_W; nodes x its power.node_max_W for the IT load;
  switches x ``--switch-power-W`` (unknown without it: the tables hold no switch's power); x PUE for
  the facility. Storage and management servers' power is not counted (their models are the site's).
- Burn-in budget: the per-node checks run on every node at once, so the slowest node's sum is the
  wall time; then the cluster procedure's rounds (each rail's ib_write_bw one after another per
  pair, all pairs of a round at once; then one all-reduce across every node); with faults, the rounds
  the localizer takes on this tree (``provision.fabric.localize.expected_rounds``, the figure
  ``bench/localize.py`` measures).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from provision.errors import ProvisionError
from provision.fabric.localize import expected_rounds
from provision.plan.hardware import node_power_W

if TYPE_CHECKING:
    from provision.profiles import Profile

# PUE default: a modern AI facility; the Uptime Institute's 2024 survey average is 1.56
# (https://uptimeinstitute.com/resources/research-and-reports/uptime-institute-global-data-center-survey-results-2024).
PUE = 1.2
# Seconds a check spends outside its measured part (connect, start the tool, parse), per check and node: our
# judgment from the simulated rack's job timings (report.json's per-check seconds), not a published figure.
CHECK_OVERHEAD_s = 10.0
# Node-scope checks without a duration in their profile params, with the seconds they take on a real node:
# nvidia-smi and lspci reads (seconds), nvbandwidth's copy testcases, an 8 GB all_reduce_perf sweep.
FIXED_s = {"gpu_health": 5.0, "xid": 2.0, "pcie_link": 2.0, "topology": 2.0, "nvlink": 2.0, "ib_ports": 2.0,
           "stack": 5.0, "nvbandwidth": 60.0, "nccl_allreduce": 120.0, "storage": 60.0}
# The DGX SuperPOD (DGX H100) reference architecture's pod, RA-11333-001 V11: Table 7 ("Major components of the
# 4 SU, 127-node DGX SuperPOD": 127 DGX H100, 4 UFM appliances, 4 BCM management servers) and Table 8 (storage
# InfiniBand cables: 254 DGX storage transceivers, i.e. 2 per node, as the DGX H100's "pair of ... storage
# ports"; 48 NDR 2x200 Gb/s cables to the storage, whose "count ... depend[s] on specific storage selected").
POD_NODES = 127
MANAGEMENT_PER_POD = 4
UFM_PER_POD = 4
STORAGE_PORTS_PER_NODE = 2
STORAGE_PORTS_PER_POD = 48  # one storage-side switch port per storage cable of Table 8 (an approximation)
# Storage servers: the storage ports over this many ports each (an assumption: a dual-port NDR adapter per storage
# server; appliances differ, and the RA leaves their count to the storage chosen).
PORTS_PER_STORAGE_SERVER = 2
SUBNET_MANAGER_PORTS = 1  # per tree: its subnet manager (UFM) on a leaf port


@dataclass(frozen=True)
class Sizing:
    """Every figure of one sizing; ``lines()`` prints it."""

    gpus: int
    profile: str
    nodes: int
    hcas: int
    radix: int
    down: int
    up: int
    planes: int
    zones: int
    leaves_per_zone: int
    spines_per_zone: int
    capacity: int
    gpu_MW: float
    it_MW: float | None
    facility_MW: float | None
    pue: float
    power_source: str
    node_burnin_s: float
    cluster_burnin_s: float
    localize_s: float
    per_pair: int = 1
    localize_rounds: int = 0
    storage: "Tree | None" = None
    storage_servers: int = 0
    management: int = 0
    ufm: int = 0
    switch_W: float | None = None

    @property
    def leaves(self) -> int:
        return self.leaves_per_zone * self.zones * self.planes

    @property
    def spines(self) -> int:
        return self.spines_per_zone * self.zones * self.planes

    @property
    def cables(self) -> int:
        """HCA-leaf cables plus leaf-spine cables."""
        return self.hcas + self.leaves * self.up

    @property
    def switches(self) -> int:
        """Every InfiniBand switch: the compute planes' and the storage fabric's."""
        return self.leaves + self.spines + (self.storage.switches if self.storage else 0)

    @property
    def switch_kW(self) -> float | None:
        return self.switches * self.switch_W / 1e3 if self.switch_W is not None else None

    def lines(self) -> list[str]:
        layout = (f"{self.planes} rail planes" if self.planes > 1 else "one plane") + (
            f", each in {self.zones} zones" if self.zones > 1 else "")
        power = (f"IT {self.it_MW:.2f} MW at maximum power, facility {self.facility_MW:.2f} MW at PUE {self.pue:g}"
                 if self.it_MW is not None else f"IT and facility unknown ({self.power_source})")
        return [
            f"sizing: {self.gpus} GPUs of {self.profile}: {self.nodes} nodes, {self.hcas} HCAs",
            f"fabric: two-layer fat-tree of {self.radix}-port switches, {self.down} down / {self.up} up per leaf "
            f"(one tree carries at most {self.capacity} endpoints): {layout}",
            f"switches: {self.leaves_per_zone} leaves and {self.spines_per_zone} spines per tree, "
            f"{_cables(self.per_pair)} from every leaf to every spine; {self.leaves} leaves, {self.spines} spines, "
            f"{self.leaves + self.spines} in all",
            f"cables: {self.hcas} HCA-leaf + {self.leaves * self.up} leaf-spine = {self.cables}",
            *self._support_lines(),
            f"power: GPUs {self.gpu_MW:.2f} MW; {power}; {self._switch_power()}",
            f"burn-in budget: {self.node_burnin_s / 60:.1f} min per-node checks (all nodes at once) + "
            f"{self.cluster_burnin_s / 60:.1f} min cluster rounds = "
            f"{(self.node_burnin_s + self.cluster_burnin_s) / 60:.1f} min (estimate); faults add up to "
            f"{self.localize_s / 60:.1f} min to localize ({self.localize_rounds} rounds, the localizer's "
            "expected_rounds on this tree)",
        ]

    def _support_lines(self) -> list[str]:
        """The storage fabric and the management nodes (DGX SuperPOD RA-11333-001's pod, see the module)."""
        if self.storage is None:
            return []
        s = self.storage
        return [f"storage: {self.storage_servers} storage servers ({self.storage_servers * PORTS_PER_STORAGE_SERVER} "
                f"ports at {PORTS_PER_STORAGE_SERVER} each, assumed) and {STORAGE_PORTS_PER_NODE} storage ports per "
                f"node on their own fabric: {s.endpoints} endpoints, {s.zones * s.leaves} leaves and "
                f"{s.zones * s.spines} spines ({_cables(s.per_pair)} a leaf-spine pair), {s.switches} switches",
                f"management: {self.management} management servers and {self.ufm} UFM appliances "
                f"({MANAGEMENT_PER_POD} and {UFM_PER_POD} per started pod of {POD_NODES} nodes, DGX SuperPOD "
                f"RA-11333-001 Table 7); {SUBNET_MANAGER_PORTS} subnet manager port on a leaf of every tree"]

    def _switch_power(self) -> str:
        if self.switch_kW is None:
            return (f"{self.switches} switches: power unknown (the tables hold no switch's power: give "
                    "--switch-power-W, its maximum from the switch's datasheet)")
        it = (self.it_MW or 0) + self.switch_kW / 1e3
        return (f"{self.switches} switches x {self.switch_W:g} W = {self.switch_kW:.1f} kW (IT with switches "
                f"{it:.2f} MW, facility {it * self.pue:.2f} MW)" if self.it_MW is not None
                else f"{self.switches} switches x {self.switch_W:g} W = {self.switch_kW:.1f} kW")


def _cables(n: int) -> str:
    return f"{n} cable" + ("" if n == 1 else "s")


# Bounds of the sizing's inputs, far past any machine built (the largest clusters are some 10^5 GPUs, the
# largest InfiniBand switch radix 144, a GPU node draws some 10^4 W), so that a figure a shell or a script got
# wrong (401 digits) is refused by name instead of overflowing a float inside the sizing.
MAX_GPUS = 100_000_000
MAX_RADIX = 4096
MAX_PUE = 10.0
MAX_NODE_W = 1e6


def _short(number: int) -> str:
    """An integer as given, or its first digits and how many there are (a 401-digit --gpus)."""
    text = str(number)
    return text if len(text) <= 20 else f"{text[:12]}... ({len(text)} digits)"


def ratio(text: str) -> tuple[int, int]:
    """"2:1" -> (2, 1) (down:up). Raises ProvisionError."""
    try:
        down, up = (int(x) for x in text.split(":"))
    except ValueError:
        down = up = 0
    if not (1 <= down <= MAX_RADIX and 1 <= up <= MAX_RADIX):
        raise ProvisionError(f"--oversubscription {text[:20]!r}: down:up as two positive integers, e.g. 1:1 or 2:1")
    return down, up


def _check_arguments(gpus: int, radix: int, pue: float, node_W: float | None, switch_W: float | None = None) -> None:
    """Raise ProvisionError naming the first argument of ``size`` outside its bounds."""
    if not 1 <= gpus <= MAX_GPUS:
        raise ProvisionError(f"--gpus: at least 1 and at most {MAX_GPUS:,}, got {_short(gpus)}")
    if not 4 <= radix <= MAX_RADIX or radix % 2:
        raise ProvisionError(f"--switch-radix: an even port count of at least 4 and at most {MAX_RADIX}, "
                             f"got {_short(radix)}")
    if pue > MAX_PUE:
        raise ProvisionError(f"--pue: at most {MAX_PUE:g} (facility power over IT power), got {pue:g}")
    if pue < 1:
        raise ProvisionError(f"--pue: at least 1.0 (facility power over IT power), got {pue:g}")
    if not math.isfinite(pue):
        raise ProvisionError(f"--pue: a finite number of at least 1.0, got {pue:g}")
    if node_W is not None and (not math.isfinite(node_W) or not 0 < node_W <= MAX_NODE_W):
        raise ProvisionError(f"--node-power-W: a positive number of watts, at most {MAX_NODE_W:g}, got {node_W:g}")
    if switch_W is not None and (not math.isfinite(switch_W) or not 0 < switch_W <= MAX_NODE_W):
        raise ProvisionError(f"--switch-power-W: a positive number of watts, at most {MAX_NODE_W:g}, got "
                             f"{switch_W:g}")


@dataclass(frozen=True)
class Tree:
    """One two-layer fat-tree (or its zones): ``endpoints`` in all, per zone ``leaves`` and ``spines``, each leaf
    with ``per_pair`` cables to every spine (``up`` = spines x per_pair uplinks a leaf)."""

    endpoints: int
    zones: int
    leaves: int
    spines: int
    per_pair: int
    up: int

    @property
    def switches(self) -> int:
        return self.zones * (self.leaves + self.spines)


def tree(endpoints: int, radix: int, down: int, up: int) -> Tree:
    """The evenly cabled two-layer tree of ``endpoints`` on ``radix``-port switches with ``down``/``up`` ports a
    leaf: zones of at most radix x down endpoints, ceil(per zone / down) leaves, and the fewest spines that every
    leaf reaches with the same number of cables (the largest k dividing ``up`` with leaves x k <= radix)."""
    if endpoints < 1:
        return Tree(0, 0, 0, 0, 0, 0)
    zones = math.ceil(endpoints / (radix * down))
    leaves = math.ceil(math.ceil(endpoints / zones) / down)
    if leaves == 1:
        return Tree(endpoints, zones, 1, 0, 0, 0)  # one leaf carries the whole tree: no spine layer
    per_pair = max(k for k in range(1, up + 1) if up % k == 0 and leaves * k <= radix)
    return Tree(endpoints, zones, leaves, up // per_pair, per_pair, up)


def size(gpus: int, profile: Profile, radix: int = 64, oversubscription: str = "1:1", pue: float = PUE,
         node_W: float | None = None, switch_W: float | None = None) -> Sizing:
    """The sizing of ``gpus`` GPUs of ``profile`` (a provision.profiles.Profile). Raises ProvisionError for
    a bad argument."""
    _check_arguments(gpus, radix, pue, node_W, switch_W)
    d, u = ratio(oversubscription)
    down = radix * d // (d + u)
    up = radix - down
    if down < 1 or up < 1:
        raise ProvisionError(f"--oversubscription {oversubscription}: leaves {down} down and {up} up ports of "
                             f"{radix}; each leaf needs both")
    per_node, hcas_per_node = profile.gpu.count, profile.hca.count
    if per_node < 1:
        raise ProvisionError(f"--profile {profile.name}: gpu.count must be at least 1")
    nodes = math.ceil(gpus / per_node)
    planes = hcas_per_node if hcas_per_node > 1 else 1
    plane = tree(nodes + SUBNET_MANAGER_PORTS if hcas_per_node else 0, radix, down, up)
    pods = math.ceil(nodes / POD_NODES)
    storage = None
    if hcas_per_node:
        storage_ports = math.ceil(nodes * STORAGE_PORTS_PER_POD / POD_NODES)
        storage = tree(nodes * STORAGE_PORTS_PER_NODE + storage_ports + SUBNET_MANAGER_PORTS, radix, radix // 2,
                       radix // 2)
    measured_W, source = node_power_W(profile)
    node_W = node_W if node_W is not None else measured_W
    if node_W is not None and measured_W is None:
        source = "--node-power-W"
    it_MW = nodes * node_W / 1e6 if node_W is not None else None
    rounds = expected_rounds(nodes, min(down, nodes), up) if nodes > 1 and _ib_pass_s(profile) else 0
    return Sizing(gpus=gpus, profile=profile.name, nodes=nodes, hcas=nodes * hcas_per_node, radix=radix, down=down,
                  up=plane.up, planes=planes if plane.endpoints else 0, zones=plane.zones,
                  leaves_per_zone=plane.leaves, spines_per_zone=plane.spines, capacity=radix * down,
                  gpu_MW=gpus * profile.gpu.power_cap_W / 1e6, it_MW=it_MW,
                  facility_MW=it_MW * pue if it_MW is not None else None, pue=pue, power_source=source,
                  node_burnin_s=node_burnin_s(profile), cluster_burnin_s=cluster_burnin_s(profile, nodes),
                  localize_s=rounds * (_ib_pass_s(profile) + CHECK_OVERHEAD_s), per_pair=plane.per_pair,
                  localize_rounds=rounds, storage=storage,
                  storage_servers=math.ceil(math.ceil(nodes * STORAGE_PORTS_PER_POD / POD_NODES)
                                            / PORTS_PER_STORAGE_SERVER) if storage else 0,
                  management=pods * MANAGEMENT_PER_POD if storage else 0, ufm=pods * UFM_PER_POD if storage else 0,
                  switch_W=switch_W)


def node_burnin_s(profile: Profile) -> float:
    """Seconds of one node's checks: each check's measured part from its profile params (gpu_stress
    duration_s; ib_write_bw duration_s per HCA, one after another) or ``FIXED_s``, plus ``CHECK_OVERHEAD_s``."""
    total = 0.0
    for check, seconds in FIXED_s.items():
        if check in profile.references or check in ("xid", "pcie_link", "topology", "nvlink", "stack"):
            total += seconds + CHECK_OVERHEAD_s
    stress = _param(profile, "gpu_stress", "duration_s")
    if stress:
        total += stress + CHECK_OVERHEAD_s
    total += _ib_pass_s(profile) + (CHECK_OVERHEAD_s if _ib_pass_s(profile) else 0)
    return total


def cluster_burnin_s(profile: Profile, nodes: int) -> float:
    """Seconds of the cluster procedure without faults: discovery, one quick pair round (every rail in
    turn), one all-reduce over all nodes; with faults add the localizer's expected rounds of the same kind."""
    if nodes < 2 or not _ib_pass_s(profile):
        return 0.0
    round_s = _ib_pass_s(profile) + CHECK_OVERHEAD_s
    allreduce = FIXED_s["nccl_allreduce"] + CHECK_OVERHEAD_s
    return CHECK_OVERHEAD_s + round_s + allreduce


def _ib_pass_s(profile: Profile) -> float:
    seconds = _param(profile, "ib_write_bw", "duration_s")
    return float(seconds or 0) * profile.hca.count


def _param(profile: Profile, check: str, name: str) -> float | None:
    """Test parameter ``name`` of the first of ``check``'s references that has it, else None."""
    for ref in profile.references.get(check, {}).values():
        value = ref.params.get(name)
        if value is not None:
            return float(value)
    return None
