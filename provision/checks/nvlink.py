"""nvlink: every GPU has all its NVLink links up at the profile's per-link speed.

Tool: ``nvidia-smi nvlink -s`` (parser ``provision.parsers.smi_nvlink``, tested on the
"GPU n: <name> (UUID: ...)" + "Link k: 25.781 GB/s | <inactive>" layout of drivers 418-550,
including hand-elided copies). Units: GB/s per link per direction, as nvidia-smi prints it.

Rules, per GPU (named "GPU<index>"; the tool prints no bus id):
- it lists ``gpu.nvlink.links`` links and all of them are active (NVLINK_DOWN otherwise);
- every active link runs at ``gpu.nvlink.speed_GBps`` within 0.1% (NVLINK_SPEED otherwise).
  Per-link speeds: NVLink2 (V100) 25.781, NVLink3 (A100) 25.0, NVLink4 (H100) 26.562 GB/s as
  nvidia-smi reports them (profile comments; samples/nvlink_status_v100_two_inactive_elided); NVLink5
  (B200, GB200) 18 links at 53.125 GB/s (b200-hgx and gb200-nvl72's comments; tests/data/nvlink's b200/gb200
  cases, simulated captures: no real Blackwell `nvlink -s` capture was at hand).
- the number of GPUs listed equals ``gpu.count`` (not judged for hand-elided text).
A profile without NVLink (``gpu.nvlink`` missing or ``links: 0``) is skipped by the engine
(``needs=("gpu", "nvlink")``).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect
from provision.profiles.hardware import NVLink

SPEED_TOLERANCE = 0.001  # nvidia-smi prints 3 decimals; the profile copies that figure


def nvlink_of(profile) -> NVLink | None:
    """The profile's ``gpu.nvlink``, None when the GPUs have no NVLink."""
    nv = profile.gpu.nvlink
    return nv if nv is not None and nv.links else None


def steps(profile, host) -> list[Step]:
    return [Step("", ["nvidia-smi", "nvlink", "-s"], parser="nvidia-smi-nvlink")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    nv = nvlink_of(profile) or NVLink(0, 0, 0.0)
    status = parsed[""]
    findings = []
    if not status["elided"]:
        findings.append(expect("node", "gpu_count", len(status["gpus"]), profile.gpu.count, "GPU_MISSING"))
    for gpu in status["gpus"]:
        findings += _gpu(f"GPU{gpu['index']}", gpu["links"], nv)
    return findings


def _gpu(device: str, links: list[dict], nv: NVLink) -> list[Finding]:
    want, speed = nv.links, nv.speed_GBps
    down = [link["link"] for link in links if not link["active"]]
    active = len(links) - len(down)
    notes = ([f"inactive links {','.join(map(str, down))}"] if down else []) + \
        ([f"{len(links)} links listed"] if len(links) != want else [])
    findings = [Finding(device=device, metric="nvlink_active_links", value=active, expected=want,
                        ok=active == want and len(links) == want, fault="NVLINK_DOWN",
                        action=faults.action("NVLINK_DOWN"), detail="; ".join(notes))]
    for link in links:
        value = link["speed_GBps"]
        if link["active"] and (value is None or abs(value - speed) > speed * SPEED_TOLERANCE):
            findings.append(Finding(device=f"{device} link {link['link']}", metric="speed_GBps", value=value,
                                    ok=False, unit="GB/s", expected=speed, fault="NVLINK_SPEED",
                                    action=faults.action("NVLINK_SPEED")))
    return findings


CHECK = Check(id="nvlink", tool="nvidia-smi nvlink -s", steps=steps, judge=judge, order=44,
              placement=Placement(needs=("gpu", "nvlink")),
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={"gpu_count": "", "nvlink_active_links": ""}))
