"""pcie_acs: no PCIe switch port between a GPU or HCA and its root port redirects peer-to-peer traffic (ACS off), so
GPUDirect goes GPU to NIC through the switch.

Tool: ``lspci -D -vvv`` (parser ``provision.parsers.lspci``: every device block with its class, Express port type,
``Bus: primary/secondary/subordinate`` range and ``ACSCtl`` flags; pciutils 3.x). A bridge is upstream of a device
when the device's bus lies in its secondary..subordinate range, in the same PCI domain.

Rule (PCIE_ACS_ENABLED), per PCIe switch port (Express "Upstream Port" or "Downstream Port") above a GPU (3D or VGA
controller, NVIDIA) or an HCA (InfiniBand controller, or a Mellanox Ethernet controller): its ACS control must not
have SrcValid, ReqRedir or CmpltRedir set. NCCL's troubleshooting guide (https://docs.nvidia.com/deeplearning/nccl/
user-guide/docs/troubleshooting.html, "PCI Access Control Services (ACS)"): ACS redirects all PCIe peer-to-peer
traffic through the CPU root complex, a large drop in GPUDirect bandwidth or a hang, and shows as ``ACSCtl:
SrcValid+`` in ``lspci -vvv``; NVIDIA's GPUDirect RDMA documentation asks for ACS off on the switches for the same
reason. Root ports are not judged: their ACS isolates traffic that already crosses the root complex, and IOMMU
groups rely on it (host_settings judges the IOMMU). The GPUs are judged where their host link is PCIe (rule ``gpu``
needs ``pcie_gpu``): a GB200 tray's GPUs reach the Grace CPU and its NICs over NVLink-C2C, with no PCIe switch
between GPU and NIC to check, so there only the HCAs' paths are. A device with no switch port above it (a GPU on
NVLink-C2C, an HCA straight on a root port) passes with ``switch_ports`` 0: nothing on its path can redirect. An
output that shows fewer GPUs or HCAs than the profile (cut short, or a device off the bus) cannot be judged: an error.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.errors import ParseError

REDIRECTS = ("SrcValid", "ReqRedir", "CmpltRedir")
SWITCH_PORTS = ("Upstream Port", "Downstream Port")
FAULT = "PCIE_ACS_ENABLED"


def steps(profile, host) -> list[Step]:
    return [Step("", ["lspci", "-D", "-vvv"], parser="lspci")]


def _kind(block: dict) -> str | None:
    """'GPU', 'HCA' or None for one lspci block."""
    cls, text = block.get("class") or "", block.get("description") or ""
    if cls in ("3D controller", "VGA compatible controller") and "NVIDIA" in text:
        return "GPU"
    if cls == "Infiniband controller" or (cls == "Ethernet controller" and "Mellanox" in text):
        return "HCA"
    return None


def _split(bdf: str) -> tuple[str, int]:
    """(domain, bus) of a ``0000:19:00.0`` address (domain '0000' when lspci printed none)."""
    parts = bdf.split(":")
    return ("0000" if len(parts) == 2 else parts[0]), int(parts[-2], 16)


def upstream(block: dict, bridges: list[dict]) -> list[dict]:
    """The bridges whose secondary..subordinate bus range holds ``block``'s bus, nearest last."""
    domain, bus = _split(block["bdf"])
    found = [b for b in bridges if _split(b["bdf"])[0] == domain
             and b["bus"]["secondary"] <= bus <= b["bus"]["subordinate"]]
    return sorted(found, key=lambda b: b["bus"]["subordinate"] - b["bus"]["secondary"], reverse=True)


def judge(ctx: Context) -> list[Finding]:
    blocks = ctx.parsed[""].get("blocks")
    if blocks is None:
        raise ParseError("lspci printed no device blocks")
    bridges = [b for b in blocks if b.get("bus") and b.get("bdf")]
    judged_gpus = CHECK.applies(ctx.profile, "gpu")  # a GPU on NVLink-C2C reaches the NIC through no PCIe switch
    devices = [(kind, b) for b in blocks if b.get("bdf") and (kind := _kind(b)) and (kind == "HCA" or judged_gpus)]
    if not devices:
        raise ParseError("lspci shows no GPU or HCA")
    gpus, hcas = (sum(1 for kind, _ in devices if kind == want) for want in ("GPU", "HCA"))
    if gpus < (ctx.profile.gpu.count if judged_gpus else 0) or hcas < ctx.profile.hca.count:  # cut short, or one
        raise ParseError(f"lspci shows {gpus} of the profile's {ctx.profile.gpu.count} GPUs and {hcas} of its "
                         f"{ctx.profile.hca.count} HCAs: the others' paths cannot be judged (a device missing from the "
                         "bus is pcie_link's and gpu_health's finding)")
    findings: list[Finding] = []
    judged: dict[str, tuple[dict, list[str]]] = {}
    for kind, block in devices:
        ports = [b for b in upstream(block, bridges) if b.get("port_type") in SWITCH_PORTS]
        if not ports:
            findings.append(Finding(device=f"{kind} {block['bdf']}", metric="switch_ports", value=0, ok=True,
                                    detail="no PCIe switch port between it and its root port"))
        for port in ports:
            judged.setdefault(port["bdf"], (port, []))[1].append(f"{kind} {block['bdf']}")
    for bdf, (port, below) in judged.items():
        ctl = port.get("acs_ctl")
        on = [flag for flag in REDIRECTS if (ctl or {}).get(flag)]
        findings.append(Finding(
            device=f"{port.get('port_type', 'port')} {bdf}", metric="acs_redirect",
            value=" ".join(f"{f}+" for f in on) if on else ("off" if ctl is not None else "no ACS capability"),
            ok=not on, expected="off", fault=FAULT, action=faults.action(FAULT),
            detail=f"above {', '.join(below[:4])}{' ...' if len(below) > 4 else ''}"))
    return findings


CHECK = Check(id="pcie_acs", tool="lspci -vvv", steps=steps, judge=judge, order=37,
              placement=Placement(needs=("gpu",), rules={"gpu": ("pcie_gpu",)}),
              budget=Budget(timeout_s=30, sets=("quick", "deep")),
              data=Data(metrics={}))
