"""A simulated node's platform facts beside its GPUs and HCAs: BIOS, system and BMC identity, the kernel's boot
settings and loaded modules, and the PCIe bridges above each device (``hwmodel.build`` puts them in the model).

Each value carries its source; where no public capture gives a value (a DGX BIOS or BMC version), the value is
the simulator's own in the real tool's form, and the comment says so. The kernel views these facts stand for
(/proc/cmdline, /proc/modules, cpufreq policies, IOMMU groups) are written by ``kernelviews``.
"""
from __future__ import annotations

import hashlib
import os
import uuid

# dmidecode -t bios: AMI Aptio firmware as server boards report it ("Vendor: American Megatrends International,
# LLC.", public dmidecode pastes). No public DGX/HGX capture gives a version and date: these are the simulator's
# own, in AMI's "MAJOR.MINOR.PATCH" and dmidecode's MM/DD/YYYY forms.
BIOS = {"vendor": "American Megatrends International, LLC.", "version": "1.6.7", "release_date": "06/13/2024",
        "revision": "5.32"}
# dmidecode -t system per profile: (manufacturer, product name, family). NVIDIA's DGX systems name themselves
# "NVIDIA" / "DGXH100" (DGX H100 user guide, "Obtaining the serial number": dmidecode -s system-product-name);
# the other products are the simulator's reading of their board names. Unknown profiles: a generic server.
SYSTEMS = {"h100-sxm5-80g-ndr": ("NVIDIA", "DGXH100", "DGX"), "h200-sxm-141g-ndr": ("NVIDIA", "DGXH200", "DGX"),
           "b200-hgx": ("NVIDIA", "DGXB200", "DGX"), "gb200-nvl72": ("NVIDIA", "P4975", "GB200 NVL"),
           "a100-sxm4-80g-hdr": ("NVIDIA", "DGXA100", "DGX")}
GENERIC_SYSTEM = ("Supermicro", "SYS-421GE-TNRT", "Family")
# ipmitool mc info (IPMI Get Device ID): the BMC of a DGX is AMI MegaRAC (DGX H100 user guide, "BMC"); the
# manufacturer is the IANA enterprise number ipmitool names (5703: NVIDIA Corporation, IANA PEN registry).
# Firmware revision and aux bytes are the simulator's own, in ipmitool's "major.minor" and four-byte forms.
BMC: dict = {"device_id": 32, "device_revision": 1, "firmware_revision": "24.09", "ipmi_version": "2.0",
       "manufacturer_id": 5703, "manufacturer_name": "NVIDIA Corporation", "product_id": 8214,
       "product_name": "Unknown (0x2016)", "aux_firmware_revision": ["0x17", "0x00", "0x00", "0x00"]}
# The platform a BMC manages (provision/sim/bmc/): firmware beyond BIOS and BMC, power supplies, fans. Versions are
# those NVIDIA's `nvfwupd show_version -j` prints for a DGXH100 (NVIDIA/open-nvfwupd,
# firmware_update_guide/docs/appendix/json-options.rst): CPLDMB_0 0.2.1.8, CPLDMID_0 0.2.1.1, HGX_FW_BMC_0 (the
# HGX board's HMC) HGX-22.10-1-rc77, HGX_FW_FPGA_0 2.53, HGX_FW_NVSwitch_0..3 96.10.69.00.01, PSU_0..5
# 0204.0201.0204. The BIOS and BMC versions stay the model's own (``BIOS``, ``BMC``), so that dmidecode, ipmitool
# and Redfish agree.
CPLD = {"CPLDMB_0": "0.2.1.8", "CPLDMID_0": "0.2.1.1"}
HGX_FIRMWARE = {"HGX_FW_BMC_0": "HGX-22.10-1-rc77", "HGX_FW_FPGA_0": "2.53"}
NVSWITCH_FIRMWARE = "96.10.69.00.01"
# NVSwitch chips on the GPU board: an HGX H100/H200 8-GPU board has four (HGX_FW_NVSwitch_0..3 above); the other
# profiles' boards are left without NVSwitch firmware entries (no public capture of their names).
NVSWITCHES = {"h100-sxm5-80g-ndr": 4, "h200-sxm-141g-ndr": 4}
# DGX H100/H200: six power supplies of 3,300 W each (200-240 V), 4+2 redundancy, at least three needed to boot
# (DGX H100/H200 user guide, "Power Specifications", as quoted by https://unanswered.io/guide/nvidia-dgx-power-
# consumption-watts; six PSU_N firmware entries in the nvfwupd capture above). Other profiles reuse the figures.
PSU: dict = {"count": 6, "capacity_W": 3300, "min_needed": 4, "firmware": "0204.0201.0204", "model": "PSU 3300W"}
# Fans: the simulator's own count and speed (no public DGX capture lists the fan sensors); 12 modules at about
# half speed when idle.
FANS: dict = {"count": 12, "speed_RPM": 7800, "max_RPM": 16000}
# Temperature sensors and thresholds: inlet air (DGX H100 user guide: operating temperature 5-30 C; caution and
# critical above it are the simulator's own), and per GPU the H100 SXM5 slowdown at 87 C (the profile's gpu_health
# reference) as UpperCritical and the burn-in gate of 85 C as UpperCaution.
INLET = {"reading_C": 24.0, "upper_caution_C": 30.0, "upper_critical_C": 35.0}
GPU_TEMP = {"upper_caution_C": 85.0, "upper_critical_C": 87.0}

# The cpufreq governor a provisioned GPU node runs (NVIDIA's DGX OS and most GPU cluster guides set
# "performance"; Linux Documentation/admin-guide/pm/cpufreq.rst names the governors).
GOVERNOR = "performance"
# Kernel command line of a healthy node: the IOMMU on for the host but in passthrough for DMA (NVIDIA GPUDirect
# RDMA guide: "iommu=pt" or the IOMMU off, so that peer-to-peer DMA is not remapped; Linux
# Documentation/admin-guide/kernel-parameters.txt: intel_iommu=on, iommu=pt).
IOMMU_PT = "iommu=pt"
# Loaded kernel modules of a provisioned GPU + InfiniBand node, in /proc/modules order (newest first): name ->
# (size in bytes, modules that use it). Sizes from one real host's lsmod (nvidia 104153088, nvidia_uvm 2093056,
# nvidia_peermem 16384, mlx5_ib 561152, ib_uverbs 212992 used by nvidia_peermem,mlx5_ib, ib_core 528384,
# mlx5_core 3153920, a public GPUDirect setup note) and nvidia_modeset 1368064 (linux-rdma/perftest issue 269).
MODULES = {"nvidia_peermem": (16384, ()), "nvidia_uvm": (2093056, ()), "nvidia_modeset": (1368064, ()),
           "nvidia": (104153088, ("nvidia_uvm", "nvidia_modeset", "nvidia_peermem")),
           "mlx5_ib": (561152, ()), "ib_uverbs": (212992, ("nvidia_peermem", "mlx5_ib")),
           "mlx5_core": (3153920, ("mlx5_ib",)), "ib_core": (528384, ("ib_uverbs", "mlx5_ib", "nvidia_peermem"))}
GPU_MODULES = ("nvidia_peermem", "nvidia_uvm", "nvidia_modeset", "nvidia")
HCA_MODULES = ("mlx5_ib", "ib_uverbs", "mlx5_core", "ib_core")
# PCIe bridges of an HGX H100 board (an HGX H100 node's public PCIe bus map: each GPU and its rail's ConnectX-7
# behind a "PEX890xx PCIe Gen 5 Switch" 1000:c030, under a CPU root port 8086:352a of a Xeon Sapphire Rapids).
# lspci names them "Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)" (public lspci pastes); the root port's
# name is lspci's for an id its pci.ids lacks ("Intel Corporation Device 352a").
SWITCH_ID = ("1000", "c030", "Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)")
ROOT_PORT_ID = ("8086", "352a", "Intel Corporation Device 352a (rev 04)")
# ACS flags in lspci's order (pciutils ls-ecaps.c cap_acs). Capabilities: a PEX890xx downstream port implements all;
# an Intel root port all but egress control and direct translated P2P. Control: Linux enables source validation,
# request and completion redirect and upstream forwarding on every port it can (drivers/pci/pci.c
# pci_std_enable_acs), but a GPU board's BIOS disables ACS on the switch ports so that GPU<->HCA peer traffic
# stays in the switch (NVIDIA GPUDirect RDMA guide, "PCI Access Control Services"): root ports keep theirs.
ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd")
_ROOT_CAP = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd")


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()


def cmdline(iommu: str, root_uuid: str, arch: str = "x86_64") -> str:
    """/proc/cmdline for ``iommu`` (off | passthrough | translated): GRUB's BOOT_IMAGE and root, then the IOMMU
    parameters (kernel-parameters.txt: intel_iommu=off, intel_iommu=on with iommu=pt, intel_iommu=on alone: DMA
    translated; on an Arm host (Grace) iommu.passthrough=1 or 0, its SMMU having no intel_iommu switch). The kernel
    release is this machine's (the nodes share its kernel: uname -r in a node)."""
    if arch == "aarch64":
        iommu_params = {"off": "iommu.passthrough=1", "passthrough": "iommu.passthrough=1",
                        "translated": "iommu.passthrough=0"}[iommu]
    else:
        iommu_params = {"off": "intel_iommu=off", "passthrough": f"intel_iommu=on {IOMMU_PT}",
                        "translated": "intel_iommu=on"}[iommu]
    return (f"BOOT_IMAGE=/boot/vmlinuz-{os.uname().release} root=UUID={root_uuid} ro {iommu_params} "
            "quiet")


def node(profile: dict, hostname: str, arch: str = "x86_64") -> dict:
    """The platform facts of a healthy node (module doc); ``arch`` its CPU's (aarch64 on a Grace host)."""
    maker, product, family = SYSTEMS.get(str(profile.get("name")), GENERIC_SYSTEM)
    serial = str(int.from_bytes(_digest(hostname, "system-serial")[:6], "big")).rjust(13, "0")[-13:]
    root_uuid = str(uuid.UUID(bytes=_digest(hostname, "root-fs")[:16]))
    gpus, hcas = (profile.get("gpu") or {}).get("count"), (profile.get("hca") or {}).get("count")
    # nvidia_peermem joins the GPU driver and the RDMA stack: loaded only where both are (NVIDIA GPUDirect RDMA guide)
    modules = [m for m in GPU_MODULES if hcas or m != "nvidia_peermem"] if gpus else []
    modules += list(HCA_MODULES) if hcas else []
    return {
        "bios": dict(BIOS),
        "system": {"manufacturer": maker, "product_name": product, "family": family, "serial_number": serial,
                   "uuid": str(uuid.UUID(bytes=_digest(hostname, "system-uuid")[:16]))},
        "bmc": dict(BMC, aux_firmware_revision=list(BMC["aux_firmware_revision"])),
        "iommu": "passthrough", "root_uuid": root_uuid, "kernel_cmdline": cmdline("passthrough", root_uuid, arch),
        "cpu_governor": GOVERNOR, "modules": modules,
        "platform": platform(profile),
    }


def platform(profile: dict) -> dict:
    """What the node's BMC reports beside the GPUs: CPLD and HGX firmware, NVSwitches, PSUs, fans, inlet sensor."""
    switches = NVSWITCHES.get(str(profile.get("name")), 0)
    return {
        "cpld": dict(CPLD),
        "hgx_firmware": dict(HGX_FIRMWARE) if switches else {},
        "nvswitches": [{"index": i, "firmware": NVSWITCH_FIRMWARE} for i in range(switches)],
        "psus": [{"index": i, "capacity_W": PSU["capacity_W"], "firmware": PSU["firmware"], "model": PSU["model"],
                  "present": True, "health": "OK"} for i in range(PSU["count"])],
        "psu_min_needed": PSU["min_needed"],
        "fans": [{"index": i, "speed_RPM": FANS["speed_RPM"], "max_RPM": FANS["max_RPM"], "health": "OK"}
                 for i in range(FANS["count"])],
        "inlet": dict(INLET),
        "gpu_temp": dict(GPU_TEMP),
    }


def _flags(on: tuple[str, ...]) -> dict:
    return {flag: flag in on for flag in ACS_FLAGS}


def _free_below(bus: int, used: set[int]) -> int:
    """The highest bus number below ``bus`` no device uses yet (marked used)."""
    bus -= 1
    while bus > 0 and bus in used:
        bus -= 1
    used.add(bus)
    return bus


def bridges(gpus: list[tuple], hcas: list[tuple]) -> list[dict]:
    """The PCIe bridges above the devices ``(name, bus, switch, numa)``: per switch a root port, the switch's
    upstream port and one downstream port per device, whose secondary bus is the device's (so that the device
    sits on the bus below its port, as lspci's ``Bus:`` lines show). Bridge buses are taken below the switch's
    lowest device bus, skipping those a device uses."""
    devices = sorted(gpus + hcas, key=lambda d: (d[2], d[1]))
    used = {d[1] for d in devices}
    out = []
    for switch in sorted({d[2] for d in devices}):
        mine = [d for d in devices if d[2] == switch]
        low, high, numa = min(d[1] for d in mine), max(d[1] for d in mine), mine[0][3]
        internal = _free_below(low, used)
        upstream = _free_below(internal, used)
        root_bus = _free_below(upstream, used)
        base = {"switch": switch, "numa_node": numa, "subordinate": high}
        out.append({**base, "role": "root", "bdf": f"0000:{root_bus:02x}:01.0", "id": list(ROOT_PORT_ID),
                    "primary": root_bus, "secondary": upstream, "device_of": None,
                    "acs_cap": _flags(_ROOT_CAP), "acs_ctl": _flags(ACS_REDIRECT)})
        out.append({**base, "role": "upstream", "bdf": f"0000:{upstream:02x}:00.0", "id": list(SWITCH_ID),
                    "primary": upstream, "secondary": internal, "device_of": None, "acs_cap": None, "acs_ctl": None})
        for port, (name, bus, _switch, _numa) in enumerate(mine):
            out.append({**base, "role": "downstream", "bdf": f"0000:{internal:02x}:{port:02x}.0",
                        "id": list(SWITCH_ID), "primary": internal, "secondary": bus, "subordinate": bus,
                        "device_of": name, "acs_cap": _flags(ACS_FLAGS), "acs_ctl": _flags(())})
    return sorted(out, key=lambda b: b["bdf"])
