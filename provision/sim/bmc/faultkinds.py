"""Fault kinds of the simulated BMCs (``provision sim fault NODE KIND``; ``sim heal`` ends them).

Model faults edit the node's hardware model, which the BMC reads per request (so ipmitool, dmidecode and
nvidia-smi inside the node agree with Redfish): ``psu_lost``, ``firmware_stale``, ``over_temp``. Service faults
are only recorded in the rack's ``faults.json``, which the daemon reads per request: the BMC then misbehaves as the
kind says. ``node_hung`` freezes the node's cgroup v2 folder (``cgroup.freeze``, Linux cgroup-v2.rst "Core Interface
Files"): its sshd and tools stop answering while the BMC still reports it On; a power cycle thaws and restarts it.
Faults that a real BMC logs add a SEL entry (``SEL_EVENTS``), which ``heal`` takes out again.
"""
from __future__ import annotations

from pathlib import Path

from provision.errors import ProvisionError
from provision.sim.bmc.sel import HUGE_ENTRIES, Sel

# Service faults: kind -> description.
BMC_KINDS = {
    "bmc_unresponsive": "the BMC accepts TCP connections and never answers (not even the TLS handshake)",
    "bmc_power_ignored": "Reset is accepted (204) and not carried out; PowerState then shows the state asked for",
    "sel_critical": "a Critical SEL entry (CPU IERR) and system Health Critical",
    "bmc_html": "every Redfish URI answers 200 with a text/html page",
    "bmc_garbage": "every Redfish URI answers 200 with invalid JSON",
    "sel_huge": f"the SEL holds {HUGE_ENTRIES:,} more entries (about 10 MB over its pages)",
    "bmc_cert_expired": "the BMC serves a certificate (of the rack CA) that expired 30 days ago",
    "node_hung": "the node's cgroup frozen: sshd and tools stop answering, the BMC says On; a power cycle ends it",
}
# The rack's own versions are the model's (nodefacts.BIOS, BMC, CPLD); older ones a node left behind shows. The
# CPLD pair is the one NVIDIA's DGX H100 firmware update guide prints as installed before an update
# ("Viewing the Installed Firmware and Package Versions": CPLDMB_0 0.2.1.6, CPLDMID_0 0.2.0.7); the BMC and BIOS
# ones are the simulator's own, older than the model's 24.09 and 1.6.7.
STALE = {"bmc": "24.03", "bios": "1.5.2", "CPLDMB_0": "0.2.1.6", "CPLDMID_0": "0.2.0.7"}
OVER_TEMP_C = 95
# GPU faults the HGX board's HMC reports, with the error as the SEL message names it (the driver's Xid texts).
GPU_ERRORS = {"xid79": "Xid 79: GPU has fallen off the bus", "gpu_lost": "GPU is lost",
              "gpu_missing": "GPU not enumerated", "dbe_remap": "Xid 48: double bit ECC error"}


def psu_lost(model: dict, device: str, value: str | None) -> str:
    psus = (model.get("platform") or {}).get("psus") or []
    psu = next((p for p in psus if str(p["index"]) == str(device)), None)
    if psu is None:
        raise ProvisionError(f"--device {str(device)[:20]!r}: no PSU of that index (0..{len(psus) - 1})")
    psu.update(present=False, health="Critical")
    return f"PSU_{psu['index']}"


def firmware_stale(model: dict, device: str, value: str | None) -> str:
    model["bmc"]["firmware_revision"] = value or STALE["bmc"]
    model["bios"]["version"] = STALE["bios"]
    cpld = (model.get("platform") or {}).get("cpld") or {}
    for key in cpld:
        cpld[key] = STALE.get(key, cpld[key])
    return f"BMC {model['bmc']['firmware_revision']}, BIOS {STALE['bios']}, CPLD {', '.join(cpld.values())}"


def over_temp(model: dict, device: str, value: str | None) -> str:
    gpus = model.get("gpus") or []
    gpu = next((g for g in gpus if str(g["index"]) == str(device)), None)
    if gpu is None:
        raise ProvisionError(f"--device {str(device)[:20]!r}: no GPU of that index")
    try:
        gpu["temp_C"] = int(value) if value is not None else OVER_TEMP_C
    except ValueError:
        raise ProvisionError(f"--value {str(value)[:20]!r}: a temperature in C") from None
    return f"GPU_SXM_{gpu['index'] + 1} at {gpu['temp_C']} C"


def sel_event(sel_dir: Path, node: str, record: dict, model: dict | None) -> None:
    """The SEL entry a real BMC logs for fault ``record`` (none for kinds it would not see)."""
    kind, device = record["kind"], record["device"]
    sel = Sel(sel_dir, node)
    if kind == "sel_critical":
        sel.add("sel_critical", fault=kind, sensor=1)
    elif kind == "psu_lost":
        sel.add("psu_lost", fault=kind, device=record["label"], sensor=0x60 + int(device))
    elif kind == "over_temp":
        limit = ((model or {}).get("platform") or {}).get("gpu_temp", {}).get("upper_critical_C", 87)
        gpu = next(g for g in (model or {}).get("gpus", []) if str(g["index"]) == str(device))
        sel.add("over_temp", fault=kind, device=f"GPU_SXM_{int(device) + 1}_Temp", value=gpu["temp_C"],
                limit=limit, sensor=0x40 + int(device))
    elif kind in GPU_ERRORS:
        sel.add("gpu", fault=kind, device=f"GPU_SXM_{int(device) + 1}", value=GPU_ERRORS[kind],
                sensor=0x20 + int(device))


def freeze(cgroup: str, frozen: bool) -> None:
    """Freeze (or thaw) a node's cgroup v2 folder. Raises ProvisionError when the kernel has no freezer there."""
    path = Path(cgroup) / "cgroup.freeze"
    try:
        path.write_text("1" if frozen else "0")
    except OSError as exc:
        raise ProvisionError(f"{path}: cannot {'freeze' if frozen else 'thaw'} the node ({exc.strerror})") from None
