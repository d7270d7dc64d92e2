"""RedfishBmc finds everything by links from the service root of DMTF's public-rackmount1 mockup (served by a
stand-in for the library's client: tests/unit/bmc/_fake.py), pages through collections and powers by Reset."""
from __future__ import annotations

import json

import pytest

from provision.bmc.redfish import RedfishBmc
from provision.errors import BmcError
from tests.unit.bmc import _fake
from tests.unit.bmc.conftest import PASSWORD

ENTRIES = "/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries"
# The mockup's entry collection names a second page it does not hold; this test adds it (one entry of its own).
PAGE_2 = {f"{ENTRIES}?$skiptoken=2": {"Members": [{"@odata.id": f"{ENTRIES}/3"}]},
          f"{ENTRIES}/3": {"@odata.id": f"{ENTRIES}/3", "Id": "3", "Severity": "OK", "Created": "2012-03-08T00:00:00Z",
                           "Message": "added by the test: the mockup's next page", "EntryType": "SEL"}}


def connect(bmc_config, **options):
    make, made = _fake.factory(**options)
    return RedfishBmc(bmc_config(), 5, factory=make), made


def test_logs_in_with_a_session_verifying_tls_and_forgets_the_password(bmc_config):
    bmc, made = connect(bmc_config)
    client = made[0]
    assert client.logged_in and client.password is None
    assert client.kwargs["cafile"]  # never None: the library would not verify at all
    assert client.kwargs["max_retry"] == 0 and client.kwargs["base_url"] == "https://127.0.0.1"
    assert client.login_url == "/redfish/v1/SessionService/Sessions"
    bmc.close()
    assert client.logged_out


def test_insecure_only_when_asked(bmc_config):
    make, made = _fake.factory()
    RedfishBmc(bmc_config(insecure=True), 5, factory=make)
    assert made[0].kwargs["cafile"] is None


def test_status(bmc_config):
    bmc, _ = connect(bmc_config)
    assert bmc.status() == {"power_state": "On", "health": "OK", "state": "Enabled", "manager_health": "OK",
                            "firmware_version": "1.45.455b66-rev4"}


def test_sel_pages_and_expands(bmc_config):
    bmc, made = connect(bmc_config, pages=PAGE_2)
    entries = bmc.log()
    assert [e["id"] for e in entries] == ["1", "2", "3"]
    assert f"{ENTRIES}?$skiptoken=2" in made[0].gets and f"{ENTRIES}/3" in made[0].gets
    assert bmc.log(limit=1)[0]["id"] == "3"
    raw = json.loads(bmc.raw("sel"))
    assert raw["protocol"] == "redfish" and raw["log_service"]["Id"] == "Log1"


def test_sel_since(bmc_config):
    import datetime as dt

    bmc, _ = connect(bmc_config, pages=PAGE_2)
    since = dt.datetime(2012, 3, 7, 14, 44, 30, tzinfo=dt.timezone.utc)
    assert [e["id"] for e in bmc.log(since=since)] == ["2", "3"]


def test_sensors_firmware(bmc_config):
    bmc, _ = connect(bmc_config)
    sensors = bmc.sensors()
    listed = json.loads((_fake.MOCKUP / "Chassis/1U/Sensors/index.json").read_text())["Members"]
    ids = [json.loads((_fake.MOCKUP / m["@odata.id"].removeprefix("/redfish/v1/") / "index.json").read_text())["Id"]
           for m in listed]
    assert [s["id"] for s in sensors["sensors"]] == ids
    assert {p["id"] for p in sensors["power_supplies"]} == {"Bay1", "Bay2"}
    assert {f["id"] for f in sensors["fans"]} == {"Bay1", "Bay2", "CPU1", "CPU2"}
    assert {f["id"] for f in bmc.firmware()} >= {"BMC", "BIOS"}


def test_raw_holds_neither_password_nor_token(bmc_config):
    bmc, _ = connect(bmc_config, pages=PAGE_2)
    for what in ("status", "sel", "sensors", "firmware"):
        assert PASSWORD not in bmc.raw(what)


def test_named_system_missing(bmc_config):
    make, _ = _fake.factory()
    bmc = RedfishBmc(bmc_config(system="nope"), 5, factory=make)
    with pytest.raises(BmcError) as caught:
        bmc.status()
    assert str(caught.value) == ("node01: BMC 127.0.0.1: no ComputerSystem nope in /redfish/v1/Systems "
                                 "(found: 437XR1138R2)")


def test_cycle_falls_back_to_force_off_then_on(bmc_config, monkeypatch):
    """The mockup's Reset allows no PowerCycle: ForceOff, wait for Off, then On."""
    from provision.bmc import redfish

    monkeypatch.setattr(redfish, "POLL_S", 0)
    bmc, made = connect(bmc_config)
    client = made[0]
    system = "/redfish/v1/Systems/437XR1138R2"

    def on_post(path, body):
        state = {"ForceOff": "Off", "On": "On"}[body["ResetType"]]
        client.overrides[system] = {**json.loads((_fake.MOCKUP / "Systems/437XR1138R2/index.json").read_text()),
                                    "PowerState": state}
        return _fake.Response(204)

    client.on_post = on_post
    bmc.power("cycle")
    target = f"{system}/Actions/ComputerSystem.Reset"
    assert client.posts == [(target, {"ResetType": "ForceOff"}), (target, {"ResetType": "On"})]


@pytest.mark.parametrize("action,kind", [("on", "On"), ("off", "ForceOff"), ("reset", "ForceRestart")])
def test_power_maps_actions(bmc_config, action, kind):
    bmc, made = connect(bmc_config)
    bmc.power(action)
    assert made[0].posts[-1][1] == {"ResetType": kind}


def test_reset_refused_says_the_bmc_message(bmc_config):
    body = {"error": {"code": "Base.1.8.GeneralError", "message": "A general error has occurred.",
                      "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.ActionNotSupported",
                                                 "Message": "The action ForceOff is not supported now."}]}}
    bmc, _ = connect(bmc_config, on_post=lambda path, b: _fake.Response(409, body))
    with pytest.raises(BmcError) as caught:
        bmc.power("off")
    assert str(caught.value) == ("node01: BMC 127.0.0.1: Reset ForceOff refused (HTTP 409): "
                                 "The action ForceOff is not supported now.")


def test_a_link_off_the_bmc_is_not_followed(bmc_config):
    bmc, made = connect(bmc_config)
    made[0].overrides["/redfish/v1/Managers"] = {"Members": [{"@odata.id": "https://evil.example/redfish/v1/M"}]}
    with pytest.raises(BmcError, match="a link leaves this BMC"):
        bmc.status()


def test_the_logout_is_sent_after_a_steps_deadline_has_passed(bmc_config):
    import time

    bmc, made = connect(bmc_config)
    bmc.set_deadline(time.monotonic() + 0.01)  # a step's deadline (provision.bmc.transport), long gone at close
    time.sleep(0.05)
    bmc.close()
    assert made[0].logged_out  # the session's slot on the BMC is freed
