"""Fault injection on the simulated rack: break a node's hardware model the way clusters break.

A fault edits the node's hardware model (``/etc/provision-sim/hardware.yaml``, reached through
the node's PID 1) and the kernel views derived from it; the simulated tools then print what
the real tools print on such hardware. Nothing tells a tool or a check what to report.
``heal`` restores the model saved when the rack started.

Kinds and their targets (``--device``): a GPU index, an HCA name (mlx5_N), either of them (acs_enabled), a bond
slave name, a GPU pair "a,b", or a tool name; ``--value`` tunes the fault (a factor, a width, a version). The kinds
on firmware and settings live in ``settingfaults``.

Fabric faults edit the rack's fabric (``fabric.yaml`` in the rack's state folder, copied into
every node, read by the simulated ibnetdiscover, ib_write_bw and all_reduce_perf). Their
``--device`` names a cable from the node's side: ``mlx5_R`` (the node's own HCA cable on rail
R), ``mlx5_R:upJ`` (uplink J, in port order, of the node's leaf switch on rail R).

Service faults stop a daemon inside the node with ``systemctl stop`` (run in the node's namespaces), as an
operator or a crash leaves it; its own tools and its peers then see it gone (the simulated IMEX daemon's port
closes). ``heal`` starts it again.

BMC faults (``bmc.faultkinds``): ``psu_lost``, ``firmware_stale`` and ``over_temp`` edit the model the node's BMC
reports; the others (``bmc.faultkinds.BMC_KINDS``) make the BMC misbehave or freeze the node. A fault a real BMC
would log, and the GPU faults xid79, gpu_lost, gpu_missing and dbe_remap, add a SEL entry that ``heal`` removes.
"""
from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from provision import external
from provision.errors import ProvisionError
from provision.sim.modeldevices import gpu as _gpu, hca as _hca
from provision.sim import rack
from provision.sim import settingfaults as sf
from provision.sim.bmc import faultkinds as bf

MODEL = "etc/provision-sim/hardware.yaml"


@dataclass(frozen=True)
class FaultKind:
    kind: str
    target: str  # gpu | hca | device (a GPU or an HCA) | slave | pair | tool | node
    description: str
    apply: Callable[[dict, str, str | None], str]  # (model, device, value) -> device label
    # The nodes whose tools show the fault: None for every node; "blackwell" for a Blackwell node on driver 580,
    # whose nvidia-smi prints the fabric's health, clique and the driver's recovery action (older drivers print
    # the fabric's state only) and whose kernel logs NVLink5 Xids; "bmc" for a fault the node's BMC reports (Redfish,
    # the SEL), which node checks over SSH need not see (the fault matrix leaves both out).
    needs: str | None = None






def _pci(gpu: dict) -> str:
    """The GPU's PCI id as NVRM prints it in Xid lines: 0000:5d:00."""
    domain, bus, rest = gpu["bus_id"].lower().split(":")
    return f"{domain[-4:]}:{bus}:{rest.split('.')[0]}"


def _log(model: dict, *lines: str) -> None:
    model.setdefault("kernel_log", []).extend(lines)


def xid79(model, device, value):
    gpu = _gpu(model, device)
    gpu["fallen_off_bus"] = True
    _log(model, f"NVRM: Xid (PCI:{_pci(gpu)}): 79, pid=0, name=swapper/0, GPU has fallen off the bus.",
         f"NVRM: GPU {_pci(gpu)}.0: GPU has fallen off the bus.")
    return f"GPU{gpu['index']} {gpu['bus_id']}"


def dbe_remap(model, device, value):
    gpu = _gpu(model, device)
    for scope in ("volatile", "aggregate"):
        gpu["ecc"][scope]["dram_uncorrectable"] += 1
    gpu["remapped_rows"].update(uncorrectable=gpu["remapped_rows"]["uncorrectable"] + 1, pending=True)
    _log(model, f"NVRM: Xid (PCI:{_pci(gpu)}): 48, pid=2231, name=python3, An uncorrectable double bit error (DBE) "
         "has been detected on GPU in the framebuffer at partition 2, subpartition 1.",
         f"NVRM: Xid (PCI:{_pci(gpu)}): 63, pid=2231, name=python3, Row Remapper: New row (0x00000000001d6a40) "
         "marked for remapping, reset gpu to activate.")
    return f"GPU{gpu['index']} {gpu['bus_id']}"


def pcie_downtrain(model, device, value):
    gpu = _gpu(model, device)
    if (value or "x8") == "gen1":
        gpu["pcie"]["gen_current"] = 1
    else:
        gpu["pcie"]["width_current"] = int(str(value or "x8").lstrip("x"))
    return f"GPU{gpu['index']} {gpu['bus_id']}"


# A link that resends about a thousand TLPs a second under load for a day (a marginal riser): far above the 0.512
# replays a second a Gen5 x16 link may make at the PCIe bit error rate of 10^-12 (pcie_replays' reference), averaged
# over any uptime up to six years.
REPLAYS = 100_000_000


def pcie_replays(model, device, value):
    """The GPU's PCIe link resent --value TLPs (default ``REPLAYS``) since the driver loaded: nvidia-smi's replay
    counter, as bit errors on the slot, riser or cable leave it."""
    gpu = _gpu(model, device)
    try:
        count = int(value) if value is not None else REPLAYS
    except ValueError:
        count = -1
    if not 0 <= count < 1 << 32:  # NVML's counter is an unsigned int
        raise ProvisionError(f"--value {str(value)[:40]!r}: a replay count, 0 to {(1 << 32) - 1}")
    gpu["pcie"]["replays"] = count
    return f"GPU{gpu['index']} {gpu['bus_id']}"


def nvlink_down(model, device, value):
    gpu = _gpu(model, device)
    link = int(value) if value is not None else 0
    gpu["nvlink"]["links"][link]["active"] = False
    return f"GPU{gpu['index']} link {link}"


def ib_port_down(model, device, value):
    _hca(model, device).update(state="Down", physical_state="Polling")
    return device


def ib_rate(model, device, value):
    _hca(model, device)["rate_Gbps"] = int(value or 200)
    return device


def _factor(value: str | None, default: float) -> float:
    """A slowdown factor from --value, in (0, 1]. Raises ProvisionError."""
    try:
        factor = float(value) if value is not None else default
    except ValueError:
        factor = -1.0
    if not 0 < factor <= 1:
        raise ProvisionError(f"--value {str(value)[:40]!r}: a factor in (0, 1] (the fraction of healthy speed left)")
    return factor


def slow_hca(model, device, value):
    _hca(model, device)
    model.setdefault("faults", {}).setdefault("slow_hca", {})[device] = _factor(value, 0.7)
    return device


def slow_gpu_pair(model, device, value):
    a, b = (int(x) for x in device.split(","))
    _gpu(model, str(a)), _gpu(model, str(b))
    model.setdefault("faults", {})["slow_gpu_pair"] = {"gpus": [a, b], "factor": float(value or 0.6)}
    return f"GPU{a}->GPU{b}"


def gpu_burn_faulty(model, device, value):
    gpu = _gpu(model, device)
    model.setdefault("faults", {}).setdefault("gpu_burn_faulty", []).append(gpu["index"])
    return f"GPU{gpu['index']}"


def hung_tool(model, device, value):
    model.setdefault("faults", {}).setdefault("hung_tools", []).append(device)
    return device


def gpu_missing(model, device, value):
    gpu = _gpu(model, device)
    gpu["present"] = False
    return f"GPU{gpu['index']}"


def _fabric(model: dict, device: str) -> dict:
    gpu = _gpu(model, device)
    if not gpu.get("fabric"):
        raise ProvisionError(f"--device {device!r}: GPU{gpu['index']} is on no NVLink fabric "
                             "(no NVSwitch, no NVLink domain)")
    return gpu


def fabric_in_progress(model, device, value):
    """Fabric Manager never finished the GPU's registration: nvmlGpuFabricInfo's state stays In Progress and
    its status is not read (N/A), as a GB200 GPU whose NVLink switch trays never trained it prints."""
    gpu = _fabric(model, device)
    gpu["fabric"].update(state=value or "In Progress", status="N/A")
    return f"GPU{gpu['index']} fabric {gpu['fabric']['state']}"


def fabric_limited(model, device, value):
    """The fabric's health summary (R570+ NVML_GPU_FABRIC_HEALTH_SUMMARY_*) reports Limited Capacity (or --value:
    Unhealthy): some of the GPU's NVLink routes lost."""
    gpu = _fabric(model, device)
    gpu["fabric"]["health"]["summary"] = value or "Limited Capacity"
    return f"GPU{gpu['index']} fabric health {gpu['fabric']['health']['summary']}"


def fabric_other_clique(model, device, value):
    """The GPU registered in another clique than the rest of its NVLink domain (--value the clique id; default
    the domain's own plus 1000): its partition was set up apart from its tray's."""
    gpu = _fabric(model, device)
    gpu["fabric"]["clique_id"] = int(value) if value is not None else int(gpu["fabric"]["clique_id"]) + 1000
    return f"GPU{gpu['index']} clique {gpu['fabric']['clique_id']}"


# NVML's error texts nvidia-smi prints for a GPU it cannot read (nvmlErrorString: NVML_ERROR_GPU_IS_LOST and
# NVML_ERROR_UNKNOWN).
LOST_ERRORS = ("GPU is lost", "Unknown Error")


def _lost_error(value: str | None, default: str) -> str:
    error = value or default
    if error not in LOST_ERRORS:
        raise ProvisionError(f"--value {error[:40]!r}: one of {', '.join(LOST_ERRORS)}")
    return error


def gpu_lost(model, device, value):
    """NVML cannot open the GPU any more: nvidia-smi prints no section for it, only its "Unable to determine the
    device handle" line with the error (--value, default GPU is lost)."""
    gpu = _gpu(model, device)
    gpu.update(lost=_lost_error(value, "GPU is lost"), lost_reads=False)
    return f"GPU{gpu['index']} {gpu['bus_id']} lost"


def gpu_unreadable(model, device, value):
    """NVML still holds the GPU but every reading fails: nvidia-smi prints the error (--value, default Unknown
    Error) in place of each of its values."""
    gpu = _gpu(model, device)
    gpu.update(lost=_lost_error(value, "Unknown Error"), lost_reads=True)
    return f"GPU{gpu['index']} {gpu['bus_id']} unreadable"


# The driver's recovery actions (nvmlDeviceGetGpuRecoveryAction as nvidia-smi prints gpu_recovery_action:
# None, GPU Reset, Node Reboot, Drain P2P, Drain and Reset; utkuozdemir/nvidia_gpu_exporter PR 448).
RECOVERY_ACTIONS = ("GPU Reset", "Node Reboot", "Drain P2P", "Drain and Reset")


def recovery_action(model, device, value):
    """The driver asks for a recovery action on the GPU (--value, default GPU Reset)."""
    gpu = _gpu(model, device)
    action = value or RECOVERY_ACTIONS[0]
    if action not in RECOVERY_ACTIONS:
        raise ProvisionError(f"--value {action[:40]!r}: one of {', '.join(RECOVERY_ACTIONS)}")
    gpu["recovery_action"] = action
    return f"GPU{gpu['index']} recovery action {action}"


# NVLink5 Xid lines as driver 570/580 prints them (unit, severity, XC/instance, link, six registers), real lines
# quoted in leptonai/gpud PR 1160 (144 SAW_MVB, 149 NETIR_LINK_EVT) and PR 1174 (145 RLW_RXPIPE); the PCI id and
# link are the faulted GPU's. Other NVLink5 codes (146-148, 150) have no published line here: refused.
NVLINK5_XIDS = {
    144: "SAW_MVB Nonfatal XC0 i0 Link {link:02d} (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
    145: "RLW_RXPIPE Nonfatal XC0 i0 Link {link:02d} (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 "
         "0x00000004)",
    149: "NETIR_LINK_EVT Fatal XC0 i0 Link {link:02d} (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 "
         "0x00000000)",
}


def nvlink5_xid(model, device, value):
    """An NVLink5 Xid on the GPU (--value CODE[:LINK], default 145 on link 0): the kernel log gains the driver's
    line; a fatal one (149) also takes the link down, as the NVLink5 workflow's link error does."""
    gpu = _gpu(model, device)
    code, _, link_text = (value or "145").partition(":")
    try:
        xid, link = int(code), int(link_text or 0)
    except ValueError:
        raise ProvisionError(f"--value {str(value)[:40]!r}: CODE[:LINK], e.g. 145:13") from None
    if xid not in NVLINK5_XIDS:
        known = ", ".join(map(str, NVLINK5_XIDS))
        raise ProvisionError(f"--value {xid}: an NVLink5 Xid with a published line ({known})")
    links = (gpu.get("nvlink") or {}).get("links") or []
    if not 0 <= link < len(links):
        raise ProvisionError(f"--value {value!r}: GPU{gpu['index']} has links 0..{len(links) - 1}")
    if NVLINK5_XIDS[xid].split()[1] == "Fatal":
        links[link]["active"] = False
    _log(model, f"NVRM: Xid (PCI:{_pci(gpu)}): {xid}, " + NVLINK5_XIDS[xid].format(link=link))
    return f"GPU{gpu['index']} Xid {xid} link {link}"


def bond_slave_down(model, device, value):
    slaves = model["storage"]["bond"]["slaves"]
    slave = next((s for s in slaves if s["name"] == device), None)
    if slave is None:
        raise ProvisionError(f"--device {device!r}: no such bond slave ({', '.join(s['name'] for s in slaves)})")
    slave["mii_status"] = "down"
    return device


def old_driver(model, device, value):
    version = value or "535.183.01"
    model.setdefault("faults", {})["loaded_driver"] = {"version": version, "cuda_version": "12.2"}
    return f"driver {version}"


def slow_node(model, device, value):
    model.setdefault("faults", {})["slow_node"] = _factor(value, 0.7)
    return "node"


KINDS = {k.kind: k for k in [
    FaultKind("xid79", "gpu", "GPU fell off the bus (Xid 79): gone from nvidia-smi and lspci", xid79),
    FaultKind("dbe_remap", "gpu", "double-bit ECC error with a pending row remap (Xid 48 + 63)", dbe_remap),
    FaultKind("pcie_downtrain", "gpu", "GPU PCIe link downtrained (--value x8 | x4 | gen1)", pcie_downtrain),
    FaultKind("pcie_replays", "gpu", f"GPU PCIe link resending TLPs: its replay counter raised (--value count, "
              f"default {REPLAYS:,})", pcie_replays),
    FaultKind("nvlink_down", "gpu", "one NVLink link inactive (--value link number)", nvlink_down),
    FaultKind("ib_port_down", "hca", "InfiniBand port down (cable pulled: Down/Polling)", ib_port_down),
    FaultKind("ib_rate", "hca", "InfiniBand port trained at a lower rate (--value Gb/s, default 200)", ib_rate),
    FaultKind("slow_hca", "hca", "HCA slow in ib_write_bw (--value factor, default 0.7)", slow_hca),
    FaultKind("slow_gpu_pair", "pair", "slow GPU pair in copies and all-reduce (--device a,b; --value factor)",
              slow_gpu_pair),
    FaultKind("gpu_burn_faulty", "gpu", "gpu-burn reports the GPU FAULTY (and still exits 0)", gpu_burn_faulty),
    FaultKind("hung_tool", "tool", "a tool never returns (--device tool name, e.g. all_reduce_perf)", hung_tool),
    FaultKind("gpu_missing", "gpu", "a GPU missing from the node (not enumerated at all)", gpu_missing),
    FaultKind("fabric_in_progress", "gpu", "NVLink fabric registration stuck In Progress (status N/A)",
              fabric_in_progress, "blackwell"),
    FaultKind("fabric_limited", "gpu", "NVLink fabric health Limited Capacity (--value Unhealthy: the other summary)",
              fabric_limited, "blackwell"),
    FaultKind("fabric_other_clique", "gpu", "a GPU in another NVLink clique than its domain (--value clique id)",
              fabric_other_clique, "blackwell"),
    FaultKind("gpu_lost", "gpu", "NVML cannot open the GPU: nvidia-smi's device-handle error (--value GPU is lost | "
              "Unknown Error)", gpu_lost, "blackwell"),
    FaultKind("gpu_unreadable", "gpu", "every reading of the GPU fails: nvidia-smi prints Unknown Error (or --value "
              "GPU is lost)", gpu_unreadable, "blackwell"),
    FaultKind("recovery_action", "gpu", "the driver asks for a recovery action (--value GPU Reset | Node Reboot | "
              "Drain P2P | Drain and Reset)", recovery_action, "blackwell"),
    FaultKind("nvlink5_xid", "gpu", "an NVLink5 Xid in the kernel log (--value CODE[:LINK], 144 | 145 | 149; 149 takes "
              "the link down)", nvlink5_xid, "blackwell"),
    FaultKind("bond_slave_down", "slave", "a storage bond slave with link down", bond_slave_down),
    FaultKind("old_driver", "node", "an old driver still loaded (--value version, default 535.183.01)", old_driver),
    FaultKind("slow_node", "node", "every collective the node joins is slower (--value factor, default 0.7)",
              slow_node),
    FaultKind("vbios_mismatch", "gpu", "a GPU on another VBIOS than its siblings (--value version, default "
              f"{sf.DEFAULT_VBIOS})", sf.vbios_mismatch),
    FaultKind("hca_firmware", "hca", "an HCA on another firmware than the rest (--value version, default "
              f"{sf.DEFAULT_HCA_FW})", sf.hca_firmware),
    FaultKind("acs_enabled", "device", "ACS redirect on in the PCIe switch port above a GPU or HCA (--device GPU "
              "index or mlx5_N)", sf.acs_enabled),
    FaultKind("peermem_missing", "node", "nvidia_peermem not loaded: GPUDirect ib_write_bw --use_cuda fails",
              sf.peermem_missing),
    FaultKind("governor_powersave", "node", "CPU frequency governor not performance (--value governor, default "
              "powersave)", sf.governor_powersave),
    FaultKind("mig_enabled", "gpu", "MIG mode enabled on a GPU", sf.mig_enabled),
    FaultKind("power_limit", "gpu", "a GPU's power limit lowered (--value watts, default 500)", sf.power_limit),
    FaultKind("iommu_translated", "node", "the IOMMU translates DMA (no iommu=pt): IOMMU groups of type DMA-FQ",
              sf.iommu_translated),
    FaultKind("mtu_low", "hca", "an HCA port's active MTU below 4096 (--value bytes, default 2048)", sf.mtu_low),
    FaultKind("persistence_off", "gpu", "persistence mode off on a GPU", sf.persistence_off),
    FaultKind("psu_lost", "psu", "a power supply failed: Absent and Critical in Redfish, redundancy degraded, a "
              "critical SEL entry", bf.psu_lost, "bmc"),
    FaultKind("firmware_stale", "node", f"BMC, BIOS and CPLD firmware older than the rack's (--value BMC version, "
              f"default {bf.STALE['bmc']})", bf.firmware_stale, "bmc"),
    FaultKind("over_temp", "gpu", f"a GPU's temperature sensor over UpperCritical (--value C, default "
              f"{bf.OVER_TEMP_C}) and a critical SEL entry", bf.over_temp, "bmc"),
]}
# Fabric fault kinds: (description, cable edit). The edit gets the cable dict and --value.
FABRIC_KINDS = {
    "cable_degraded": ("a cable trained down (--device mlx5_R or mlx5_R:upJ; --value width 1x|2x or a speed "
                       "such as HDR; default 1x)", "degrade"),
    "port_dead": ("a switch port dead: the cable is gone from the fabric (--device mlx5_R:upJ)", "dead"),
    "port_flapping": ("a switch port flapping: flows through it lose 30-80% (--device mlx5_R:upJ)", "flap"),
}

# Service fault kinds: (description, the systemd unit stopped). nvidia-imex.service is the unit NVIDIA's package
# registers, stopped with `systemctl stop nvidia-imex` (NVIDIA IMEX guide, "Getting Started with IMEX",
# https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/gettingstarted.html).
SERVICE_KINDS = {
    "imex_stopped": ("the tray's IMEX daemon stopped (systemctl stop nvidia-imex): its peers list it unavailable",
                     "nvidia-imex"),
}


def _node(inventory_dir: Path, name: str) -> rack.SimNode:
    nodes = {n.name: n for n in rack.load_nodes(inventory_dir)}
    if name not in nodes:
        raise ProvisionError(f"{inventory_dir}: no simulated node {name!r} (nodes: {', '.join(nodes) or 'none'})")
    if not nodes[name].alive():
        raise ProvisionError(f"simulated node {name} is not running")
    return nodes[name]


def _active_path(inventory_dir: Path) -> Path:
    return rack.state_dir(inventory_dir) / "faults.json"


def active(inventory_dir: Path) -> dict[str, list[dict]]:
    """Injected faults per node: {node: [{kind, device, value, label}]}."""
    path = _active_path(inventory_dir)
    return json.loads(path.read_text()) if path.is_file() else {}


def default_device(kind: FaultKind, model: dict, rng: random.Random) -> str:
    """A random target of the right type on this node (used when --device is not given)."""
    gpus = [str(g["index"]) for g in model["gpus"]]
    choices = {"gpu": gpus, "hca": [h["name"] for h in model.get("hcas", [])],
               "slave": [s["name"] for s in model.get("storage", {}).get("bond", {}).get("slaves", [])],
               "pair": [",".join(p) for p in zip(gpus, gpus[1:] + gpus[:1])],
               "tool": ["all_reduce_perf"], "node": ["node"],
               "psu": [str(p["index"]) for p in (model.get("platform") or {}).get("psus") or []],
               "device": gpus + [h["name"] for h in model.get("hcas", [])]}[kind.target]
    if not choices:
        raise ProvisionError(f"fault {kind.kind}: this node has no {kind.target} to break")
    return rng.choice(choices)


def inject(inventory_dir: Path, node_name: str, kind_name: str, device: str | None = None,
           value: str | None = None, rng: random.Random | None = None) -> dict:
    """Break ``node_name`` with fault ``kind_name``; return {kind, device, value, label}."""
    if kind_name in FABRIC_KINDS:
        return _inject_fabric(inventory_dir, node_name, kind_name, device, value)
    if kind_name in bf.BMC_KINDS:
        return _inject_bmc(inventory_dir, node_name, kind_name)
    if kind_name in SERVICE_KINDS:
        unit = SERVICE_KINDS[kind_name][1]
        systemctl(_node(inventory_dir, node_name), "stop", unit)
        return _record(inventory_dir, node_name, {"kind": kind_name, "device": unit, "value": None,
                                                  "label": f"{unit}.service stopped"})
    kind = KINDS.get(kind_name)
    if kind is None:
        known = ", ".join([*KINDS, *FABRIC_KINDS, *SERVICE_KINDS, *bf.BMC_KINDS])
        raise ProvisionError(f"unknown fault kind {kind_name!r} (known: {known})")
    node = _node(inventory_dir, node_name)
    model_path = node.root() / MODEL
    model = yaml.safe_load(model_path.read_text())
    device = device if device is not None else default_device(kind, model, rng or random.Random())
    label = kind.apply(model, device, value)
    model_path.write_text(yaml.safe_dump(model, sort_keys=False))
    rack.write_kernel_views(node.root(), model)
    record = _record(inventory_dir, node_name, {"kind": kind.kind, "device": device, "value": value, "label": label})
    bf.sel_event(_sel_dir(inventory_dir), node_name, record, model)
    return record


def _sel_dir(inventory_dir: Path) -> Path:
    from provision.sim.bmc import daemon

    return daemon.folder(rack.state_dir(inventory_dir))


def _inject_bmc(inventory_dir: Path, node_name: str, kind_name: str) -> dict:
    """A BMC service fault: recorded for the daemon (the node may be powered off), node_hung freezes the node."""
    nodes = {n.name: n for n in rack.load_nodes(inventory_dir)}
    if node_name not in nodes:
        raise ProvisionError(f"{inventory_dir}: no simulated node {node_name!r} (nodes: {', '.join(nodes) or 'none'})")
    if kind_name == "node_hung":
        bf.freeze(_node(inventory_dir, node_name).cgroup, True)
    record = _record(inventory_dir, node_name, {"kind": kind_name, "device": "bmc", "value": None,
                                                "label": bf.BMC_KINDS[kind_name]})
    bf.sel_event(_sel_dir(inventory_dir), node_name, record, None)
    return record


def systemctl(node: rack.SimNode, verb: str, unit: str) -> None:
    """``systemctl VERB UNIT`` inside ``node`` (its mount, UTS, IPC, PID and cgroup namespaces: its own systemd).
    Raises ProvisionError naming the node and systemctl's complaint (e.g. a unit the node has not installed)."""
    argv = ["nsenter", "--target", str(node.pid), "--mount", "--uts", "--ipc", "--pid", "--cgroup", "--",
            "systemctl", verb, unit]
    done = external.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        raise ProvisionError(f"simulated node {node.name}: systemctl {verb} {unit} failed: {why[:200]}")


def _record(inventory_dir: Path, node_name: str, record: dict) -> dict:
    faults = active(inventory_dir)
    faults.setdefault(node_name, []).append(record)
    _active_path(inventory_dir).write_text(json.dumps(faults, indent=1))
    return record


def _fabric_path(inventory_dir: Path) -> Path:
    path = rack.state_dir(inventory_dir) / rack.FABRIC_FILE
    if not path.is_file():
        raise ProvisionError(f"{inventory_dir}: this rack has no InfiniBand fabric (its profile has no IB HCAs)")
    return path


def _cable(world: dict, host: str, device: str) -> tuple[dict, dict]:
    """(plane, cable) that ``device`` (mlx5_R or mlx5_R:upJ) names from ``host``'s side.
    Raises ProvisionError (one line) for any other ``device``."""
    hca, colon, up = device.partition(":")
    shown = repr(device if len(device) <= 40 else device[:40] + "...")
    if not hca or (colon and not up):
        raise ProvisionError(f"--device {shown}: name an HCA's cable, mlx5_R, or its leaf's uplink, mlx5_R:upJ")
    for plane in world["planes"]:
        ca = next((c for c in plane["cas"] if c["host"] == host and c["device"] == hca), None)
        if ca is None:
            continue
        own = next((c for c in plane["cables"] if ca["id"] in (c["a"], c["b"])), None)
        if own is None:
            raise ProvisionError(f"--device {shown}: {host} {hca} has no cable on {plane['name']}")
        if not up:
            return plane, own
        leaf = own["b"] if own["a"] == ca["id"] else own["a"]
        switches = {s["id"] for s in plane["switches"]}
        ups = sorted((c for c in plane["cables"] if leaf in (c["a"], c["b"]) and c["a"] != c["b"]
                      and c["a"] in switches and c["b"] in switches),
                     key=lambda c: c["a_port"] if c["a"] == leaf else c["b_port"])
        digits = up[2:]
        index = int(digits) if up.startswith("up") and digits.isascii() and digits.isdigit() and len(digits) < 5 \
            else -1
        if not ups:
            raise ProvisionError(f"--device {shown}: {host} {hca}'s leaf has no uplinks (a one-leaf fabric)")
        if not 0 <= index < len(ups):
            raise ProvisionError(f"--device {shown}: {up[:40]!r} is not an uplink of {host} {hca}'s leaf "
                                 f"(up0..up{len(ups) - 1})")
        return plane, ups[index]
    raise ProvisionError(f"--device {shown}: {host} has no HCA {hca[:40]!r} on the fabric")


def _edit_cable(cable: dict, how: str, value: str | None) -> None:
    """Apply fault ``how`` to ``cable``. ``degrade``'s value is a width (1x 2x 4x 8x 12x) or a speed
    (SDR ... XDR), default 1x; ProvisionError for any other."""
    from provision.fabric.model import LANE_Gbps, LANES

    if how == "dead":
        cable["state"] = "down"
    elif how == "flap":
        cable["flapping"] = True
    elif (value or "1x").strip().lower() in LANES:
        cable["width"] = (value or "1x").strip().lower()
    elif value and value.strip().upper() in LANE_Gbps:
        cable["speed"] = value.strip().upper()
    else:
        raise ProvisionError(f"--value {value!r}: not an InfiniBand width ({', '.join(LANES)}) or speed "
                             f"({', '.join(LANE_Gbps)})")


def _apply_fabric(world: dict, node_name: str, kind_name: str, device: str, value: str | None) -> str:
    plane, cable = _cable(world, node_name, device)
    _edit_cable(cable, FABRIC_KINDS[kind_name][1], value)
    return f"{plane['name']} cable {cable['a']}[{cable['a_port']}] <-> {cable['b']}[{cable['b_port']}]"


def _write_fabric(inventory_dir: Path, world: dict) -> None:
    text = rack.dump_yaml(world)
    shared = _fabric_path(inventory_dir)
    shared.write_text(text)
    for node in rack.load_nodes(inventory_dir):
        upper = rack.state_dir(inventory_dir) / "nodes" / node.name / "upper/etc/provision-sim/fabric.yaml"
        if node.alive() and not (upper.exists() and upper.samefile(shared)):  # sim up links it (one file)
            (node.root() / "etc/provision-sim/fabric.yaml").write_text(text)


def _inject_fabric(inventory_dir: Path, node_name: str, kind_name: str, device: str | None,
                   value: str | None) -> dict:
    _node(inventory_dir, node_name)
    if not device:
        raise ProvisionError(f"fault {kind_name}: --device is required (mlx5_R or mlx5_R:upJ)")
    world = yaml.safe_load(_fabric_path(inventory_dir).read_text())
    label = _apply_fabric(world, node_name, kind_name, device, value)
    _write_fabric(inventory_dir, world)
    return _record(inventory_dir, node_name, {"kind": kind_name, "device": device, "value": value, "label": label})


def _heal_fabric(inventory_dir: Path, faults: dict) -> None:
    """Restore the healthy fabric, then apply the fabric faults still recorded on other nodes."""
    healthy = rack.state_dir(inventory_dir) / f"{rack.FABRIC_FILE}.healthy"
    if not healthy.is_file():
        return
    world = yaml.safe_load(healthy.read_text())
    for node_name, records in faults.items():
        for r in records:
            if r["kind"] in FABRIC_KINDS:
                _apply_fabric(world, node_name, r["kind"], r["device"], r["value"])
    _write_fabric(inventory_dir, world)


FIRMWARE = re.compile(r"\d{1,3}\.\d{1,4}\.\d{1,5}")  # MAJOR.MINOR.SUBMINOR, as ibstat's "Firmware version: 28.39.1002"


def flash(inventory_dir: Path, node_name: str, version: str) -> int:
    """Flash every HCA of ``node_name`` to firmware ``version``, as ``mlxfwmanager -u`` and a reboot
    would: not a fault (burn-in judges no firmware version), a stack change the history's fingerprint
    must name. It survives ``heal``: the healthy model is flashed too. Returns the number of HCAs.
    Raises ProvisionError for a version not in ConnectX firmware's MAJOR.MINOR.SUBMINOR form (e.g.
    28.40.1000, https://docs.nvidia.com/networking/display/ConnectX7Firmwarev28401000)."""
    if not FIRMWARE.fullmatch(version):
        raise ProvisionError(f"--fw {version[:40]!r}: a firmware version MAJOR.MINOR.SUBMINOR, such as 28.40.1000")
    node = _node(inventory_dir, node_name)
    healthy = rack.state_dir(inventory_dir) / "nodes" / node_name / "hardware.healthy.yaml"
    count = 0
    for path in (node.root() / MODEL, healthy):
        model = yaml.safe_load(path.read_text())
        for hca in model.get("hcas", []):
            hca["fw_ver"] = version
        count = len(model.get("hcas", []))
        path.write_text(yaml.safe_dump(model, sort_keys=False))
    rack.write_kernel_views(node.root(), yaml.safe_load((node.root() / MODEL).read_text()))
    return count


def heal(inventory_dir: Path, node_name: str) -> int:
    """Restore the node's hardware model from rack start, and the fabric cables its faults
    broke; return the number of faults removed."""
    nodes = {n.name: n for n in rack.load_nodes(inventory_dir)}
    if node_name not in nodes:
        raise ProvisionError(f"{inventory_dir}: no simulated node {node_name!r} (nodes: {', '.join(nodes) or 'none'})")
    node = nodes[node_name]
    # a node its BMC powered off is healed on its disk (the upper dir), as it will boot
    root = node.root() if node.alive() else rack.state_dir(inventory_dir) / "nodes" / node_name / "upper"
    healthy = rack.state_dir(inventory_dir) / "nodes" / node_name / "hardware.healthy.yaml"
    shutil.copy(healthy, root / MODEL)
    rack.write_kernel_views(root, yaml.safe_load(healthy.read_text()))
    faults = active(inventory_dir)
    records = faults.pop(node_name, [])
    _active_path(inventory_dir).write_text(json.dumps(faults, indent=1))
    if any(r["kind"] == "node_hung" for r in records) and node.cgroup and node.alive():
        bf.freeze(node.cgroup, False)
    sel = bf.Sel(_sel_dir(inventory_dir), node_name)
    for kind in dict.fromkeys(r["kind"] for r in records):
        sel.remove(kind)
    if any(r["kind"] in FABRIC_KINDS for r in records):
        _heal_fabric(inventory_dir, faults)
    for unit in dict.fromkeys(r["device"] for r in records if r["kind"] in SERVICE_KINDS):
        systemctl(_node(inventory_dir, node_name), "start", unit)
    return len(records)
