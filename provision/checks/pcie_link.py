"""pcie_link: every GPU and HCA trained its PCIe link at full speed and width.

Tool: ``lspci -D -vv -d 10de:`` (NVIDIA) and ``lspci -D -vv -d 15b3:`` (Mellanox), one step
each, keyed "gpu" and "hca" (pciutils 3.x; parser ``provision.parsers.lspci``, tested on
pciutils 3.7-3.10 ``-vv``/``-vvv`` blocks and bare LnkCap/LnkSta lines). Needs root: without
it lspci prints no Express capability and the parse fails (error, never a pass).
Units: link speed in GT/s per lane, width in lanes.

Rules, per device named by its BDF (``0000:19:00.0``):
- LnkSta speed and width equal the profile's ``gpu.pcie``/``hca.pcie`` gen and width (PCI-SIG
  base specifications: Gen1 2.5, Gen2 5, Gen3 8, Gen4 16, Gen5 32, Gen6 64 GT/s): the board's
  link, not the device's maximum. A status off that is PCIE_DOWNTRAINED. LnkCap at least the
  profile's figures, PCIE_CAPABILITY below them: a device may advertise more than its slot
  gives (the Blackwell GPU's Gen6 in a Gen5 board: max_device_link_gen 6, max_link_gen 5 in
  samples/nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed), which is not "below max".
- The GPUs' links only where they are the GPUs' host link (rule ``gpu`` needs ``pcie_gpu``):
  a GPU on NVLink-C2C to a Grace CPU (GB200/GB300, ``gpu.host_link: c2c``) is not gated on
  PCIe; that profile's HCAs still are.
- The count of GPU functions ("3D controller"/"VGA compatible controller", so NVSwitch
  bridges and audio functions are not counted) equals ``gpu.count``; the count of HCA
  functions of the profile's link layer ("Infiniband controller" or "Ethernet controller")
  equals ``hca.count``, as ib_ports counts one port per function.
Caveat: GPUs that lower their link speed at idle (GeForce/RTX, see
samples/lspci_lnk_4090_riser_gen1) fail the speed rule at idle; H100/A100 SXM stay at
their full generation at idle (samples/smi_q_h100x8_535_183: Current 5 of Max 5).
"""
from __future__ import annotations


from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect
from provision.errors import ProfileError
from provision.profiles.hardware import GPU, GTPS, HCA, PCIe

VENDORS = {"gpu": "10de:", "hca": "15b3:"}
GPU_CLASSES = ("3D controller", "VGA compatible controller")
HCA_CLASSES = {"InfiniBand": "Infiniband controller", "Ethernet": "Ethernet controller"}
MISSING = {"gpu": "GPU_MISSING", "hca": "HCA_MISSING"}  # step -> fault of a count short


def steps(profile, host) -> list[Step]:
    keys = (["gpu"] if CHECK.applies(profile, "gpu") else []) + (["hca"] if CHECK.applies(profile, "hca") else [])
    return [Step(key, ["lspci", "-D", "-vv", "-d", VENDORS[key]], parser="lspci") for key in keys]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    findings = []
    for key, result in parsed.items():
        if key == "gpu" and not CHECK.applies(profile, "gpu"):  # a saved run judged by a C2C profile
            continue
        part = profile.gpu if key == "gpu" else profile.hca
        devices = [d for d in result["devices"] if d["class"] is None or d["class"] in _classes(part)]
        findings.append(expect("node", f"{key}_count", len(devices), part.count, MISSING[key]))
        if part.pcie is None:  # the schema requires it with any HCA; the hca step runs only with HCAs
            raise ProfileError(f"profile {profile.name}: {key}.pcie: missing; pcie_link judges each link by it")
        for n, device in enumerate(devices):
            findings += _device(device["bdf"] or f"{key} #{n} (no address printed)", device, part.pcie)
    return findings


def _classes(part: GPU | HCA) -> tuple[str, ...]:
    """Device classes a step judges: GPUs, or HCAs of the profile's link layer."""
    if isinstance(part, GPU):
        return GPU_CLASSES
    return (HCA_CLASSES.get(part.link_layer or "InfiniBand", HCA_CLASSES["InfiniBand"]),)


def _device(name: str, device: dict, pcie: PCIe) -> list[Finding]:
    speed, width = GTPS[pcie.gen], pcie.width
    return [
        _at_least(name, "lnkcap_speed_GTps", device["lnkcap_speed_GTps"], speed, "GT/s"),
        _at_least(name, "lnkcap_width", device["lnkcap_width"], width, "lanes"),
        expect(name, "lnksta_speed_GTps", device["lnksta_speed_GTps"], speed, "PCIE_DOWNTRAINED", unit="GT/s"),
        expect(name, "lnksta_width", device["lnksta_width"], width, "PCIE_DOWNTRAINED", unit="lanes"),
    ]


def _at_least(name: str, metric: str, value: float | None, want: float, unit: str) -> Finding:
    """The device's capability against the board's link: it must reach the profile's figure, and may exceed it (a
    Gen6-capable B200/B300 in a Gen5 slot advertises 64 GT/s; its link is judged by LnkSta)."""
    return Finding(device=name, metric=metric, value=value, ok=value is not None and value >= want, unit=unit,
                   expected=want, fault="PCIE_CAPABILITY", action=faults.action("PCIE_CAPABILITY"),
                   detail="" if value is None or value <= want else "above the profile's link: allowed")


CHECK = Check(id="pcie_link", tool="lspci", steps=steps, judge=judge, order=40,
              placement=Placement(needs=("gpu",), rules={"gpu": ("pcie_gpu",), "hca": ("hca",)}),
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={"gpu_count": "", "hca_count": "", "lnksta_speed_GTps": "GT/s",
                                 "lnksta_width": "lanes"}))
