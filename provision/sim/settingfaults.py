"""Fault kinds on a node's firmware and settings (registered in ``faults.KINDS``): each edits the hardware model
as the real change would show (a flashed VBIOS or HCA firmware, ACS switched on in a switch port, a module not
loaded, a governor, MIG, a power limit, the IOMMU translating, a low IB MTU, persistence off); the tools and the
kernel views (``kernelviews``) then print it. Each returns the fault's label; bad ``--device``/``--value`` raise
ProvisionError with one line.
"""
from __future__ import annotations

import re

from provision.errors import ProvisionError
from provision.sim.modeldevices import gpu as _gpu, hca as _hca
from provision.sim import nodefacts

# ConnectX firmware MAJOR.MINOR.SUBMINOR, as ibv_devinfo prints fw_ver (faults.FIRMWARE's form).
HCA_FIRMWARE = re.compile(r"\d{1,3}\.\d{1,4}\.\d{1,5}")
# nvidia-smi's VBIOS form: five dot-separated hex pairs (96.00.74.00.01 in smi_q_h100x8_535_183.txt).
VBIOS = re.compile(r"[0-9A-Fa-f]{2}(\.[0-9A-Fa-f]{2}){4}")
# The governors of Linux cpufreq (Documentation/admin-guide/pm/cpufreq.rst, "Generic Scaling Governors").
GOVERNORS = ("performance", "powersave", "userspace", "ondemand", "conservative", "schedutil")
# IB MTUs a port can be set to (rdma-core ibv_devinfo: 256 .. 4096).
MTUS = (256, 512, 1024, 2048, 4096)
# Defaults when --value is not given: an older H100 VBIOS of the same family (form of the H100 capture's), and an
# older ConnectX-7 firmware (28.36.1010, a release NVIDIA published for ConnectX-7).
DEFAULT_VBIOS = "96.00.61.00.01"
DEFAULT_HCA_FW = "28.36.1010"






def vbios_mismatch(model, device, value):
    """The GPU runs another VBIOS than its siblings (--value the version)."""
    gpu = _gpu(model, device)
    version = value or DEFAULT_VBIOS
    if not VBIOS.fullmatch(version):
        raise ProvisionError(f"--value {version[:40]!r}: a VBIOS version such as 96.00.74.00.01")
    gpu["vbios_version"] = version.upper()
    return f"GPU{gpu['index']} VBIOS {gpu['vbios_version']}"


def hca_firmware(model, device, value):
    """One HCA on another firmware than the rest (--value the version)."""
    hca = _hca(model, device)
    version = value or DEFAULT_HCA_FW
    if not HCA_FIRMWARE.fullmatch(version):
        raise ProvisionError(f"--value {version[:40]!r}: a firmware version MAJOR.MINOR.SUBMINOR, such as 28.39.1002")
    hca["fw_ver"] = version
    return f"{device} firmware {version}"


def acs_enabled(model, device, value):
    """ACS redirect switched on in the PCIe switch downstream port above the GPU or HCA: peer traffic then goes up
    to the root complex (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+, what Linux sets where it can)."""
    name = device if device.startswith("mlx5_") else f"gpu{_gpu(model, device)['index']}"
    if device.startswith("mlx5_"):
        _hca(model, device)
    port = next((b for b in model.get("pcie_bridges") or [] if b.get("device_of") == name), None)
    if port is None:
        raise ProvisionError(f"--device {device[:40]!r}: no PCIe switch port above it in this node's model")
    port["acs_ctl"] = {flag: flag in nodefacts.ACS_REDIRECT for flag in nodefacts.ACS_FLAGS}
    return f"{device} switch port {port['bdf']} ACS on"


def peermem_missing(model, device, value):
    """nvidia_peermem is not loaded: GPUDirect RDMA without DMA-BUF cannot register GPU memory."""
    model["modules"] = [m for m in model.get("modules") or [] if m != "nvidia_peermem"]
    return "nvidia_peermem not loaded"


def governor_powersave(model, device, value):
    """The CPU frequency governor is not performance (--value the governor, default powersave)."""
    governor = value or "powersave"
    if governor not in GOVERNORS:
        raise ProvisionError(f"--value {governor[:40]!r}: one of {', '.join(GOVERNORS)}")
    model["cpu_governor"] = governor
    return f"cpufreq governor {governor}"


def mig_enabled(model, device, value):
    """MIG mode on (current and pending) on the GPU."""
    gpu = _gpu(model, device)
    gpu["mig_mode"] = {"current": "Enabled", "pending": "Enabled"}
    return f"GPU{gpu['index']} MIG on"


def power_limit(model, device, value):
    """The GPU's power limit set below its default (--value watts, default 500), as nvidia-smi -pl does."""
    gpu = _gpu(model, device)
    try:
        watts = float(value) if value is not None else 500.0
    except ValueError:
        watts = -1.0
    low, high = float(gpu.get("min_power_limit_W", 0)), float(gpu.get("max_power_limit_W", gpu["power_cap_W"]))
    if not low <= watts <= high:
        raise ProvisionError(f"--value {str(value)[:40]!r}: watts between {low:g} and {high:g}")
    gpu["power_limit_W"] = watts
    return f"GPU{gpu['index']} power limit {watts:g} W"


def iommu_translated(model, device, value):
    """The IOMMU translates DMA (no iommu=pt on the kernel command line): the IOMMU groups' type is DMA-FQ."""
    model["iommu"] = "translated"
    arch = str((model.get("cpu") or {}).get("arch", "x86_64"))
    model["kernel_cmdline"] = nodefacts.cmdline("translated", str(model.get("root_uuid", "")), arch)
    return "IOMMU translated"


def mtu_low(model, device, value):
    """The HCA port's active MTU below 4096 (--value bytes, default 2048), as a subnet manager's low MTU limit."""
    hca = _hca(model, device)
    try:
        mtu = int(value) if value is not None else 2048
    except ValueError:
        mtu = 0
    if mtu not in MTUS:
        raise ProvisionError(f"--value {str(value)[:40]!r}: an IB MTU ({', '.join(map(str, MTUS))})")
    hca["active_mtu"] = mtu
    return f"{device} active MTU {mtu}"


def persistence_off(model, device, value):
    """Persistence mode off on the GPU (nvidia-smi -pm 0)."""
    gpu = _gpu(model, device)
    gpu["persistence_mode"] = "Disabled"
    return f"GPU{gpu['index']} persistence off"
