"""gpu_health: every GPU present, the right model and driver, no uncorrectable memory errors.

Tool: ``nvidia-smi -q -x`` (XML, DTD v11-v13; parser ``provision.parsers.smi_xml``).
Judges: GPU count and model against the profile; driver version against the stack release's
pin (``profile.stack``); volatile
uncorrectable ECC (DRAM and SRAM) = 0; no pending or failed row remap; no pending page
retirement; PCIe max generation and current width at the profile's value (the current
generation drops at idle by design, so it is judged under load by pcie_link); temperature
against the profile's reference (degrees C); persistence mode Enabled; no hardware or
thermal clock slowdown active. Row-remap rule from aznhc's ECC check
(https://github.com/Azure/azurehpc-health-checks, customTests/check_ecc).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Check, Context, Finding, Step
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
    seen = {g["bus_id"].upper() for g in smi["gpus"]}
    findings += [Finding(device=f"GPU {bus}", metric="present", value=False, ok=False, expected=True,
                         fault="GPU_MISSING", action=faults.action("GPU_MISSING"))
                 for bus in gpu.bus_ids if bus.upper() not in seen]
    for index, g in enumerate(smi["gpus"]):
        findings += _gpu(f"GPU{index} {g['bus_id']}", g, profile)
    return findings


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
        # nvidia-smi's max generation is what the GPU and its slot can reach: a capability.
        expect(device, "pcie_gen_max", g.get("pcie_gen_max"), gpu.pcie.gen, "PCIE_CAPABILITY"),
        expect(device, "pcie_width_current", g.get("width_current"), gpu.pcie.width, "PCIE_DOWNTRAINED",
               unit="lanes"),
        expect(device, "persistence_mode", g.get("persistence_mode"), "Enabled", "PERSISTENCE_OFF"),
        expect(device, "clocks_event_reasons_hw", sorted(set(g.get("clocks_event_reasons_active") or []) & HW_SLOWDOWN),
               [], "GPU_THROTTLED"),
    ]
    ref = profile.reference("gpu_health", "temp_C")
    if ref is not None and g.get("temp_C") is not None:
        out.append(measured(device, "temp_C", g["temp_C"], ref, "GPU_HOT"))
    return out


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS: dict[str, dict] = {
    "temp_C": {"properties": {}},  # read from nvidia-smi -q -x as it is: no test parameters
}


CHECK = Check(id="gpu_health", order=10, tool="nvidia-smi -q -x", steps=steps, judge=judge,
              sets=("quick", "deep"),
              needs=("gpu",), timeout_s=60, metrics={"gpu_count": "", "temp_C": "C"}, params=PARAMS)
