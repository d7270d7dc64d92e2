"""Parse what a node's BMC answered (``provision.bmc``): the JSON document a ``bmc`` step saves as its raw output.

The document is ``{"protocol": "redfish"|"ipmi", "what": "status"|"sel"|"sensors"|"firmware", ...}``:
over Redfish the resources as the BMC answered them (DMTF schemas: ComputerSystem, Manager, LogService and
LogEntry, Sensor, PowerSupply, Fan, SoftwareInventory; the deprecated Power and Thermal arrays too); over IPMI
the text ipmitool printed (``chassis status``, ``mc info``, ``sel elist``, ``sensor``), parsed here so that a
saved run is judged again from what the tool said. Tested on DMTF's public-rackmount1 mockup
(tests/data/redfish_client/) and ipmitool 1.8.19's formats (lib/ipmi_sel.c ``ipmi_sel_print_std_entry``:
``ID | MM/DD/YYYY | HH:MM:SS[ ZONE] | TYPE NAME | DESCRIPTION | Asserted|Deasserted[ | Reading ...]``).

Shapes (``PARSES``: the tool name -> its parse):
  redfish-status   {"power_state", "health", "state", "manager_health", "firmware_version"}
  redfish-sel      {"entries": [{"id", "created", "severity" OK|Warning|Critical, "message", "message_id",
                    "sensor_type", "sensor"}]}
  redfish-sensors  {"sensors": [...], "power_supplies": [...], "fans": [...]}
  redfish-firmware {"firmware": [{"id", "name", "version", "health"}]}
IPMI's SEL has no severity: it is derived from the event text (``_ipmi_severity``), Deasserted is OK.
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone

from provision.errors import ParseError
from provision.parsers import _ipmitool_text as ipmi_text
from provision.parsers._util import require_text

WHAT = "a BMC's Redfish/IPMI JSON document"
SEVERITIES = {"ok": "OK", "warning": "Warning", "critical": "Critical"}


def _document(text: str, what: str) -> dict:
    require_text(text, WHAT)

    def no_constant(name: str):
        raise ParseError(f"not {WHAT}: {name} is not a number JSON allows")

    try:
        doc = json.loads(text, parse_constant=no_constant)
    except ValueError as exc:
        raise ParseError(f"not {WHAT}: invalid JSON ({str(exc).split(':')[0]})") from None
    except RecursionError:
        raise ParseError(f"not {WHAT}: nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("protocol") not in ("redfish", "ipmi"):
        raise ParseError(f"not {WHAT}: no \"protocol\": \"redfish\" or \"ipmi\"")
    if doc.get("what") != what:
        raise ParseError(f"not {WHAT} for {what}: it holds {str(doc.get('what'))[:20]!r}")
    return doc


def status(text: str) -> dict:
    doc = _document(text, "status")
    if doc["protocol"] == "ipmi":
        return ipmi_text.status(_text(doc, "chassis_status"), _text(doc, "mc_info", required=False))
    system, manager = _obj(doc.get("system"), "system"), doc.get("manager")
    manager = manager if isinstance(manager, dict) else {}
    return {"power_state": _str(system.get("PowerState")), "health": _str(_status(system).get("Health")),
            "state": _str(_status(system).get("State")), "manager_health": _str(_status(manager).get("Health")),
            "firmware_version": _str(manager.get("FirmwareVersion"))}


def sel(text: str) -> dict:
    """The entries; where the document says ``since`` (ISO 8601: the run's start), only those from then on (an entry
    without a readable time is kept), and ``since`` with them."""
    doc = _document(text, "sel")
    if doc["protocol"] == "ipmi":
        entries = ipmi_text.sel(_text(doc, "sel_elist"))
    else:
        found = doc.get("entries")
        if not isinstance(found, list):
            raise ParseError(f"not {WHAT}: no \"entries\" list")
        entries = [_entry(_obj(e, "a log entry")) for e in found]
    since = doc.get("since")
    if since is None:
        return {"entries": entries}
    try:
        start = datetime.fromisoformat(str(since).replace("Z", "+00:00"))
    except ValueError:
        raise ParseError(f"not {WHAT}: \"since\" {str(since)[:40]!r} is not an ISO 8601 time") from None
    return {"entries": [e for e in entries if after(e["created"], start)], "since": str(since)}


def _entry(entry: dict) -> dict:
    severity = str(entry.get("Severity") or "OK")
    return {"id": _str(entry.get("Id")), "created": _str(entry.get("Created")),
            "severity": SEVERITIES.get(severity.lower(), "Warning"), "message": _str(entry.get("Message")),
            "message_id": _str(entry.get("MessageId")), "sensor_type": _str(entry.get("SensorType")),
            "sensor": _scalar(entry.get("SensorNumber"))}


def sensors(text: str) -> dict:
    doc = _document(text, "sensors")
    if doc["protocol"] == "ipmi":
        return ipmi_text.sensors(_text(doc, "sensor"))
    return {"sensors": [_sensor(_obj(s, "a sensor")) for s in _list(doc, "sensors")],
            "power_supplies": [_psu(_obj(p, "a power supply")) for p in _list(doc, "power_supplies")],
            "fans": [_fan(_obj(f, "a fan")) for f in _list(doc, "fans")]}


def _sensor(s: dict) -> dict:
    found = s.get("Thresholds")
    limits: dict = found if isinstance(found, dict) else {}

    def limit(name: str):
        value = limits.get(name)
        return _num(value.get("Reading"), f"{s.get('Id')} {name}") if isinstance(value, dict) else None

    return {"id": _str(s.get("Id")), "name": _str(s.get("Name")), "type": _str(s.get("ReadingType")),
            "reading": _num(s.get("Reading"), f"{s.get('Id')} Reading"), "units": _str(s.get("ReadingUnits")),
            "health": _str(_status(s).get("Health")), "upper_critical": limit("UpperCritical"),
            "upper_caution": limit("UpperCaution"), "lower_critical": limit("LowerCritical"),
            "lower_caution": limit("LowerCaution")}


def _psu(p: dict) -> dict:
    return {"id": _str(p.get("Id") or p.get("MemberId")), "name": _str(p.get("Name")),
            "health": _str(_status(p).get("Health")), "state": _str(_status(p).get("State")),
            "capacity_W": _num(p.get("PowerCapacityWatts"), f"{p.get('Id')} PowerCapacityWatts")}


def _fan(f: dict) -> dict:
    found = f.get("SpeedPercent")
    speed: dict = found if isinstance(found, dict) else {}
    rpm = speed.get("SpeedRPM")
    if rpm is None and str(f.get("ReadingUnits", "")).upper() == "RPM":  # the deprecated Thermal.Fans
        rpm = f.get("Reading")
    return {"id": _str(f.get("Id") or f.get("MemberId")), "name": _str(f.get("Name")),
            "health": _str(_status(f).get("Health")), "state": _str(_status(f).get("State")),
            "speed_RPM": _num(rpm, f"{f.get('Id')} SpeedRPM")}


def firmware(text: str) -> dict:
    doc = _document(text, "firmware")
    if doc["protocol"] == "ipmi":
        raise ParseError(f"not {WHAT} for firmware: IPMI has no firmware inventory")
    return {"firmware": [{"id": _str(m.get("Id")), "name": _str(m.get("Name")), "version": _str(m.get("Version")),
                          "health": _str(_status(m).get("Health"))}
                         for m in (_obj(x, "a firmware member") for x in _list(doc, "members"))]}


def parse(text: str) -> dict:
    """Any of the four documents, by its ``what``."""
    require_text(text, WHAT)
    match = re.search(r'"what"\s*:\s*"(status|sel|sensors|firmware)"', text[:4096])
    if not match:
        raise ParseError(f"not {WHAT}: no \"what\"")
    return PARSES[f"redfish-{match.group(1)}"](text)


def after(created: str | None, since: datetime) -> bool:
    """Whether an entry's ISO 8601 ``created`` is at or after ``since`` (a time without zone is UTC); an entry
    without a readable time is kept (it may be the one that matters)."""
    when = instant(created)
    since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
    return when is None or when >= since


def instant(created: str | None) -> datetime | None:
    """An entry's ISO 8601 ``created`` as an aware time (a time without zone is UTC), None when unreadable; sorts
    before every time where a key needs one (``sort_key``)."""
    if not created:
        return None
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def sort_key(created: str | None) -> datetime:
    """``instant`` for sorting: an unreadable time first."""
    return instant(created) or datetime.min.replace(tzinfo=timezone.utc)


def _text(doc: dict, key: str, required: bool = True) -> str:
    value = doc.get(key)
    if isinstance(value, str):
        return value
    if required:
        raise ParseError(f"not {WHAT}: no \"{key}\" text")
    return ""


def _list(doc: dict, key: str) -> list:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise ParseError(f"not {WHAT}: \"{key}\" is not a list")
    return value


def _obj(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise ParseError(f"not {WHAT}: {what} is not a JSON object")
    return value


def _status(resource: dict) -> dict:
    value = resource.get("Status")
    return value if isinstance(value, dict) else {}


def _str(value) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)[:1024]


def _scalar(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value if abs(value) < 2**63 and math.isfinite(value) else None
    return str(value)[:256]


def _num(value, what: str):
    """A finite number or None; a string or bool is not a reading."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        finite = math.isfinite(float(value))
    except OverflowError:
        finite = False
    if not finite:
        raise ParseError(f"{str(what)[:80]} is not a finite number")
    return value


PARSES = {"redfish-status": status, "redfish-sel": sel, "redfish-sensors": sensors, "redfish-firmware": firmware}
TOOLS = tuple(PARSES)
