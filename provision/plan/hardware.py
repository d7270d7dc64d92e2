"""Hardware balance of a profile and its site facts, before any node is bought or touched.

- ``pcie_GBps(gen, width)``: a PCIe link's data rate per direction, GB/s: the transfer rate
  (2.5, 5, 8, 16, 32 GT/s for Gen1-5) x lanes x line-code efficiency (8b/10b for Gen1-2, 128b/130b
  from Gen3) / 8 bits (PCI-SIG, PCI Express Base Specification rates, https://pcisig.com/specifications;
  Gen4 x16 = 31.5 GB/s, Gen5 x16 = 63.0 GB/s). Packet headers take a further 5-15 %, so a NIC
  above this figure is certainly bound by its link.
- ``balance(profile, site)``: findings for each GPU-NIC path (the NIC's line rate against its own
  PCIe link and the GPU's, which GPUDirect RDMA traffic also crosses), NVLink per GPU against
  its share of the NICs, the storage network against a checkpoint target, and rack power
  against a rack budget.

Site facts (inventory variable ``provision_plan``, provision/profiles/site.schema.json):
``checkpoint: {parameters, bytes_per_parameter, seconds, writers}`` and ``rack: {budget_kW,
nodes}``; the storage network is ``provision_storage`` (mode, slaves, slave_speed_Mbps).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from provision.plan import ERROR, INFO, WARNING, Finding

if TYPE_CHECKING:
    from provision.profiles import Profile

PCIE_GTps = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
PCIE_CODE = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130}
PCIE_SOURCE = "PCI-SIG PCI Express Base Specification data rates (https://pcisig.com/specifications)"
# One TCP flow is hashed onto one slave of an 802.3ad or balance-xor bond (kernel bonding.rst, xmit_hash_policy).
BONDING_SOURCE = "https://www.kernel.org/doc/Documentation/networking/bonding.txt"
SINGLE_LINK_MODES = ("active-backup", "broadcast")
# Bytes a mixed-precision Adam checkpoint holds per parameter: 2 (fp16/bf16 weights) + 12 (fp32 master
# weights, momentum, variance): Rajbhandari et al., ZeRO (https://arxiv.org/abs/1910.02054), section 3.1.
ADAM_MIXED_BYTES = 14


def pcie_GBps(gen: int, width: int) -> float | None:
    """Data rate per direction of a Gen ``gen`` x ``width`` link, GB/s; None for an unknown generation."""
    if gen not in PCIE_GTps:
        return None
    return PCIE_GTps[gen] * width * PCIE_CODE[gen] / 8


def balance(profile: Profile, site: dict | None = None) -> list[Finding]:
    """Findings on the profile ``profile`` (a provision.profiles.Profile) with the host's site facts
    ``site`` ({"provision_storage": ..., "provision_plan": ...}; either may be absent)."""
    site = site or {}
    out = _nic_paths(profile) + _nvlink(profile)
    plan = site.get("provision_plan") or {}
    if plan.get("checkpoint"):
        out += checkpoint(plan["checkpoint"], site.get("provision_storage"))
    if plan.get("rack"):
        out += rack_power(profile, plan["rack"])
    return out


def _nic_paths(profile: Profile) -> list[Finding]:
    hca, gpu_link, link = profile.hca, profile.gpu.pcie, profile.hca.pcie
    if not hca.count or link is None or hca.rate_Gbps is None:  # the schema requires both with a count
        return []
    nic = pcie_GBps(link.gen, link.width)
    gpu_GBps = pcie_GBps(gpu_link.gen, gpu_link.width)
    line_GBps = hca.rate_Gbps / 8
    subject = f"{hca.model or 'HCA'} {hca.rate_Gbps:g} Gb/s on PCIe Gen{link.gen} x{link.width}"
    if nic is None:
        return [Finding(WARNING, subject, "unknown PCIe generation: the link is not checked", PCIE_SOURCE)]
    path = min(nic, gpu_GBps) if gpu_GBps else nic
    via = "its PCIe link" if path == nic else f"the GPU's PCIe Gen{gpu_link.gen} x{gpu_link.width}"
    if line_GBps > path:
        return [Finding(WARNING, subject, f"line rate {line_GBps:.1f} GB/s per direction exceeds {via} "
                        f"({path:.1f} GB/s): the link caps it at {path * 8:.0f} Gb/s ({path / line_GBps:.0%}); a "
                        "NIC of the link's class, or a faster link, balances the path", PCIE_SOURCE)]
    return [Finding(INFO, subject, f"line rate {line_GBps:.1f} GB/s per direction fits {via} ({path:.1f} GB/s, "
                    f"{line_GBps / path:.0%} of it)", PCIE_SOURCE)]


def _nvlink(profile: Profile) -> list[Finding]:
    hca, gpu = profile.hca, profile.gpu
    if not hca.count or not gpu.count or hca.rate_Gbps is None:
        return []
    share_GBps = hca.count * hca.rate_Gbps / 8 / gpu.count
    nvlink = gpu.nvlink
    links = nvlink.links if nvlink is not None else 0
    source = "the profile's gpu.nvlink (links x speed_GBps per direction) and hca (count x rate_Gbps)"
    if nvlink is None or not links:
        rate = pcie_GBps(gpu.pcie.gen, gpu.pcie.width)
        where = f"PCIe ({rate:.1f} GB/s per direction)" if rate else "PCIe"
        return [Finding(INFO, f"GPU {gpu.model}", f"no NVLink: GPU-GPU traffic inside the node shares {where} "
                        f"with the NIC traffic ({share_GBps:.1f} GB/s per GPU)", source)]
    per_gpu = links * nvlink.speed_GBps
    subject = f"NVLink{nvlink.version} {links} links per GPU"
    if per_gpu < share_GBps:
        return [Finding(WARNING, subject, f"{per_gpu:.0f} GB/s per GPU is below its NIC share ({share_GBps:.1f} GB/s): "
                        "the node's own links bound collectives", source)]
    return [Finding(INFO, subject, f"{per_gpu:.0f} GB/s per GPU, {per_gpu / share_GBps:.0f}x its NIC share "
                    f"({share_GBps:.1f} GB/s)", source)]


def storage_Gbps(storage: dict) -> tuple[float, float]:
    """(aggregate, one flow) Gb/s of the storage bond ``storage`` (provision_storage)."""
    one = float(storage["slave_speed_Mbps"]) / 1000
    if storage["mode"] in SINGLE_LINK_MODES:
        return one, one
    return one * int(storage["slaves"]), one


def checkpoint_s(parameters: float, bytes_per_parameter: float, rate_Gbps: float, writers: int = 1) -> float:
    """Seconds to write a checkpoint of ``parameters`` x ``bytes_per_parameter`` bytes when each of
    ``writers`` nodes writes its share through ``rate_Gbps`` (line rate: a lower bound on the time)."""
    return parameters * bytes_per_parameter / writers / (rate_Gbps * 1e9 / 8)


def checkpoint(target: dict, storage: dict | None) -> list[Finding]:
    """The storage network against ``target`` ({parameters, bytes_per_parameter, seconds, writers})."""
    subject = f"checkpoint {target['parameters']:.3g} parameters x {target['bytes_per_parameter']} B"
    if not storage:
        return [Finding(WARNING, subject, "no provision_storage site facts: the storage network is not known",
                        "provision/profiles/site.schema.json")]
    aggregate, flow = storage_Gbps(storage)
    writers = int(target.get("writers", 1))
    seconds = checkpoint_s(float(target["parameters"]), float(target["bytes_per_parameter"]), aggregate, writers)
    size_GB = float(target["parameters"]) * float(target["bytes_per_parameter"]) / 1e9
    bond = (f"{storage['slaves']} x {float(storage['slave_speed_Mbps']) / 1000:g} Gb/s {storage['mode']}"
            if storage["slaves"] > 1 else f"one {float(storage['slave_speed_Mbps']) / 1000:g} Gb/s NIC")
    text = (f"{size_GB:.0f} GB through {bond} ({aggregate:g} Gb/s) from {writers} writer(s): at least "
            f"{seconds:.1f} s, allowed {target['seconds']} s")
    if aggregate > flow:
        text += f"; one TCP flow uses one slave ({flow:g} Gb/s), so the writer needs several streams"
    if seconds > float(target["seconds"]):
        return [Finding(WARNING, subject, text + ": training stalls unless the save is asynchronous or the network "
                        "grows", BONDING_SOURCE)]
    return [Finding(INFO, subject, text, BONDING_SOURCE)]


def node_power_W(profile: Profile) -> tuple[float | None, str]:
    """(the node's maximum power in W, its source) from the profile's ``power``; (None, why) without it."""
    if profile.power is not None:
        return profile.power.node_max_W, profile.power.source
    return None, f"profile {profile.name} has no power.node_max_W"


def rack_power(profile: Profile, rack: dict) -> list[Finding]:
    """``rack['nodes']`` nodes of the profile against ``rack['budget_kW']``."""
    gpu = profile.gpu
    node_W, source = node_power_W(profile)
    nodes, budget = int(rack["nodes"]), float(rack["budget_kW"])
    subject = f"rack of {nodes} x {profile.name}"
    if node_W is None:
        gpu_kW = nodes * gpu.count * gpu.power_cap_W / 1000
        severity = ERROR if gpu_kW > budget else WARNING
        return [Finding(severity, subject, f"the GPUs alone draw {gpu_kW:.1f} kW of the {budget:g} kW budget; the "
                        f"rest of the node is unknown ({source})", "the profile's gpu.power_cap_W")]
    kW = nodes * node_W / 1000
    if kW > budget:
        fit = int(budget * 1000 // node_W)
        return [Finding(ERROR, subject, f"{kW:.1f} kW at maximum power exceeds the rack budget of {budget:g} kW: "
                        f"{fit} such nodes fit", source)]
    return [Finding(INFO, subject, f"{kW:.1f} kW at maximum power, within the rack budget of {budget:g} kW", source)]
