"""ipmitool's text (1.8.x; ``provision.parsers.redfish`` hands it here for a BMC reached over IPMI), read in the
shapes of the Redfish parsers.

- ``chassis status`` (lib/ipmi_chassis.c): "Key : value" lines; "System Power : on|off"; the fault lines
  ("Main Power Fault", "Power Overload", "Power Control Fault", "Drive Fault", "Cooling/Fan Fault") true make the
  health Critical.
- ``mc info`` (``provision.parsers.ipmitool_mc``): "Firmware Revision".
- ``sel elist`` (lib/ipmi_sel.c, ``ipmi_sel_print_std_entry``): ``%4x | date | time | type name | description |
  Asserted|Deasserted[ | Reading ...]``; a time before the BMC's clock was set is `` Pre-Init  |0000001234|``;
  OEM records ``OEM record XX | ...``. With ``-Z`` the times are UTC. "SEL has no entries" (stderr) is no lines.
- ``sensor`` (lib/ipmi_sensor.c, threshold sensors): ``name | value | units | status | lnr | lcr | lnc | unc | ucr |
  unr``; status ok, nc (non-critical), cr (critical), nr (non-recoverable), na.
"""
from __future__ import annotations

import re
from datetime import datetime

from provision.errors import ParseError
from provision.parsers import ipmitool_mc
from provision.parsers._util import lines, num

_FAULTS = ("main power fault", "power overload", "power control fault", "drive fault", "cooling/fan fault")
_HEX = re.compile(r"[0-9a-fA-F]{1,4}\Z")
_DATE = re.compile(r"\d\d/\d\d/\d{4}\Z")
_TIME = re.compile(r"\d\d:\d\d:\d\d(?: \S{1,8})?\Z")
_CRITICAL = ("critical going", "non-recoverable", "failure detected", "ac lost", "uncorrectable", "redundancy lost",
             "ierr", "thermal trip", "machine check", "fatal", "critical interrupt", "serr", "perr",
             "configuration error", "power off/down")
_WARNING = ("non-critical", "predictive failure", "correctable ecc", "degraded", "going low", "going high")
# IPMI 2.0 Table 42-3's sensor type names as ipmitool prints them (lib/ipmi_sel.c sensor_type_desc), longest first:
# an elist line's fourth column is "TYPE NAME", and a type may have several words.
_SENSOR_TYPES = sorted((
    "Temperature", "Voltage", "Current", "Fan", "Physical Security", "Platform Security", "Processor",
    "Power Supply", "Power Unit", "Cooling Device", "Other", "Memory", "Drive Slot (Bay)", "POST Memory Resize",
    "System Firmwares", "System Firmware Progress", "Event Logging Disabled", "Watchdog1", "Watchdog2",
    "System Event", "Critical Interrupt", "Button", "Module / Board", "Microcontroller", "Add-in Card", "Chassis",
    "Chip Set", "Other FRU", "Cable / Interconnect", "Terminator", "System Boot Initiated", "Boot Error", "OS Boot",
    "OS Critical Stop", "Slot / Connector", "System ACPI Power State", "Platform Alert", "Entity Presence",
    "Monitor ASIC", "LAN", "Management Subsys Health", "Battery", "Session Audit", "Version Change", "FRU State"),
    key=len, reverse=True)
_STATUS = {"ok": "OK", "nc": "Warning", "cr": "Critical", "nr": "Critical"}
_TYPES = {"degrees c": "Temperature", "watts": "Power", "volts": "Voltage", "rpm": "Rotational", "amps": "Current"}


def status(chassis: str, mc_info: str) -> dict:
    values = {}
    for row in lines(chassis):
        key, colon, value = row.partition(":")
        if colon:
            values[key.strip().lower()] = value.strip().lower()
    power = values.get("system power")
    if power not in ("on", "off"):
        raise ParseError("not ipmitool chassis status output: no 'System Power : on|off' line")
    faults = [k for k in _FAULTS if values.get(k) == "true"]
    firmware = ipmitool_mc.parse(mc_info)["firmware_revision"] if mc_info.strip() else None
    return {"power_state": power.capitalize(), "health": "Critical" if faults else "OK", "state": "Enabled",
            "manager_health": None, "firmware_version": firmware}


def sel(text: str) -> list[dict]:
    """The SEL's standard records, split on '|' (linear in the text; no backtracking pattern over a line)."""
    entries = []
    for row in lines(text):
        if not row.strip() or "SEL has no entries" in row:
            continue
        cells = [c.strip() for c in row.split("|")]
        if len(cells) >= 2 and _HEX.match(cells[0]) and cells[1].startswith(("OEM record", "Linux kernel panic")):
            continue  # a non-timestamped OEM record or a kernel panic record: no sensor or event to read
        if len(cells) < 2 or not _HEX.match(cells[0]):
            raise ParseError(f"not ipmitool sel elist output: a line is not 'ID | date | time | sensor | event': "
                             f"{row.strip()[:60]!r}")
        if cells[1] == "Pre-Init" and len(cells) >= 5 and cells[2].isdigit():
            created, sensor, event, rest = None, cells[3], cells[4], cells[5:]
        elif len(cells) >= 5 and _DATE.match(cells[1]) and _TIME.match(cells[2]):
            created, sensor, event, rest = _iso(cells[1], cells[2]), cells[3], cells[4], cells[5:]
        else:
            raise ParseError(f"not ipmitool sel elist output: a line is not 'ID | date | time | sensor | event': "
                             f"{row.strip()[:60]!r}")
        if sensor.startswith("OEM record"):
            continue  # an OEM record: manufacturer data, no sensor or event to read
        direction = rest[0] if rest and rest[0] in ("Asserted", "Deasserted") else None
        kind, name = _sensor_type(sensor)
        entries.append({"id": cells[0], "created": created, "severity": _severity(event, direction),
                        "message": " ".join(p for p in (sensor, event, direction) if p), "message_id": None,
                        "sensor_type": kind, "sensor": name})
    return entries


def _sensor_type(column: str) -> tuple[str | None, str | None]:
    """(type, name or "#0xNN") of an elist's "TYPE NAME" column; (None, the column) for a type not in the table."""
    for kind in _SENSOR_TYPES:
        if column == kind or column.startswith(kind + " "):
            return kind, column[len(kind):].strip() or None
    return None, column or None


def _iso(date: str, clock: str) -> str | None:
    """ISO 8601 of ipmitool's "MM/DD/YYYY" and "HH:MM:SS[ ZONE]"; with -Z (always given) the time is UTC."""
    hms, _, zone = clock.partition(" ")
    try:
        when = datetime.strptime(f"{date} {hms}", "%m/%d/%Y %H:%M:%S")
    except ValueError:
        return None
    return when.isoformat() + ("+00:00" if zone in ("", "UTC", "GMT", "Z") else "")


def _severity(text: str, direction: str | None) -> str:
    if direction == "Deasserted":
        return "OK"
    low = text.lower()
    if any(w in low for w in ("non-critical",)):
        return "Warning"
    if any(w in low for w in _CRITICAL):
        return "Critical"
    return "Warning" if any(w in low for w in _WARNING) else "OK"


def sensors(text: str) -> dict:
    found, fans = [], []
    for row in lines(text):
        cells = [c.strip() for c in row.split("|")]
        if len(cells) < 10 or not cells[0]:
            if row.strip():
                raise ParseError(f"not ipmitool sensor output: a line has not 10 '|' columns: {row.strip()[:60]!r}")
            continue
        name, value, units, state = cells[:4]
        if units == "discrete":
            continue
        reading = num(value)
        limits = [num(c) for c in cells[4:10]]
        health = _STATUS.get(state.lower())
        kind = _TYPES.get(units.lower())
        found.append({"id": name, "name": name, "type": kind, "reading": reading, "units": units or None,
                      "health": health, "lower_critical": limits[1], "lower_caution": limits[2],
                      "upper_caution": limits[3], "upper_critical": limits[4]})
        if kind == "Rotational":
            fans.append({"id": name, "name": name, "health": health,
                         "state": "Enabled" if reading is not None else "Absent", "speed_RPM": reading})
    if not found and text.strip():
        raise ParseError("not ipmitool sensor output: no threshold sensor line")
    return {"sensors": found, "power_supplies": [], "fans": fans}
