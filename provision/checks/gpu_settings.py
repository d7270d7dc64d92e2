"""gpu_settings: every GPU set up as a training node needs it: persistence mode on, MIG off (unless the profile runs
MIG), ECC on, the power limit at the board's and the application clocks at the GPU's defaults.

Tool: ``nvidia-smi -q -x`` (parser ``nvidia-smi-qx``: persistence_mode, mig_mode_current, ecc_mode_current,
power_limit_W, applications_clocks_MHz and default_applications_clocks_MHz; tested on the driver 580 B200 and GB200
XML captures). Rules, each a fact per GPU (device ``GPU3 00000000:5D:00.0``):

- ``persistence_mode`` Enabled (GPU_PERSISTENCE_OFF): without it the driver tears the GPU down when its last client
  exits and sets it up again for the next, seconds per job, and settings made with nvidia-smi are lost (NVIDIA
  Driver Persistence, https://docs.nvidia.com/deploy/driver-persistence/; DGX OS runs nvidia-persistenced);
- ``mig_mode`` Disabled, or Enabled where the profile sets ``gpu.mig`` (GPU_MIG_MODE): a MIG GPU shows NCCL and CUDA
  a slice of itself (MIG user guide, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/);
- ``ecc_mode`` Enabled on GPUs whose memory counts errors (needs ``ecc``; GPU_ECC_OFF): nvidia-smi -e, a reboot to
  apply (https://docs.nvidia.com/deploy/nvidia-smi/);
- ``power_limit_W`` at the profile's ``gpu.power_cap_W`` (GPU_POWER_LIMIT): a lowered limit (nvidia-smi -pl) caps
  clocks under load, so the node runs slow while every test passes;
- ``applications_clocks_MHz`` (graphics and memory) at the GPU's own default application clocks, which nvidia-smi
  prints beside them (GPU_CLOCKS_NOT_DEFAULT): clocks set lower with nvidia-smi -ac stay until -rac or a reboot.
A value the GPU does not report (N/A) is not judged for that rule; a GPU reporting none of them is a parse error.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect
from provision.errors import ParseError


def steps(profile, host) -> list[Step]:
    return [Step("", ["nvidia-smi", "-q", "-x"], parser="nvidia-smi-qx")]


def judge(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    findings: list[Finding] = []
    for i, gpu in enumerate(ctx.parsed[""]["gpus"]):
        if gpu.get("lost"):
            continue  # gpu_health names a lost GPU; nothing of it can be read here
        device = f"GPU{i} {gpu.get('bus_id')}"
        before = len(findings)
        if gpu.get("persistence_mode") is not None:
            findings.append(expect(device, "persistence_mode", gpu["persistence_mode"], "Enabled",
                                   "GPU_PERSISTENCE_OFF"))
        if gpu.get("mig_mode_current") is not None:
            findings.append(expect(device, "mig_mode", gpu["mig_mode_current"],
                                   "Enabled" if profile.gpu.mig else "Disabled", "GPU_MIG_MODE"))
        if gpu.get("ecc_mode_current") is not None and profile.has("ecc"):
            findings.append(expect(device, "ecc_mode", gpu["ecc_mode_current"], "Enabled", "GPU_ECC_OFF"))
        if gpu.get("power_limit_W") is not None:
            findings.append(expect(device, "power_limit_W", round(float(gpu["power_limit_W"])),
                                   round(float(profile.gpu.power_cap_W)), "GPU_POWER_LIMIT", unit="W"))
        clocks, default = gpu.get("applications_clocks_MHz"), gpu.get("default_applications_clocks_MHz")
        if clocks and default:
            findings += [expect(device, f"applications_clocks_{kind}_MHz", clocks.get(kind), default.get(kind),
                                "GPU_CLOCKS_NOT_DEFAULT", unit="MHz") for kind in ("graphics", "memory")
                         if default.get(kind) is not None]
        if len(findings) == before:
            raise ParseError(f"{device}: nvidia-smi printed none of the settings this check reads")
    return findings


CHECK = Check(id="gpu_settings", tool="nvidia-smi -q -x", steps=steps, judge=judge, order=36,
              placement=Placement(needs=("gpu",)),
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={}))
