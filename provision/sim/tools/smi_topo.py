"""``nvidia-smi topo -m`` and ``nvidia-smi nvlink -s`` for the simulated GPUs and HCAs.

Layouts follow topo_m_a100x8_nv12_4nic / topo_m_v100x8_dgx1_hybrid_cube_mesh_tabs (tab
separated cells, legend, NIC legend) and nvlink_status_v100_two_inactive_elided
(``\\t Link N: 25 GB/s`` or ``<inactive>``). Between GPUs on an NVSwitch board the cell is
``NV#`` with # the links both GPUs have active (so too between a GB200 tray's GPUs); otherwise the PCIe path decides:
same PCIe switch -> PIX, same NUMA node -> NODE, else SYS.
"""
from __future__ import annotations

import argparse

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def active_links(gpu: dict) -> int:
    """Number of the GPU's NVLink links that are up."""
    return sum(1 for link in (gpu.get("nvlink") or {}).get("links", []) if link.get("active"))


def _pcie_path(a: dict, b: dict) -> str:
    """Topology cell for two PCIe devices (GPU or HCA)."""
    if a.get("pcie_switch") == b.get("pcie_switch"):
        return "PIX"
    return "NODE" if a.get("numa_node") == b.get("numa_node") else "SYS"


def _switched(gpu: dict) -> bool:
    """The GPU reaches the others through NVLink switches: an NVSwitch board, or a tray of an NVLink domain
    (its fabric registration; a GB200 NVL72 tray prints NV18 between its GPUs, MLCommons GB200 NVL72 system
    description, profile gb200-nvl72)."""
    return bool(gpu.get("nvswitch") or gpu.get("fabric"))


def _cell(a: tuple[str, dict], b: tuple[str, dict]) -> str:
    """Matrix cell between devices ``a`` and ``b`` (kind, device)."""
    if a[1] is b[1]:
        return " X "
    if a[0] == b[0] == "gpu" and _switched(a[1]) and _switched(b[1]):
        links = min(active_links(a[1]), active_links(b[1]))
        if links:
            return f"NV{links}"
    return _pcie_path(a[1], b[1])


def cpu_affinity(model: dict, numa: int) -> str:
    """CPU list of NUMA node ``numa`` with SMT siblings (Linux numbering: cores, then siblings)."""
    cpu = model.get("cpu") or {"numa_nodes": 1, "cores_per_numa": 1, "threads_per_core": 1}
    per, nodes = cpu["cores_per_numa"], cpu["numa_nodes"]
    ranges = [f"{t * per * nodes + numa * per}-{t * per * nodes + numa * per + per - 1}"
              for t in range(cpu["threads_per_core"])]
    return ",".join(ranges)


def topo_matrix(model: dict, gpus: list[dict]) -> str:
    """``nvidia-smi topo -m`` text."""
    devices = [(f"GPU{i}", ("gpu", g)) for i, g in enumerate(gpus)]
    devices += [(f"NIC{i}", ("nic", h)) for i, h in enumerate(model.get("hcas", []))]
    lines = ["\t" + "\t".join(name for name, _ in devices) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for name, dev in devices:
        cells = [name] + [_cell(dev, other) for _, other in devices]
        if dev[0] == "gpu":
            numa = dev[1].get("numa_node", 0)
            cells += [cpu_affinity(model, numa), f"{numa}\t", "N/A"]
        lines.append("\t".join(cells))
    text = "\n".join(lines) + "\n\n" + LEGEND
    if model.get("hcas"):
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {h['name']}\n" for i, h in enumerate(model["hcas"]))
    return text


def topo_main(argv: list[str], model: dict, gpus: list[dict]) -> int:
    """``nvidia-smi topo -m`` (other topo queries are not simulated)."""
    p = argparse.ArgumentParser(prog="nvidia-smi topo")
    p.add_argument("-m", "--matrix", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    if not args.matrix:
        print("topo -- Display topological information about the system.\n\n    Usage: nvidia-smi topo -m")
        return 0
    print(topo_matrix(model, gpus), end="")
    return 0


def _speed(value: float) -> str:
    """Per-link speed as nvidia-smi prints it (``25 GB/s``, ``25.781 GB/s``)."""
    return f"{round(value, 3):g}"


def nvlink_status(pairs: list[tuple[int, dict]]) -> str:
    """``nvidia-smi nvlink -s`` text for the chosen GPUs."""
    lines = []
    for index, gpu in pairs:
        lines.append(f"GPU {index}: {gpu['model']} (UUID: {gpu['uuid']})")
        nv = gpu.get("nvlink") or {}
        for link in nv.get("links", []):
            state = f"{_speed(nv['speed_GBps'])} GB/s" if link.get("active") else "<inactive>"
            lines.append(f"\t Link {link['link']}: {state}")
    return "".join(line + "\n" for line in lines)


def nvlink_main(argv: list[str], gpus: list[dict]) -> int:
    """``nvidia-smi nvlink [-s] [-i ID]``."""
    p = argparse.ArgumentParser(prog="nvidia-smi nvlink")
    p.add_argument("-s", "--status", action="store_true")
    p.add_argument("-i", "--id")
    args, _unknown = p.parse_known_args(argv)
    pairs = list(enumerate(gpus))
    if args.id is not None:
        pairs = [(i, g) for i, g in pairs if str(i) in args.id.split(",")]
    print(nvlink_status(pairs), end="")
    return 0
