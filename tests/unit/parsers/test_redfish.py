"""provision.parsers.redfish against DMTF's public-rackmount1 mockup and ipmitool's formats
(tests/data/redfish_client/SOURCE.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import PARSERS, parse_tool
from provision.parsers import redfish

DATA = Path(__file__).resolve().parents[2] / "data" / "redfish_client"
MOCKUP = DATA / "public-rackmount1"
IPMI = DATA / "ipmitool"


def load(path: str) -> dict:
    return json.loads((MOCKUP / path / "index.json").read_text())


def members(path: str) -> list[dict]:
    return [load(m["@odata.id"].removeprefix("/redfish/v1/")) for m in load(path)["Members"]]


def doc(what: str, **fields) -> str:
    return json.dumps({"protocol": "redfish", "what": what, **fields})


def test_registered_under_four_names() -> None:
    assert {t: PARSERS[t] for t in redfish.TOOLS} == redfish.PARSES
    assert set(redfish.TOOLS) == {"redfish-status", "redfish-sel", "redfish-sensors", "redfish-firmware"}


def test_status_of_the_mockup() -> None:
    text = doc("status", system=load("Systems/437XR1138R2"), manager=load("Managers/BMC"))
    assert parse_tool("redfish-status", text) == {"power_state": "On", "health": "OK", "state": "Enabled",
                                                   "manager_health": "OK", "firmware_version": "1.45.455b66-rev4"}


def test_sel_of_the_mockup() -> None:
    entries = load("Systems/437XR1138R2/LogServices/Log1/Entries")["Members"]
    parsed = parse_tool("redfish-sel", doc("sel", log_service={}, entries=entries))["entries"]
    assert parsed[0] == {"id": "1", "created": "2012-03-07T14:44:00Z", "severity": "Critical",
                         "message": "Temperature threshold exceeded", "message_id": "0x592A28",
                         "sensor_type": "Temperature", "sensor": 1}
    assert [e["id"] for e in parsed] == ["1", "2"]


def test_sel_since_keeps_what_came_after_the_run_began() -> None:
    entries = load("Systems/437XR1138R2/LogServices/Log1/Entries")["Members"]
    parsed = redfish.sel(doc("sel", entries=entries, since="2012-03-07T14:44:30+00:00"))
    assert [e["id"] for e in parsed["entries"]] == ["2"] and parsed["since"] == "2012-03-07T14:44:30+00:00"


def test_sensors_of_the_mockup() -> None:
    text = doc("sensors", sensors=members("Chassis/1U/Sensors"),
               power_supplies=members("Chassis/1U/PowerSubsystem/PowerSupplies"),
               fans=members("Chassis/1U/ThermalSubsystem/Fans"))
    parsed = parse_tool("redfish-sensors", text)
    cpu = next(s for s in parsed["sensors"] if s["id"] == "CPUTemp1")
    assert cpu == {"id": "CPUTemp1", "name": "CPU #1 Temperature", "type": None, "reading": 37, "units": "Cel",
                   "health": "OK", "upper_critical": 45, "upper_caution": 42, "lower_critical": None,
                   "lower_caution": None}
    bay1 = next(p for p in parsed["power_supplies"] if p["id"] == "Bay1")
    assert bay1 == {"id": "Bay1", "name": "Power Supply Bay 1", "health": "Warning", "state": "Enabled",
                    "capacity_W": 400}
    fan = next(f for f in parsed["fans"] if f["id"] == "Bay1")
    assert fan == {"id": "Bay1", "name": "Fan Bay 1", "health": "OK", "state": "Enabled", "speed_RPM": 2200}


def test_firmware_of_the_mockup() -> None:
    parsed = parse_tool("redfish-firmware", doc("firmware", members=members("UpdateService/FirmwareInventory")))
    bmc = next(f for f in parsed["firmware"] if f["id"] == "BMC")
    assert bmc == {"id": "BMC", "name": "Contoso BMC Firmware", "version": "1.45.455b66-rev4", "health": "OK"}
    assert {f["id"] for f in parsed["firmware"]} >= {"BMC", "BIOS"}


def ipmi(what: str, **texts) -> str:
    return json.dumps({"protocol": "ipmi", "what": what, **texts})


def test_ipmitool_status() -> None:
    text = ipmi("status", chassis_status=(IPMI / "chassis_status.txt").read_text(),
                mc_info=(IPMI / "mc_info.txt").read_text())
    assert redfish.status(text) == {"power_state": "On", "health": "OK", "state": "Enabled",
                                    "manager_health": None, "firmware_version": "1.74"}
    faulty = (IPMI / "chassis_status.txt").read_text().replace("Main Power Fault     : false",
                                                                "Main Power Fault     : true")
    assert redfish.status(ipmi("status", chassis_status=faulty, mc_info=""))["health"] == "Critical"


def test_ipmitool_sel_elist() -> None:
    entries = redfish.sel(ipmi("sel", sel_elist=(IPMI / "sel_elist.txt").read_text()))["entries"]
    assert [e["id"] for e in entries] == ["1", "2", "3", "4", "5", "6"]  # the OEM record has no standard fields
    assert entries[1] == {"id": "2", "created": "2026-12-03T08:05:12+00:00", "severity": "Critical",
                          "message": "Power Supply PS2 Status Power Supply AC lost Asserted", "message_id": None,
                          "sensor_type": "Power Supply", "sensor": "PS2 Status"}
    assert (entries[5]["sensor_type"], entries[5]["sensor"]) == ("System Event", "#0x83")
    assert [e["severity"] for e in entries] == ["OK", "Critical", "OK", "Critical", "Warning", "OK"]
    assert entries[5]["created"] is None  # Pre-Init: the BMC's clock was not set yet
    assert redfish.sel(ipmi("sel", sel_elist=""))["entries"] == []


def test_ipmitool_sensor() -> None:
    parsed = redfish.sensors(ipmi("sensors", sensor=(IPMI / "sensor.txt").read_text()))
    gpu = next(s for s in parsed["sensors"] if s["id"] == "GPU3 Temp")
    assert gpu == {"id": "GPU3 Temp", "name": "GPU3 Temp", "type": "Temperature", "reading": 96, "units": "degrees C",
                   "health": "Critical", "lower_critical": 5, "lower_caution": 10, "upper_caution": 87,
                   "upper_critical": 92}
    assert [(f["id"], f["state"], f["speed_RPM"]) for f in parsed["fans"]] == [("FAN1", "Enabled", 8400),
                                                                               ("FAN2", "Absent", None)]
    assert "PS1 Status" not in {s["id"] for s in parsed["sensors"]}  # discrete: no reading to judge


def test_ipmi_has_no_firmware_inventory() -> None:
    with pytest.raises(ParseError, match="IPMI has no firmware inventory"):
        redfish.firmware(ipmi("firmware"))


@pytest.mark.parametrize("text,words", [
    ("", "the text is empty"), ("<html><body>Login</body></html>", "invalid JSON"),
    ('{"protocol": "redfish", "what": "status", "system": {"PowerState": NaN}}', "NaN is not a number"),
    ('{"fio version": "3.33"}', 'no "protocol"'), ('[1, 2]', 'no "protocol"'),
    ('{"protocol": "redfish", "what": "sel"}', 'holds \'sel\''),
    ('{"protocol": "redfish", "what": "status", "system": []}', "system is not a JSON object"),
])
def test_refused_in_one_line(text: str, words: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_tool("redfish-status", text, "out.json")
    assert str(caught.value).startswith("out.json: not ") and words in str(caught.value)


def test_a_reading_past_float_range_is_refused() -> None:
    with pytest.raises(ParseError, match="not a finite number"):
        redfish.sensors(doc("sensors", sensors=[{"Id": "x", "Reading": 10 ** 400}]))


def test_parse_dispatches_by_what() -> None:
    assert redfish.parse(doc("firmware", members=[]))["firmware"] == []
