"""What the hardware can do at most: a measured figure beyond it is a broken tool or a forged output.

A perftest average of 1.7e308 Gb/s is above its reference's lower bound, and most references have
no upper bound (a faster link is no fault), so without a ceiling it would pass. Each ceiling here is
computed from the host's hardware profile, and named with the figures it came from, so that the
error says which value, which bound and why:

- InfiniBand (``bw_avg_Gbps`` of ib_write_bw and ib_pairs, ``rate_Gbps`` of ib_ports): twice the
  profile's ``hca.rate_Gbps``, the port's signalling rate (a bidirectional perftest adds both
  directions: twice the line rate is the most any of its figures can be).
- Host to device copies (nvbandwidth ``h2d_GBps``): the theoretical peak of one direction of the
  GPU's PCIe link (``gpu.pcie`` gen and width): the PCI-SIG transfer rate per lane (2.5, 5, 8, 16,
  32, 64 GT/s for Gen1-6) times the lanes times the line code (8b/10b to Gen2, 128b/130b from Gen3;
  Gen6 FLIT counted as 1), over 8 bits.
- Device to device copies (``d2d_GBps``): the GPU's NVLink, ``gpu.nvlink.links`` x ``speed_GBps`` (one
  direction), or its PCIe peak when it has no NVLink.
- NCCL bus bandwidth (``busbw_GBps``) on NVLink: twice the NVLink bandwidth: busbw counts the traffic of
  a ring (nccl-tests doc/PERFORMANCE.md), and a reduction in the switch (NVLink SHARP) at most halves it;
  without NVLink, the bound of a metric with no hardware peak (below).
- Any other measured rate with a reference (storage, the stress test's Gflop/s): a hundred times the
  reference's value, the profile having no hardware peak for it. Counts and temperatures get no ceiling:
  1,500 correctable ECC errors against a limit of 10 are a failure of the node, not an implausible tool.

A bandwidth, rate or throughput below zero is impossible too. Non-finite values are refused before
this (``provision.engine.verdict``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from provision.profiles.hardware import NVLink, PCIe
from provision.results.model import Finding

if TYPE_CHECKING:
    from provision.profiles import Profile

PCIE_GTps = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}  # PCI-SIG, per lane
REFERENCE_TIMES = 100  # the ceiling of a metric the profile has no hardware peak for, in references
RATES = ("Gb/s", "GB/s", "MiB/s", "Mb/s", "Gflop/s", "GT/s")  # units of figures that cannot be negative
IB = {("ib_write_bw", "bw_avg_Gbps"), ("ib_pairs", "bw_avg_Gbps"), ("ib_ports", "rate_Gbps")}


def beyond(check: str, findings: list[Finding], profile: Profile | None) -> list[str]:
    """One line per finding whose measured value the hardware of ``profile`` cannot reach (value, bound,
    its source); [] when every one is plausible."""
    out = []
    for f in findings:
        if isinstance(f.value, bool) or not isinstance(f.value, (int, float)):
            continue
        unit = f" {f.unit}" if f.unit else ""
        if f.unit in RATES and f.value < 0:
            out.append(f"{f.device}: {f.metric} = {f.value:g}{unit}, below 0{unit}: no {f.unit} figure is negative")
            continue
        found = ceiling(check, f, profile)
        if found is not None and f.value > found[0]:
            out.append(f"{f.device}: {f.metric} = {f.value:g}{unit}, above {found[0]:g}{unit}, the most the "
                       f"hardware can do ({found[1]})")
    return out


def ceiling(check: str, finding: Finding, profile: Profile | None) -> tuple[float, str] | None:
    """(bound, source) for ``finding`` of ``check`` on ``profile``'s hardware; None when nothing bounds it."""
    metric, name = finding.metric, getattr(profile, "name", "?")
    rate = profile.hca.rate_Gbps if profile is not None else None
    if (check, metric) in IB and rate is not None and rate > 0:
        return 2 * rate, f"twice hca.rate_Gbps {rate:g} Gb/s of profile {name}"
    pcie = _pcie(profile.gpu.pcie, name) if profile is not None else None
    nvlink = _nvlink(profile.gpu.nvlink, name) if profile is not None else None
    if metric == "h2d_GBps" and pcie and profile is not None and profile.has("pcie_gpu"):  # not over NVLink-C2C
        return pcie
    path = nvlink or pcie
    if metric == "d2d_GBps" and path:
        return path
    if metric == "busbw_GBps" and nvlink:  # without NVLink: the reference's bound below (NCCL may stage on the host)
        return 2 * nvlink[0], f"twice {nvlink[1]}: NVLink SHARP at most halves a ring's traffic"
    if finding.unit in RATES and finding.reference is not None and finding.reference.value > 0:
        value = finding.reference.value
        return REFERENCE_TIMES * value, (f"{REFERENCE_TIMES} times the reference {value:g} {finding.unit} of profile "
                                         f"{name} (references.{check}.{metric}; no hardware peak for it)")
    return None


def _pcie(pcie: PCIe, name: str) -> tuple[float, str] | None:
    """One direction's theoretical peak of a PCIe link, GB/s, and its source."""
    if pcie.gen not in PCIE_GTps or pcie.width <= 0:
        return None
    gen, width = pcie.gen, pcie.width
    code = 0.8 if gen <= 2 else (128 / 130 if gen <= 5 else 1.0)
    peak = PCIE_GTps[gen] * width * code / 8
    return peak, f"PCIe Gen{gen} x{width} peak per direction {peak:.1f} GB/s (gpu.pcie of profile {name})"


def _nvlink(nvlink: NVLink | None, name: str) -> tuple[float, str] | None:
    """A GPU's NVLink bandwidth in one direction, GB/s, and its source; None without NVLink."""
    if nvlink is None or nvlink.links <= 0 or nvlink.speed_GBps <= 0:
        return None
    links, speed = nvlink.links, nvlink.speed_GBps
    return links * speed, (f"NVLink {links} links x {speed:g} GB/s = {links * speed:.1f} GB/s per direction "
                           f"(gpu.nvlink of profile {name})")

