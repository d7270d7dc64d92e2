"""bmc: the node's BMC answers, and what it records of the node is healthy: the system's health, its event log,
its power supplies, fans and sensors.

Out of band (``Placement.out_of_band``): every step is a query of the node's BMC from the controller
(``provision.bmc.transport``, DMTF's Redfish over HTTPS, or IPMI through ipmitool where the inventory says
``provision_bmc_protocol: ipmi``), so it runs, and is judged, on a node that no longer answers over SSH. A host
whose inventory names no BMC (``provision_bmc_address``) skips it. Steps: ``status`` (parser ``redfish-status``:
the ComputerSystem's ``PowerState`` and ``Status.Health``, the Manager's health and firmware; DMTF DSP0268
ComputerSystem/Manager), ``sel`` (``redfish-sel``: the LogEntry members of the system's SEL log service, from the
node's last boot (``/proc/stat`` btime, read as the run reached it) or the run's start, whichever is earlier:
``Severity`` OK/Warning/Critical, ``Message``, ``SensorType``; DSP0268 LogEntry) and ``sensors`` (``redfish-sensors``:
the chassis's Sensor members with their ``Thresholds``, its PowerSubsystem's PowerSupplies and ThermalSubsystem's
Fans; DSP0268 Sensor, PowerSupply, Fan).

It runs after the node's other checks (order 95, after gpu_stress), so that its event-log window holds what the BMC
logged while the GPUs were under stress (a power supply dropping under load, a GPU over its temperature limit, a GPU
fallen off the bus).

Judges, each against what the BMC itself states (no threshold of ours; the BMC's are the vendor's for that board);
a BMC that reports no sensor with a reading gives nothing to judge the node by: an error, never a pass:
- the system's ``PowerState``: a node the BMC says is not On fails NODE_POWERED_OFF;
- the system's ``Status.Health`` and the BMC's own: OK passes; Warning or Critical fails (BMC_HEALTH), as DCGM's and
  NVIDIA's ``dpsctl verify bmc-health`` treat a BMC-reported fault as the node's;
- every Critical event-log entry of that window fails (SEL_CRITICAL), named with its time, message and sensor;
  Warning entries are recorded, not failed (a chassis intrusion or a redundant fan's spin-up is logged Warning);
- a sensor whose reading is past its ``UpperCritical`` or ``LowerCritical`` threshold, or whose health is Critical,
  fails (SENSOR_CRITICAL); past a caution threshold it is recorded, not failed;
- a power supply or fan whose health is not OK or that is absent with a health the BMC rates fails (PSU_FAILED,
  FAN_FAILED; an empty bay or fan header, absent with no health, is recorded): a node on fewer
  supplies than it was built with has lost its redundancy (a DGX H100 has six,
  https://docs.nvidia.com/dgx/dgxh100-user-guide/); the count of healthy supplies is a metric.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.errors import ParseError

HEALTH, SEL, SENSOR, PSU, FAN = "BMC_HEALTH", "SEL_CRITICAL", "SENSOR_CRITICAL", "PSU_FAILED", "FAN_FAILED"
OFF = "NODE_POWERED_OFF"
BAD_STATES = ("Absent", "UnavailableOffline", "Disabled")


def steps(profile, host) -> list[Step]:
    return [Step("status", ["bmc", "status"], parser="redfish-status", via="bmc"),
            Step("sel", ["bmc", "sel"], parser="redfish-sel", via="bmc"),
            Step("sensors", ["bmc", "sensors"], parser="redfish-sensors", via="bmc")]


def judge(ctx: Context) -> list[Finding]:
    status, sel, sensors = ctx.parsed["status"], ctx.parsed["sel"], ctx.parsed["sensors"]
    if not any(s.get("reading") is not None for s in sensors.get("sensors") or []):
        # nothing to judge the node's temperatures and power by: the check could not run, never a pass
        raise ParseError("the BMC reported no sensor with a reading")
    return (_status(status) + _sel(sel.get("entries") or [], sel.get("since")) + _sensors(sensors.get("sensors") or [])
            + _units("psu", PSU, sensors.get("power_supplies") or []) + _units("fan", FAN, sensors.get("fans") or []))


def _status(status: dict) -> list[Finding]:
    power = status.get("power_state")
    out = [_finding("system", "power_state", power, power == "On", OFF, expected="On")]
    for device, health in (("system", status.get("health")), ("BMC", status.get("manager_health"))):
        if health is None and device == "BMC":
            continue
        out.append(_finding(device, "health", health, health == "OK", HEALTH, expected="OK"))
    return out


def _sel(entries: list[dict], since: str | None) -> list[Finding]:
    critical = [e for e in entries if e.get("severity") == "Critical"]
    out = [_finding("SEL", "sel_critical_entries", len(critical), not critical, SEL, expected=0,
                    detail=f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} since "
                           f"{since or 'the log began'}")]
    for entry in critical:
        out.append(_finding(entry.get("sensor") or entry.get("sensor_type") or "SEL", "sel_entry",
                            entry.get("message"), False, SEL,
                            detail=f"{entry.get('created')} {entry.get('severity')}"
                                   + (f" ({entry.get('sensor_type')})" if entry.get("sensor_type") else "")))
    out += [Finding(device=e.get("sensor") or "SEL", metric="sel_entry", value=e.get("message"), ok=True,
                    detail=f"{e.get('created')} Warning") for e in entries if e.get("severity") == "Warning"]
    return out


def _sensors(sensors: list[dict]) -> list[Finding]:
    out = []
    for sensor in sensors:
        reading = sensor.get("reading")
        if reading is None:
            continue
        name = sensor.get("name") or sensor.get("id")
        high, low = sensor.get("upper_critical"), sensor.get("lower_critical")
        past = ((high is not None and reading >= high) or (low is not None and reading <= low)
                or sensor.get("health") == "Critical")
        caution = [f"{word} {limit}" for word, limit, beyond in (
            ("above caution", sensor.get("upper_caution"), lambda r, t: r >= t),
            ("below caution", sensor.get("lower_caution"), lambda r, t: r <= t)) if limit is not None and beyond(
                reading, limit)]
        limits = ", ".join(f"{w} {v}" for w, v in (("lower critical", low), ("upper critical", high)) if v is not None)
        out.append(_finding(name, f"{(sensor.get('type') or 'sensor').lower()}_reading", reading, not past, SENSOR,
                            unit=sensor.get("units") or "",
                            detail="; ".join(filter(None, [limits and f"BMC's thresholds: {limits}",
                                                          f"health {sensor.get('health')}", *caution]))))
    return out


def _units(kind: str, fault: str, units: list[dict]) -> list[Finding]:
    out = []
    for unit in units:
        # an empty bay or fan header (Absent, and no health: ipmitool's "na") is recorded, not failed; a unit that
        # is there and unhealthy, or absent with a health the BMC rates (a supply pulled or dead), fails
        empty = unit.get("state") == "Absent" and unit.get("health") is None
        bad = not empty and (unit.get("health") not in ("OK", None) or unit.get("state") in BAD_STATES)
        value = unit.get("health") or unit.get("state")
        out.append(_finding(unit.get("name") or unit.get("id"), f"{kind}_health", value, not bad, fault, expected="OK",
                            detail=f"state {unit.get('state')}"))
    present = [u for u in units if not (u.get("state") == "Absent" and u.get("health") is None)]
    if kind == "psu" and present:
        healthy = sum(1 for u in present if u.get("health") in ("OK", None) and u.get("state") not in BAD_STATES)
        out.append(_finding("PSUs", "psus_healthy", healthy, healthy == len(present), fault, expected=len(present),
                            detail=f"{healthy} of {len(present)} power supplies healthy"))
    return out


def _finding(device, metric: str, value, ok: bool, code: str, **more) -> Finding:
    """A finding that carries ``code`` and its catalogued action when it fails."""
    return Finding(device=str(device), metric=metric, value=value, ok=ok, fault="" if ok else code,
                   action="" if ok else faults.action(code), **more)


CHECK = Check(id="bmc", tool="the node's BMC (Redfish)", steps=steps, judge=judge, order=95,
              placement=Placement(out_of_band=True),
              budget=Budget(timeout_s=60, sets=("quick", "deep")),
              data=Data(metrics={"sel_critical_entries": "", "psus_healthy": ""}))
