"""The kernel's views of a simulated node's settings, written from its hardware model into the node's root and
bind-mounted by node-init.sh over the real paths: /proc/cmdline, /proc/modules (where the kernel has one),
/sys/devices/system/cpu/cpufreq, /sys/kernel/iommu_groups and /sys/module (the nodes share this machine's kernel,
whose own views say nothing of the simulated hardware).

Every file is rewritten in place (same inode; a folder keeps its inode and gains or loses entries), so that a
fault shows at once in a running node, through its bind mounts. cpufreq has one policy per NUMA node, named by
its first CPU (policy0, policy56 on a DGX H100): real intel_pstate hosts have one policy per CPU, all with the same
governor, and one per NUMA node is what a governor check reads the same way.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from provision.sim import nodefacts

# Inside a node's root: the sources of the bind mounts (node-init.sh derives this folder from its PROC_DEVICES
# argument, /var/lib/provision-sim/proc/devices).
VIEWS = "var/lib/provision-sim"
CMDLINE = f"{VIEWS}/proc/cmdline"
MODULES = f"{VIEWS}/proc/modules"
CPUFREQ = f"{VIEWS}/sys/cpufreq"
IOMMU_GROUPS = f"{VIEWS}/sys/iommu_groups"
SYS_MODULE = f"{VIEWS}/sys/module"
# /sys/kernel/iommu_groups/N/type per mode (Documentation/ABI/testing/sysfs-kernel-iommu_groups: "identity" for
# passthrough, "DMA-FQ" for translated DMA with a flush queue, x86's default since Linux 5.15); no groups when off.
IOMMU_TYPES = {"passthrough": "identity", "translated": "DMA-FQ"}
# Taint flags /proc/modules prints for the NVIDIA modules: out-of-tree and unsigned (kernel/module/procfs.c
# m_show prints module_flags; "(OE)" on NVIDIA's open kernel modules built by DKMS).
NVIDIA_TAINT = " (OE)"


def proc_modules(model: dict) -> str:
    """/proc/modules of the model's loaded modules (kernel/module/procfs.c m_show: name, size, use count, users
    each followed by a comma or "-", state, address (0 to readers without kallsyms rights), taints)."""
    loaded = list(model.get("modules") or [])
    lines = []
    for name in loaded:
        size, users = nodefacts.MODULES.get(name, (16384, ()))
        present = [u for u in users if u in loaded]
        taint = NVIDIA_TAINT if name.startswith("nvidia") else ""
        used = "".join(f"{u}," for u in present) or "-"
        lines.append(f"{name} {size} {len(present)} {used} Live 0x0000000000000000{taint}\n")
    return "".join(lines)


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` in place (truncate and write: the inode a bind mount holds stays)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _policies(model: dict) -> dict[str, str]:
    """cpufreq policy folder name -> governor: one policy per NUMA node (module doc)."""
    cpu = model.get("cpu") or {}
    per, nodes = int(cpu.get("cores_per_numa", 1)), int(cpu.get("numa_nodes", 1))
    return {f"policy{n * per}": str(model.get("cpu_governor", nodefacts.GOVERNOR)) for n in range(nodes)}


def _iommu_devices(model: dict) -> list[str]:
    """The PCI functions that get an IOMMU group each: bridges, GPUs and HCAs, in bus order."""
    bdfs = [b["bdf"] for b in model.get("pcie_bridges") or []]
    bdfs += ["0000:" + g["bus_id"].split(":", 1)[1].lower() for g in model.get("gpus") or []
             if g.get("present", True) and not g.get("fallen_off_bus")]
    bdfs += [h["pcie"]["bdf"] for h in model.get("hcas") or []]
    return sorted(bdfs)


def _write_groups(folder: Path, model: dict) -> None:
    """/sys/kernel/iommu_groups: N/type and N/devices/<bdf> (a link to the device, as sysfs makes it) per device;
    empty with the IOMMU off."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = IOMMU_TYPES.get(str(model.get("iommu", "passthrough")))
    groups = {} if kind is None else {str(n): bdf for n, bdf in enumerate(_iommu_devices(model))}
    for old in folder.iterdir():
        if old.name not in groups:
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    for number, bdf in groups.items():
        group = folder / number
        _write(group / "type", f"{kind}\n")
        devices = group / "devices"
        devices.mkdir(exist_ok=True)
        for link in devices.iterdir():
            if link.name != bdf:
                link.unlink()
        if not (devices / bdf).is_symlink():
            os.symlink(f"../../../../devices/pci{bdf[:4]}:{bdf[5:7]}/{bdf}", devices / bdf)


def _write_sys_module(folder: Path, model: dict) -> None:
    """/sys/module/<name>/initstate "live" per loaded module (kernel ABI sysfs-module: initstate is present for a
    loadable module once loaded: "live", "coming" or "going"); a module unloaded loses its folder."""
    folder.mkdir(parents=True, exist_ok=True)
    loaded = {str(m) for m in model.get("modules") or []}
    for old in folder.iterdir():
        if old.name not in loaded:
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    for name in sorted(loaded):
        _write(folder / name / "initstate", "live\n")


def write(root: Path, model: dict) -> None:
    """Write the node's kernel views under ``root`` (a node's upper dir before it starts, or its root through
    /proc/PID/root while it runs)."""
    _write(root / CMDLINE, str(model.get("kernel_cmdline", "")) + "\n")
    _write(root / MODULES, proc_modules(model))
    cpufreq = root / CPUFREQ
    for policy, governor in _policies(model).items():
        _write(cpufreq / policy / "scaling_governor", governor + "\n")
    _write_groups(root / IOMMU_GROUPS, model)
    _write_sys_module(root / SYS_MODULE, model)
