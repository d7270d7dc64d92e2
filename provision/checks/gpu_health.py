"""gpu_health: every GPU present, the right model and driver, no uncorrectable memory errors.

Tool: ``nvidia-smi -q -x`` (XML, DTD v11-v13; parser ``provision.parsers.smi_xml``).
Judges: GPU count and model against the profile; driver version against the stack release's
pin (``profile.stack``); volatile
uncorrectable ECC (DRAM and SRAM) = 0; no pending or failed row remap; no pending page
retirement; PCIe max generation (the link's, max_link_gen, not the device's) and current width at
the profile's value where the GPU's host link is PCIe (rule ``pcie`` needs ``pcie_gpu``: not on
NVLink-C2C GPUs; the current generation drops at idle by design, so it is judged under load by
pcie_link); temperature
against the profile's reference (degrees C); persistence mode Enabled; no hardware or
thermal clock slowdown active. Row-remap rule from aznhc's ECC check
(https://github.com/Azure/azurehpc-health-checks, customTests/check_ecc).

A GPU nvidia-smi reports lost ("GPU is lost", "Unknown Error") is one failure that says so
(GPU_LOST), not a row of unreadable fields. The driver's own recovery action (``gpu_recovery_action``,
R565+: None, GPU Reset, Node Reboot, Drain P2P, Drain and Reset) other than None is a failure with that
action (GPU_RECOVERY_ACTION), and is named beside every other failing finding of that GPU.

The NVLink fabric block (``<fabric>``, NVML's nvmlGpuFabricInfo: https://docs.nvidia.com/deploy/nvml-api/
group__nvmlFabricDefs.html) is judged where the GPUs meet through NVSwitches or a multi-node NVLink domain
(the profile's ``gpu.nvswitch`` or ``nvlink_domain``) and the board prints one with a state (A100 and older
drivers print N/A: not judged, except on an NVLink-domain tray, whose GPUs cannot work without it):
state ``Completed`` and status ``Success`` (NVML: the status is read only once the probe completed),
NVLINK_FABRIC_NOT_TRAINED otherwise; health summary ``Healthy`` where printed (R570+), ``Limited
Capacity`` or a bandwidth other than ``Full`` being NVLINK_FABRIC_DEGRADED and any other summary
NVLINK_FABRIC_UNHEALTHY; on an NVLink-domain tray every GPU in one clique of one cluster (clusterUuid
not all zeros), NVLINK_CLIQUE_MISMATCH otherwise (NVIDIA Health Validation's NVLink checks,
https://docs.nvidia.com/health-validation/reference/checks/nvlink.md, judge the same fabric state).
"""
from __future__ import annotations

import collections
import dataclasses

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect, measured

# Clock event reasons that mean hardware trouble; idle, application clocks, SW power cap and
# sync boost are normal (nvidia-smi -q documentation, "Clocks Event Reasons").
HW_SLOWDOWN = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"}


def steps(profile, host) -> list[Step]:
    return [Step("", ["nvidia-smi", "-q", "-x"], parser="nvidia-smi-qx")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    smi = parsed[""]
    gpu = profile.gpu
    findings = [
        expect("node", "gpu_count", len(smi["gpus"]), gpu.count, "GPU_MISSING"),
        expect("node", "driver_version", smi["driver_version"], profile.stack["driver_version"], "STACK_PIN"),
    ]
    seen = {_bus_key(g["bus_id"]) for g in smi["gpus"]}
    findings += [Finding(device=f"GPU {bus}", metric="present", value=False, ok=False, expected=True,
                         fault="GPU_MISSING", action=faults.action("GPU_MISSING"))
                 for bus in gpu.bus_ids if _bus_key(bus) not in seen]
    for index, g in enumerate(smi["gpus"]):
        device = f"GPU{index} {g['bus_id']}"
        if g.get("lost"):
            findings.append(Finding(device=device, metric="lost", value=True, ok=False, expected=False,
                                    fault="GPU_LOST", action=faults.action("GPU_LOST"),
                                    detail=f"GPU is lost ({g.get('lost_reason') or 'nvidia-smi cannot read it'})"))
            continue
        findings += _with_recovery(g, _gpu(device, g, profile) + _fabric(device, g, profile))
    findings += _clique(smi["gpus"], profile)
    return findings


def _bus_key(bus: str) -> tuple[int, str]:
    """A PCI bus id as one key however nvidia-smi prints its domain: "00000000:9C:00.0" in its XML and the
    profile, "0000:9c:00.0" in its "Unable to determine the device handle" line."""
    domain, _, rest = bus.lower().rpartition(":")
    domain, _, bus_part = domain.rpartition(":")
    return int(domain or "0", 16), f"{bus_part}:{rest}"


def _with_recovery(g: dict, findings: list[Finding]) -> list[Finding]:
    """``findings`` of one GPU, with the driver's recovery action judged and named beside each failure."""
    action = g.get("recovery_action")
    if action is None or action.strip().lower() == "none":
        return findings
    device = findings[0].device
    out = [dataclasses.replace(f, detail="; ".join(p for p in (f.detail, f"driver recovery action: {action}") if p))
           if not f.ok else f for f in findings]
    out.append(Finding(device=device, metric="recovery_action", value=action, ok=False, expected="None",
                       fault="GPU_RECOVERY_ACTION", action=faults.action("GPU_RECOVERY_ACTION"),
                       detail=f"the driver asks for: {action}"))
    return out


def _fabric(device: str, g: dict, profile) -> list[Finding]:
    """The GPU's NVLink fabric block judged (see the module doc); [] where it does not apply."""
    domain = profile.nvlink_domain is not None
    if not (profile.gpu.nvswitch or domain):
        return []
    fabric = g.get("fabric") or {}
    if fabric.get("state") is None and not domain:
        return []
    out = [expect(device, "fabric_state", fabric.get("state"), "Completed", "NVLINK_FABRIC_NOT_TRAINED")]
    if fabric.get("state") == "Completed":
        out.append(expect(device, "fabric_status", fabric.get("status"), "Success", "NVLINK_FABRIC_NOT_TRAINED"))
    summary = fabric.get("health_summary")
    if summary is not None:
        degraded = summary.strip().lower() == "limited capacity"
        out.append(expect(device, "fabric_health", summary, "Healthy",
                          "NVLINK_FABRIC_DEGRADED" if degraded else "NVLINK_FABRIC_UNHEALTHY"))
    if fabric.get("bandwidth") is not None:
        out.append(expect(device, "fabric_bandwidth", fabric["bandwidth"], "Full", "NVLINK_FABRIC_DEGRADED"))
    return out


def _clique(gpus: list[dict], profile) -> list[Finding]:
    """On an NVLink-domain tray: one clique of one cluster for every GPU whose fabric training completed (a GPU
    still training prints N/A for both and is NVLINK_FABRIC_NOT_TRAINED already; see the module doc)."""
    if profile.nvlink_domain is None:
        return []
    trained = [(index, g) for index, g in enumerate(gpus)
               if not g.get("lost") and (g.get("fabric") or {}).get("state") == "Completed"]
    seen = [(g["fabric"].get("cluster_uuid"), g["fabric"].get("clique_id")) for _, g in trained]
    if not seen:
        return []
    (uuid, clique), count = collections.Counter(seen).most_common(1)[0]
    out = []
    for index, g in trained:
        fabric = g["fabric"]
        got = (fabric.get("cluster_uuid"), fabric.get("clique_id"))
        unset = got[0] is None or set(got[0].replace("-", "")) == {"0"}
        if unset or got != (uuid, clique):
            out.append(Finding(device=f"GPU{index} {g['bus_id']}", metric="fabric_clique",
                               value=f"{got[0]}/{got[1]}", ok=False, expected=f"{uuid}/{clique}",
                               fault="NVLINK_CLIQUE_MISMATCH", action=faults.action("NVLINK_CLIQUE_MISMATCH"),
                               detail="no NVLink cluster assigned" if unset else
                               f"clique {got[1]} of cluster {got[0]}, the tray's other GPUs ({count}) in clique "
                               f"{clique} of {uuid}"))
    return out


def _gpu(device: str, g: dict, profile) -> list[Finding]:
    gpu = profile.gpu
    rows = g.get("remapped_rows") or {}
    out = [
        expect(device, "model", g["name"], gpu.model, "GPU_MODEL"),
        expect(device, "ecc_uncorrected_volatile", g.get("ecc_uncorrected_volatile") or 0, 0, "ECC_DBE"),
        expect(device, "sram_uncorrected_volatile", g.get("sram_uncorrected_volatile") or 0, 0, "ECC_SRAM"),
        expect(device, "remapped_rows_pending", bool(rows.get("pending")), False, "ROW_REMAP_PENDING"),
        expect(device, "remapped_rows_failure", bool(rows.get("failure")), False, "ROW_REMAP_FAILURE"),
        expect(device, "retired_pages_pending", bool(g.get("retired_pages_pending")), False, "PAGE_RETIRE_PENDING"),
        expect(device, "persistence_mode", g.get("persistence_mode"), "Enabled", "PERSISTENCE_OFF"),
        expect(device, "clocks_event_reasons_hw", sorted(set(g.get("clocks_event_reasons_active") or []) & HW_SLOWDOWN),
               [], "GPU_THROTTLED"),
    ]
    if CHECK.applies(profile, "pcie"):  # the GPU's host link is PCIe (not NVLink-C2C to a Grace CPU)
        # nvidia-smi's max_link_gen is what the GPU and its slot can reach together (the link's, not the device's
        # max_device_link_gen: a Gen6-capable GPU in a Gen5 board reads 5), judged as a capability.
        out += [expect(device, "pcie_gen_max", g.get("pcie_gen_max"), gpu.pcie.gen, "PCIE_CAPABILITY"),
                expect(device, "pcie_width_current", g.get("width_current"), gpu.pcie.width, "PCIE_DOWNTRAINED",
                       unit="lanes")]
    ref = profile.reference("gpu_health", "temp_C")
    if ref is not None and g.get("temp_C") is not None:
        out.append(measured(device, "temp_C", g["temp_C"], ref, "GPU_HOT"))
    return out


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS: dict[str, dict] = {
    "temp_C": {"properties": {}},  # read from nvidia-smi -q -x as it is: no test parameters
}


CHECK = Check(id="gpu_health", tool="nvidia-smi -q -x", steps=steps, judge=judge, order=10,
              placement=Placement(needs=("gpu",), rules={"pcie": ("pcie_gpu",)}),
              budget=Budget(timeout_s=60, sets=("quick", "deep", "health")),
              data=Data(metrics={"gpu_count": "", "temp_C": "C"}, params=PARAMS))
