"""host_settings: the host set up for GPUDirect and full speed: the IOMMU off or in passthrough, the CPU frequency
governor performance, nvidia-peermem loaded where the site's NCCL registers GPU memory through it, every InfiniBand
port at MTU 4096.

Tools (one step each, argv lists): ``cat /proc/cmdline`` (``cmdline``: recorded, named in the IOMMU finding),
``find /sys/kernel/iommu_groups -mindepth 2 -maxdepth 2 -name type -exec grep -H . {} +`` (``iommu``: each IOMMU
group's default domain type, kernel ABI sysfs-kernel-iommu_groups), ``grep -r -H --include=scaling_governor .
/sys/devices/system/cpu/cpufreq`` (``governor``: each cpufreq policy's governor, kernel cpufreq documentation),
``grep -r -H --include=initstate . /sys/module`` (``modules``: each loaded module's initstate, kernel ABI
sysfs-module; /proc/modules says the same, but a kernel built without module support has none) and ``ibv_devinfo``
(``mtu``: each port's active_mtu).

Rules:
- IOMMU (IOMMU_TRANSLATED): no IOMMU group (the IOMMU off) or every group of type ``identity`` (passthrough,
  ``iommu=pt``) passes; a group of type ``DMA`` or ``DMA-FQ`` translates every DMA, including GPUDirect's
  peer-to-peer traffic, which then goes through the root complex or fails. NCCL's troubleshooting guide ("IOMMU"
  under "PCI Access Control Services", https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)
  asks for the IOMMU off or in passthrough on bare metal.
- governor (CPU_GOVERNOR): every cpufreq policy ``performance``; a power-saving governor slows the CPU threads that
  feed NCCL and the data loaders (NVIDIA networking's performance tuning guide for ConnectX adapters: "set the CPU
  scaling governor to performance"; DGX OS ships it). A node with no cpufreq policy runs no frequency-scaling driver:
  the BIOS power profile owns the clocks, there is no governor to be wrong, and the fact says so (the BIOS profile
  itself is not readable here). A read that fails otherwise (permission denied) is an error.
- nvidia-peermem (GPUDIRECT_PEERMEM_MISSING): loaded, where the profile's ``gpudirect`` path is ``peermem`` (NVIDIA
  GPUDirect RDMA documentation: the nvidia-peermem module gives the HCA driver access to GPU memory; without it
  NCCL's GDR is off). With the dma-buf path no module is needed; the gpudirect check proves that path by using it.
- IB MTU (IB_MTU_LOW): each InfiniBand port's active_mtu 4096, the largest the InfiniBand architecture defines and
  the one NDR/HDR fabrics run (NVIDIA MLNX_OFED/DOCA documentation, OpenSM partitions.conf ``mtu=5``); an Ethernet
  (RoCE) port's MTU follows its netdev and is not judged here.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Step
from provision.checks.rules import expect
from provision.errors import ParseError

GOVERNOR = "performance"
PASSTHROUGH = "identity"
IB_MTU = 4096
CPUFREQ, IOMMU_GROUPS, MODULES = "/sys/devices/system/cpu/cpufreq", "/sys/kernel/iommu_groups", "/sys/module"


def steps(profile, host) -> list[Step]:
    # find and grep exit 1 when there is nothing to print (no IOMMU group, no cpufreq policy, no loaded module) and
    # complain of a missing folder on standard error: their texts, not their exit status, are judged.
    out = [Step("cmdline", ["cat", "/proc/cmdline"], parser="proc-cmdline"),
           Step("iommu", ["find", IOMMU_GROUPS, "-mindepth", "2", "-maxdepth", "2", "-name", "type",
                          "-exec", "grep", "-H", ".", "{}", "+"], parser="grep-h", exit_judged=True),
           Step("governor", ["grep", "-r", "-H", "--include=scaling_governor", ".", CPUFREQ],
                parser="grep-h", exit_judged=True),
           Step("modules", ["grep", "-r", "-H", "--include=initstate", ".", MODULES], parser="grep-h",
                exit_judged=True)]
    if profile.has("hca"):
        out.append(Step("mtu", ["ibv_devinfo"], parser="ibv_devinfo"))
    return out


def _iommu(types: dict[str, str], cmdline: dict) -> Finding:
    translated = sorted((path.split("/")[-2] for path, kind in types.items() if kind != PASSTHROUGH),
                        key=lambda group: (len(group), group))  # numbers in number order
    shown = " ".join(f"{k}={v}" if v is not None else k for k, v in cmdline.get("params", [])
                     if k.split(".")[0] in ("iommu", "intel_iommu", "amd_iommu")) or "no iommu option"
    value = "off" if not types else ("passthrough" if not translated else "translated")
    fault = "IOMMU_TRANSLATED"
    return Finding(device="node", metric="iommu", value=value, ok=not translated, expected="off or passthrough",
                   fault=fault, action=faults.action(fault),
                   detail=(f"{len(translated)} of {len(types)} IOMMU groups translate DMA (groups "
                           f"{', '.join(translated[:6])}); kernel command line: {shown}") if translated
                   else f"{len(types)} IOMMU groups; kernel command line: {shown}")


def _read(parsed: dict, folder: str) -> dict[str, str]:
    """A sysfs read's files; ParseError for any complaint but ``folder`` itself missing (which reads as none): a
    missing program (find's ``-exec grep``) or a refused read is never taken for an empty folder."""
    odd = [e for e in parsed.get("errors", []) if not (e.endswith("No such file or directory")
                                                        and e.split(": ")[1].strip("'\"") == folder)]
    if odd:
        raise ParseError(f"{folder}: {odd[0][:200]}")
    return parsed["files"]


def _governors(parsed: dict) -> list[Finding]:
    governors = _read(parsed, CPUFREQ)
    if not governors:  # no frequency-scaling driver: the platform firmware (BIOS power profile) owns the clocks
        return [Finding(device="node", metric="scaling_governor", value="no cpufreq policy", ok=True,
                        detail="the kernel runs no cpufreq driver: the clocks are the BIOS's power profile, which "
                               "this check cannot read")]
    return [expect(path.split("/")[-2], "scaling_governor", governor, GOVERNOR, "CPU_GOVERNOR")
            for path, governor in sorted(governors.items(), key=lambda pv: (len(pv[0]), pv[0]))]


def judge(ctx: Context) -> list[Finding]:
    parsed = ctx.parsed
    findings = [_iommu(_read(parsed["iommu"], IOMMU_GROUPS), parsed["cmdline"])]
    findings += _governors(parsed["governor"])
    ref = ctx.profile.reference("gpudirect", "bw_avg_Gbps")
    if ref is not None and ref.params.get("path") == "peermem" and ctx.profile.has("gpu"):
        loaded = _read(parsed["modules"], MODULES).get(f"{MODULES}/nvidia_peermem/initstate") == "live"
        findings.append(expect("node", "nvidia_peermem", "loaded" if loaded else "not loaded", "loaded",
                               "GPUDIRECT_PEERMEM_MISSING"))
    if "mtu" in parsed:
        cas = parsed["mtu"].get("cas")
        if cas is None:
            raise ParseError("ibv_devinfo output holds no hca_id block")
        for ca in cas:
            for port in ca.get("ports") or []:
                if port.get("link_layer", "InfiniBand") == "InfiniBand":
                    findings.append(expect(f"{ca['ca']} port {port.get('port')}", "active_mtu",
                                           port.get("active_mtu"), IB_MTU, "IB_MTU_LOW", unit="bytes"))
    return findings


CHECK = Check(id="host_settings", tool="/proc + sysfs + ibv_devinfo", steps=steps, judge=judge, order=38,
              budget=Budget(timeout_s=30, sets=("quick", "deep", "health")),
              data=Data(metrics={}))
