"""A simulated BMC's System Event Log and its event log line file, both in the rack's state folder (``bmc/``).

The SEL is ``<node>.sel.jsonl``, one entry a line, appended by the daemon (power transitions) and by ``sim fault``
(a fault's event); an entry's Id is its line number, as an IPMI SEL record id counts up. ``<node>.log`` gets one
line per power transition and reset request: ``<ISO 8601 time with offset> <event> [detail]``.
MessageIds are the OpenBMC message registry's (bmcweb redfish-core/include/registries/openbmc_message_registry.hpp:
DCPowerOn, DCPowerOff "Host system DC power is on/off" with Severity OK, PowerSupplyFailed, CPUError,
SensorThresholdCriticalHighGoingHigh) and DMTF's ResourceEvent registry (ResourceErrorsDetected) for GPU errors;
SensorType and EntryCode values are the LogEntry schema's enumerations (IPMI sensor types and event codes).
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

# (Severity, Message, MessageId, SensorType, EntryCode) of each event the simulator records.
EVENTS = {
    "power_on": ("OK", "Host system DC power is on", "OpenBMC.0.1.DCPowerOn", "System ACPI PowerState",
                 "Transition to Running"),
    "power_off": ("OK", "Host system DC power is off", "OpenBMC.0.1.DCPowerOff", "System ACPI PowerState",
                  "Transition to Power Off"),
    "sel_critical": ("Critical", "CPU Error Occurred: IERR.", "OpenBMC.0.1.CPUError", "Processor", "Assert"),
    "psu_lost": ("Critical", "Power supply {device} failed.", "OpenBMC.0.1.PowerSupplyFailed",
                 "Power Supply / Converter", "Assert"),
    "over_temp": ("Critical", "Sensor {device} reading of {value} is above the {limit} upper critical threshold.",
                  "OpenBMC.0.1.SensorThresholdCriticalHighGoingHigh", "Temperature", "Upper Critical - going high"),
    "gpu": ("Critical", "The resource property {device} has detected errors of type '{value}'.",
            "ResourceEvent.1.0.ResourceErrorsDetected", "Critical Interrupt", "Assert"),
}
HUGE_ENTRIES = 25_000  # sel_huge: about 10 MB of entries as Redfish JSON (~400 bytes each)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Sel:
    """The SEL and event log of BMC ``node`` in ``folder``."""

    def __init__(self, folder: Path, node: str) -> None:
        self.path = folder / f"{node}.sel.jsonl"
        self.log_path = folder / f"{node}.log"

    def add(self, event: str, fault: str | None = None, **fields: object) -> dict:
        """Append event ``event`` (an ``EVENTS`` key); ``fields`` fill its message; ``fault`` tags it so that
        ``sim heal`` can take it out again."""
        severity, message, message_id, sensor_type, code = EVENTS[event]
        entry = {"Created": now_iso(), "Severity": severity, "Message": message.format(**fields),
                 "MessageId": message_id, "SensorType": sensor_type, "SensorNumber": int(str(fields.get("sensor", 0))),
                 "EntryCode": code, "fault": fault}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as out:  # one write of one line: appends from two processes do not interleave
            out.write(json.dumps(entry) + "\n")
        return entry

    def entries(self, huge: bool = False) -> list[dict]:
        """Every entry, oldest first, with its Id; ``huge`` puts ``HUGE_ENTRIES`` old entries first."""
        old = _huge() if huge else []
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        out = list(old)
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash mid-write
        return [dict(e, Id=str(i + 1)) for i, e in enumerate(out)]

    def remove(self, fault: str) -> None:
        """Take out the entries fault ``fault`` added (``sim heal``)."""
        kept = [e for e in self.entries() if e.get("fault") != fault]
        self.path.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "Id"}) + "\n" for e in kept))

    def clear(self) -> None:
        self.path.write_text("")

    def event(self, text: str) -> str:
        """Append ``<ISO time> <text>`` to the node's BMC log; return the line."""
        line = f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='microseconds')} {text}"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as out:
            out.write(line + "\n")
        return line


def _huge() -> list[dict]:
    severity, message, message_id, sensor_type, code = EVENTS["power_on"]
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    return [{"Created": (start + datetime.timedelta(minutes=i)).isoformat(), "Severity": severity,
             "Message": message, "MessageId": message_id, "SensorType": sensor_type, "SensorNumber": 0,
             "EntryCode": code, "fault": "sel_huge"} for i in range(HUGE_ENTRIES)]
