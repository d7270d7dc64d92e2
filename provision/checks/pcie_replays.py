"""pcie_replays: no GPU's PCIe link resends more packets than a link within the PCIe bit error rate does.

Tools: ``nvidia-smi -q -x`` (parser ``nvidia-smi-qx``; ``<pci><replay_counter>``, NVML's
nvmlDeviceGetPcieReplayCounter: the TLPs the GPU's link resent after a CRC error or a lost
acknowledgement, counted since the driver loaded or the GPU was reset, and ``<replay_rollover_counter>``,
the times one TLP failed its replays and the link retrained) and ``grep -H . /proc/uptime`` (parser
``grep-h``; the seconds since the host booted, proc(5)). Parser tested on the real driver-580 B200 and
GB200 and driver-515 T4 captures of tests/data/samples and on ``nvidia-smi -q`` text of driver 535.
Units: replays per 10^12 bit-times of the link's capacity (replays/Tb).

Judges, per GPU named by index and bus id: its replays over the capacity its link offered since the host
booted (seconds up x the GT/s of the link's maximum generation x its current width) against
``references.pcie_replays.replays_per_Tb``, the check's default row: 1 replay per 10^12 bits, the PCIe bit
error rate of 10^-12 from which DCGM's health watch derives its replay-rate limit (DCGM_FR_PCI_REPLAY_RATE:
10^-12 x GT/s x 10^9 x 60 x lanes replays a minute, rounded up; modules/health/DcgmHealthWatch.cpp,
GetExpectedPcieReplayRate, NVIDIA/DCGM 4.6.0, 72fa3fe). DCGM rates the last minute; a burn-in reads the
counter once, so the rate here is the average since boot, and a low one: the counter starts when the driver
loads (later than boot, or again after a GPU reset) and an idle link carries less than its capacity. So a
rate above the limit is a link that erred more than the specification allows, however long the node has
been up; a burst long ago on a node up for weeks can average below it (DCGM's health watch, watching all
the time, is what catches that). The width is the link's current one, as DCGM's formula takes it
(DCGM_FI_DEV_PCIE_LINK_WIDTH, the current width): a link that trained down to x8 carries half the bits, so half
the replays are allowed, and a trained-down link is where replays come from. The generation is the link's
maximum, not its current one: a GPU's link drops to Gen1 while idle to save power (nvidia-smi shows it so at
rest), which says nothing of the rate it ran its traffic at, and would make the limit up to 32 times too
strict for a node read at rest. The real H100 node of samples/smi_q_h100x8_535_183 (43-120 replays per GPU
after at least 4 h 44 min) passes at any uptime above 4 minutes. Rollovers are reported beside the rate, not
judged: no public limit for them was found. Also judged: the GPU count (GPU_MISSING) and GPUs nvidia-smi
reports lost (GPU_LOST): their counters cannot be read.
"""
from __future__ import annotations

import dataclasses
import math

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError
from provision.profiles.hardware import GTPS

CHECK_ID = "pcie_replays"
METRIC = "replays_per_Tb"
UNIT = "replays/Tb"
UPTIME = "/proc/uptime"
BITS_PER_TB = 1e12

# The limit on every GPU: per 10^12 bit-times of the link's capacity (module doc).
REFERENCES: dict[str, dict] = {METRIC: {
    "value": 1.0, "lower": None, "upper": 0.0, "unit": UNIT, "params": {},
    "source": (
        "the PCIe bit error rate of 10^-12 (PCI Express Base Specification), from which DCGM's health watch "
        "derives its replay-rate limit, ceil(10^-12 x GT/s x 10^9 x 60 x lanes) replays a minute "
        "(DCGM_FR_PCI_REPLAY_RATE; https://github.com/NVIDIA/DCGM/blob/master/modules/health/DcgmHealthWatch.cpp, "
        "GetExpectedPcieReplayRate, DCGM 4.6.0 72fa3fe): here averaged over the time since boot, not the last minute"),
}}


def steps(profile, host) -> list[Step]:
    return [Step("smi", ["nvidia-smi", "-q", "-x"], parser="nvidia-smi-qx"),
            Step("uptime", ["grep", "-H", ".", UPTIME], parser="grep-h")]


def judge(ctx: Context) -> list[Finding]:
    smi, profile = ctx.parsed["smi"], ctx.profile
    ref = profile.required_reference(CHECK_ID, METRIC)
    up_s = uptime_s(ctx.parsed["uptime"])
    findings = [expect("node", "gpu_count", len(smi["gpus"]), profile.gpu.count, "GPU_MISSING")]
    for index, gpu in enumerate(smi["gpus"]):
        device = f"GPU{index} {gpu['bus_id']}"
        if gpu.get("lost"):
            findings.append(Finding(device=device, metric="lost", value=True, ok=False, expected=False,
                                    fault="GPU_LOST", action=faults.action("GPU_LOST"),
                                    detail="nvidia-smi cannot read it: its replay counter is unknown"))
            continue
        findings.append(_replays(device, gpu, up_s, ref))
    return findings


def uptime_s(grep: dict) -> float:
    """The seconds since boot of ``grep -H . /proc/uptime`` (its first field, proc(5)). Raises ParseError."""
    line = grep["files"].get(UPTIME)
    if line is None:
        raise ParseError(f"grep printed no {UPTIME} line" + (f" ({grep['errors'][0]})" if grep["errors"] else ""))
    try:
        seconds = float(line.split()[0])
    except (IndexError, ValueError):
        raise ParseError(f"{UPTIME}: {line[:40]!r} is not 'seconds idle-seconds'") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ParseError(f"{UPTIME}: {seconds:g} s since boot")
    return seconds


def _replays(device: str, gpu: dict, up_s: float, ref) -> Finding:
    """One GPU's replays per 10^12 bit-times of its link since boot, judged against ``ref``."""
    replays, gen, width = gpu.get("pcie_replays"), gpu.get("pcie_gen_max"), gpu.get("width_current")
    if not isinstance(replays, int):
        raise ParseError(f"{device}: replay_counter is {replays!r}, not a count")
    if gen not in GTPS or not isinstance(width, int) or width <= 0:
        raise ParseError(f"{device}: link generation {gen!r}, width {width!r}: its capacity is unknown")
    bits_per_s = GTPS[gen] * 1e9 * width
    finding = measured(device, METRIC, replays / (up_s * bits_per_s / BITS_PER_TB), ref, "PCIE_REPLAYS_HIGH")
    high = ref.bounds()[1]
    allowed = "" if high is None else f", the reference allows {high * bits_per_s / BITS_PER_TB * 60:.1f}/min"
    rollovers = gpu.get("pcie_replay_rollovers")
    return dataclasses.replace(finding, detail=(
        f"{replays} replays ({'-' if rollovers is None else rollovers} rollovers) in {up_s / 3600:.1f} h since boot "
        f"at Gen{gen} x{width}: {replays / up_s * 60:.2f}/min{allowed}"))


# The counters are read as they are: no test parameters.
PARAMS: dict[str, dict] = {METRIC: {"properties": {}}}

CHECK = Check(id=CHECK_ID, tool="nvidia-smi -q -x + /proc/uptime", steps=steps, judge=judge, order=27,
              placement=Placement(needs=("gpu",)),
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={"gpu_count": "", METRIC: UNIT}, params=PARAMS, references=REFERENCES))
