"""What the hardware can do at most: a measured figure beyond it is a broken tool or a forged output.

A perftest average of 1.7e308 Gb/s is above its reference's lower bound, and most references have
no upper bound (a faster link is no fault), so without a ceiling it would pass. Each ceiling here is
computed from the host's hardware profile, and named with the figures it came from, so that the
error says which value, which bound and why.

Where each bound comes from: the check declares, per measured metric, the hardware peak that bounds it
(``Check.peaks``: metric -> a name of ``HARDWARE_PEAKS``, whose unit is the metric's; the package's checks write
it as ``PEAKS`` beside ``PARAMS``), and the host's profile gives that peak's figure; no code here names a check
or a metric (those below are the package's declarations), so a site's check is bounded as ours are. The peaks:

- ``hca_port`` (Gb/s; ib_write_bw's and ib_pairs' ``bw_avg_Gbps``, ib_ports' ``rate_Gbps``): twice the
  profile's ``hca.rate_Gbps``, the port's signalling rate (a bidirectional perftest adds both
  directions: twice the line rate is the most any of its figures can be).
- ``gpu_pcie`` (GB/s; nvbandwidth's host to device copies, ``h2d_GBps``): the theoretical peak of one direction
  of the GPU's PCIe link (``gpu.pcie`` gen and width): the PCI-SIG transfer rate per lane (2.5, 5, 8, 16,
  32, 64 GT/s for Gen1-6) times the lanes times the line code (8b/10b to Gen2, 128b/130b from Gen3;
  Gen6 FLIT counted as 1), over 8 bits; only where the GPU's host link is PCIe (trait ``pcie_gpu``): NVLink-C2C
  carries a GB200's copies far faster.
- ``gpu_nvlink_or_pcie`` (GB/s; nvbandwidth's device to device copies, ``d2d_GBps``): the GPU's NVLink,
  ``gpu.nvlink.links`` x ``speed_GBps`` (one direction), or its PCIe peak when it has no NVLink.
- ``nvlink_busbw`` (GB/s; the NCCL bus bandwidth ``busbw_GBps`` of nccl_allreduce, nccl_cluster and
  nvlink_domain): twice the NVLink bandwidth: busbw counts the traffic of a ring (nccl-tests
  doc/PERFORMANCE.md), and a reduction in the switch (NVLink SHARP) at most halves it.
- A metric with no peak, or whose peak the profile lacks (no HCA rate, no NVLink: NCCL may stage through the
  host), if it is a rate with a reference (storage, the stress test's Gflop/s, gpudirect's bandwidth): a hundred
  times the reference's value. Counts and temperatures get no ceiling: 1,500 correctable ECC errors against a limit
  of 10 are a failure of the node, not an implausible tool.

A bandwidth, rate or throughput below zero is impossible too (the units in ``RATES``). Non-finite values are
refused before this (``provision.engine.verdict``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from provision.profiles.hardware import NVLink, PCIe
from provision.results.model import Finding

if TYPE_CHECKING:
    from provision.checks.base import Check
    from provision.profiles import Profile

PCIE_GTps = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}  # PCI-SIG, per lane
REFERENCE_TIMES = 100  # the ceiling of a metric the profile has no hardware peak for, in references
RATES = ("Gb/s", "GB/s", "MiB/s", "Mb/s", "Gflop/s", "GT/s")  # units of figures that cannot be negative


@dataclass(frozen=True)
class Peak:
    """A hardware peak a metric can be bounded by: its ``unit`` (the metric's) and ``bound(profile)``, the
    (figure, its source) the profile gives, None where the profile has no such figure."""

    unit: str
    bound: Callable[[Profile], tuple[float, str] | None]


def _hca_port(profile: Profile) -> tuple[float, str] | None:
    rate = profile.hca.rate_Gbps
    if rate is None or rate <= 0:
        return None
    return 2 * rate, f"twice hca.rate_Gbps {rate:g} Gb/s of profile {profile.name}"


def _gpu_pcie(profile: Profile) -> tuple[float, str] | None:
    return _pcie(profile.gpu.pcie, profile.name) if profile.has("pcie_gpu") else None  # not over NVLink-C2C


def _gpu_nvlink_or_pcie(profile: Profile) -> tuple[float, str] | None:
    return _nvlink(profile.gpu.nvlink, profile.name) or _pcie(profile.gpu.pcie, profile.name)


def _nvlink_busbw(profile: Profile) -> tuple[float, str] | None:
    nvlink = _nvlink(profile.gpu.nvlink, profile.name)
    if nvlink is None:
        return None
    return 2 * nvlink[0], f"twice {nvlink[1]}: NVLink SHARP at most halves a ring's traffic"


# The peaks a check can bound a metric by (``Check.peaks``), each described in the module docstring.
HARDWARE_PEAKS = {
    "hca_port": Peak("Gb/s", _hca_port),
    "gpu_pcie": Peak("GB/s", _gpu_pcie),
    "gpu_nvlink_or_pcie": Peak("GB/s", _gpu_nvlink_or_pcie),
    "nvlink_busbw": Peak("GB/s", _nvlink_busbw),
}


# The peak of a metric whose check declares none, by the name and unit the field gives such a figure (nvbandwidth's
# h2d/d2d copies, nccl-tests' busbw): a site's check that measures one is bounded as the package's are, whether or not
# it says so. By the quantity measured, never by a check's id.
CONVENTIONAL = {("h2d_GBps", "GB/s"): "gpu_pcie", ("d2d_GBps", "GB/s"): "gpu_nvlink_or_pcie",
                ("busbw_GBps", "GB/s"): "nvlink_busbw"}


def misdeclared(peaks: dict[str, str], metrics: dict[str, str]) -> list[str]:
    """What is wrong with a check's ``peaks`` (metric -> peak name) given its ``metrics`` (metric -> unit): a peak
    with no such name, a metric the check does not declare, a unit other than the peak's; [] when nothing."""
    out = []
    for metric, name in peaks.items():
        peak = HARDWARE_PEAKS.get(name)
        if peak is None:
            out.append(f"{metric}: no hardware peak {name!r} (known: {', '.join(HARDWARE_PEAKS)})")
        elif metric not in metrics:
            out.append(f"{metric}: not one of its metrics")
        elif metrics[metric] != peak.unit:
            out.append(f"{metric}: in {metrics[metric] or 'no unit'}, its peak {name} in {peak.unit}")
    return out


def beyond(check: Check, findings: list[Finding], profile: Profile | None) -> list[str]:
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


def ceiling(check: Check, finding: Finding, profile: Profile | None) -> tuple[float, str] | None:
    """(bound, source) for ``finding`` of ``check`` on ``profile``'s hardware: the peak ``check.data.peaks`` names for
    its metric, else for a rate a hundred times its reference; None when nothing bounds it."""
    metric, name = finding.metric, getattr(profile, "name", "?")
    peak = HARDWARE_PEAKS.get(check.data.peaks.get(metric) or CONVENTIONAL.get((metric, finding.unit), ""))
    found = peak.bound(profile) if peak is not None and profile is not None else None
    if found is not None:
        return found
    if finding.unit in RATES and finding.reference is not None and finding.reference.value > 0:
        value = finding.reference.value
        return REFERENCE_TIMES * value, (f"{REFERENCE_TIMES} times the reference {value:g} {finding.unit} of profile "
                                         f"{name} (references.{check.id}.{metric}; no hardware peak for it)")
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
