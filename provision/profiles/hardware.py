"""The typed hardware of a profile: frozen dataclasses built once from its validated YAML.

``profile.schema.json`` stays the validator (it refuses unknown keys and names the file and key);
``build`` turns the mapping it accepted into these types, so a reader writes ``profile.gpu.count`` and
mypy sees a misspelt field. Optional parts are None (``gpu.nvlink`` on a PCIe board, ``hca.rate_Gbps``
on a node without InfiniBand, ``power`` where no figure is published), never a missing key.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from provision.profiles.frozen import freeze
from provision.results.model import Reference

# Transfer rate per lane of each PCIe generation, GT/s (PCI-SIG base specifications 1.0-6.0).
GTPS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


@dataclass(frozen=True)
class PCIe:
    """A PCIe link: generation and lanes."""

    gen: int
    width: int


@dataclass(frozen=True)
class NVLink:
    """Links per GPU and per-link speed as ``nvidia-smi nvlink -s`` prints it (GB/s); links 0 = none."""

    version: int
    links: int
    speed_GBps: float


@dataclass(frozen=True)
class GPU:
    """The node's GPUs: model as nvidia-smi prints it, count, memory, board power cap, links."""

    compute_capability: str
    model: str
    count: int
    memory_total_MiB: int
    power_cap_W: float
    pcie: PCIe
    nvswitch: bool
    memory_error_mechanism: str  # row_remapping, page_retirement, none
    nvlink: NVLink | None = None
    bus_ids: tuple[str, ...] = ()  # the board's GPU PCI bus ids in nvidia-smi order (empty: not known)
    host_link: str = "pcie"  # how the GPUs reach the host CPU: pcie, or c2c (NVLink-C2C to a Grace CPU)
    mig: bool = False  # the GPUs run in MIG mode (gpu_settings expects it on); false: whole GPUs


@dataclass(frozen=True)
class HCA:
    """The node's RDMA adapters; ``count`` 0 = none (the other fields are then None)."""

    count: int
    model: str | None = None
    rate_Gbps: float | None = None
    link_layer: str | None = None  # InfiniBand, Ethernet
    pcie: PCIe | None = None
    devices: tuple[str, ...] | None = None  # RDMA device names; None = mlx5_0..mlx5_<count-1>


@dataclass(frozen=True)
class Topology:
    """What ``nvidia-smi topo -m`` must show: every GPU pair's cell and each GPU's nearest NIC (None = not judged)."""

    gpu_gpu: str | None
    gpu_nearest_nic: str | None


@dataclass(frozen=True)
class NVLinkDomain:
    """A multi-node NVLink domain (GB200/GB300 NVL72): ``gpus`` GPUs on ``nodes`` compute trays sharing one
    NVLink fabric, the trays running the IMEX daemon (``imex``) rather than a host Fabric Manager."""

    gpus: int
    nodes: int
    imex: bool
    source: str


@dataclass(frozen=True)
class Host:
    """The host CPU beside the GPUs where it decides what applies: ``cpu`` family (Grace), ``arch`` as
    ``uname -m`` prints it (aarch64, x86_64), ``count`` CPUs per host."""

    cpu: str
    arch: str
    count: int | None
    source: str


@dataclass(frozen=True)
class Power:
    """The whole node's maximum draw, for ``provision plan``'s rack budget and sizing."""

    node_max_W: float
    source: str


@dataclass(frozen=True)
class Hardware:
    """One profile's typed parts, shared by every host of that profile (read-only)."""

    description: str
    gpu: GPU
    hca: HCA
    topology: Topology
    power: Power | None
    references: Mapping[str, Mapping[str, Reference]]  # check -> metric -> reference
    exclude_checks: tuple[str, ...]  # check ids left out of every check set (``--check-set``)
    nvlink_domain: NVLinkDomain | None = None  # None: NVLink (if any) stays inside the node
    stack_line: str | None = None  # the stack release line (stack_release.yaml ``lines``); None: the default
    host: Host | None = None  # None: an x86-64 host of no particular kind


def _pcie(raw: Mapping | None) -> PCIe | None:
    return PCIe(int(raw["gen"]), int(raw["width"])) if raw else None


def reference(row: Mapping) -> Reference:
    """A reference row of the YAML as the results model's Reference."""
    return Reference(value=float(row["value"]), lower=row["lower"], upper=row["upper"], unit=row["unit"],
                     source=row["source"], params=freeze(dict(row.get("params") or {})),
                     estimate=bool(row.get("estimate", False)))


def build(data: Mapping) -> Hardware:
    """The typed hardware of ``data``, a mapping ``profile.schema.json`` accepted. Numbers stay as the file
    writes them (400, not 400.0: a finding's expected value reads as the profile does)."""
    gpu, hca, topology, power = data["gpu"], data["hca"], data["topology"], data.get("power")
    domain, host = data.get("nvlink_domain"), data.get("host")
    nvlink = gpu.get("nvlink")
    return Hardware(
        description=str(data["description"]),
        gpu=GPU(compute_capability=str(gpu["compute_capability"]), model=str(gpu["model"]), count=int(gpu["count"]),
                memory_total_MiB=int(gpu["memory_total_MiB"]), power_cap_W=gpu["power_cap_W"],
                pcie=PCIe(int(gpu["pcie"]["gen"]), int(gpu["pcie"]["width"])), nvswitch=bool(gpu["nvswitch"]),
                memory_error_mechanism=str(gpu["memory_error_mechanism"]),
                nvlink=NVLink(int(nvlink["version"]), int(nvlink["links"]), nvlink["speed_GBps"])
                if nvlink else None,
                bus_ids=tuple(gpu.get("bus_ids") or ()), host_link=str(gpu.get("host_link", "pcie")),
                mig=bool(gpu.get("mig", False))),
        hca=HCA(count=int(hca["count"]), model=hca.get("model"), rate_Gbps=hca.get("rate_Gbps"),
                link_layer=hca.get("link_layer"), pcie=_pcie(hca.get("pcie")),
                devices=tuple(hca["devices"]) if hca.get("devices") is not None else None),
        topology=Topology(topology.get("gpu_gpu"), topology.get("gpu_nearest_nic")),
        power=Power(power["node_max_W"], str(power["source"])) if power else None,
        references=freeze({check: {metric: reference(row) for metric, row in rows.items()}
                           for check, rows in (data.get("references") or {}).items()}),
        exclude_checks=tuple(data.get("exclude_checks") or ()),
        nvlink_domain=NVLinkDomain(int(domain["gpus"]), int(domain["nodes"]), bool(domain["imex"]),
                                   str(domain["source"])) if domain else None,
        stack_line=data.get("stack_line"),
        host=Host(str(host["cpu"]), str(host["arch"]), host.get("count"), str(host["source"])) if host else None)
