"""The simulated BMC's Redfish service, standalone over an H100 node's model (no rack): TLS from the rack CA,
DSP0266 authentication, navigation from the service root, power actions with their SEL entries and log lines, and
what each BMC fault kind changes in what a client sees."""
from __future__ import annotations

import base64
import copy
import http.client
import json
import socket
import ssl

import pytest

from provision.sim import hwmodel
from provision.sim.bmc import daemon, faultkinds, standalone
from provision.sim.bmc.power import FakePower
from provision.sim.bmc.sel import HUGE_ENTRIES

PASSWORD = "test-password"
ADDRESS = "127.100.250.7"


@pytest.fixture
def bmc(tmp_path, profile):
    model = hwmodel.build(copy.deepcopy(profile), "node01", 0)
    power, faults = FakePower(), {}
    server = standalone.serve(model, ADDRESS, tmp_path, PASSWORD, power, faults)
    client = Client(server.server_address[1], tmp_path / "ca.pem")
    client.model, client.power, client.faults, client.folder = model, power, faults, tmp_path
    yield client
    server.shutdown()
    server.server_close()


class Client:
    def __init__(self, port: int, ca) -> None:
        self.port, self.ctx = port, ssl.create_default_context(cafile=str(ca))
        self.auth = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}

    def call(self, method: str, path: str, body: dict | None = None, headers: dict | None = None, auth=True,
             timeout: float = 10.0):
        conn = http.client.HTTPSConnection(ADDRESS, self.port, context=self.ctx, timeout=timeout)
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None,
                         {**(self.auth if auth else {}), "Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def get(self, path: str, **kw) -> dict:
        status, _, data = self.call("GET", path, **kw)
        assert status == 200, (path, status, data[:200])
        return json.loads(data)

    def reset(self, reset_type: str) -> int:
        return self.call("POST", "/redfish/v1/Systems/DGX/Actions/ComputerSystem.Reset", {"ResetType": reset_type})[0]

    def sel(self) -> list[dict]:
        return self.get("/redfish/v1/Systems/DGX/LogServices/SEL/Entries")["Members"]


def test_service_root_and_metadata_need_no_credentials(bmc):
    root = bmc.get("/redfish/v1", auth=False)
    assert root["Links"]["Sessions"]["@odata.id"] == "/redfish/v1/SessionService/Sessions"
    status, headers, data = bmc.call("GET", "/redfish/v1/$metadata", auth=False)
    assert status == 200 and headers["OData-Version"] == "4.0"
    assert b'<edmx:Reference Uri="/redfish/v1/schema/ComputerSystem_v1.xml">' in data
    assert bmc.call("GET", "/redfish/v1/schema/ComputerSystem_v1.xml", auth=False)[0] == 200


def test_bad_credentials_get_401_with_a_redfish_error(bmc):
    status, headers, data = bmc.call("GET", "/redfish/v1/Systems", headers={
        "Authorization": "Basic " + base64.b64encode(b"admin:wrong").decode()})
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert json.loads(data)["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith("NoValidSession")
    assert bmc.call("GET", "/redfish/v1/Systems", auth=False)[0] == 401


def test_session_login_token_and_logout(bmc):
    status, headers, _ = bmc.call("POST", "/redfish/v1/SessionService/Sessions",
                                  {"UserName": "admin", "Password": PASSWORD}, auth=False)
    assert status == 201
    token, location = headers["X-Auth-Token"], headers["Location"]
    assert bmc.get("/redfish/v1/Systems", auth=False, headers={"X-Auth-Token": token})["Members@odata.count"] == 1
    assert bmc.call("DELETE", location, auth=False, headers={"X-Auth-Token": token})[0] == 204
    assert bmc.call("GET", "/redfish/v1/Systems", auth=False, headers={"X-Auth-Token": token})[0] == 401
    assert bmc.call("POST", "/redfish/v1/SessionService/Sessions", {"UserName": "admin", "Password": "x"},
                    auth=False)[0] == 401


def test_tree_from_the_service_root_reports_the_model(bmc):
    root = bmc.get("/redfish/v1")
    system = bmc.get(bmc.get(root["Systems"]["@odata.id"])["Members"][0]["@odata.id"])
    assert system["PowerState"] == "On" and system["Model"] == "DGXH100"
    assert set(system["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"]) >= {
        "On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"}
    manager = bmc.get(bmc.get(root["Managers"]["@odata.id"])["Members"][0]["@odata.id"])
    assert manager["FirmwareVersion"] == bmc.model["bmc"]["firmware_revision"]
    chassis = bmc.get(bmc.get(root["Chassis"]["@odata.id"])["Members"][0]["@odata.id"])
    supplies = bmc.get(bmc.get(chassis["PowerSubsystem"]["@odata.id"])["PowerSupplies"]["@odata.id"])
    assert supplies["Members@odata.count"] == 6
    assert bmc.get(supplies["Members"][0]["@odata.id"])["PowerCapacityWatts"] == 3300
    fans = bmc.get(bmc.get(chassis["ThermalSubsystem"]["@odata.id"])["Fans"]["@odata.id"])
    assert bmc.get(fans["Members"][0]["@odata.id"])["SpeedPercent"]["SpeedRPM"] > 0
    sensor = bmc.get(f"{chassis['Sensors']['@odata.id']}/GPU_SXM_1_Temp")
    assert sensor["Reading"] == bmc.model["gpus"][0]["temp_C"] and sensor["Thresholds"]["UpperCritical"]["Reading"]
    inventory = bmc.get(bmc.get(root["UpdateService"]["@odata.id"])["FirmwareInventory"]["@odata.id"])
    ids = {m["@odata.id"].rsplit("/", 1)[1] for m in inventory["Members"]}
    assert {"HostBMC_0", "HostBIOS_0", "CPLDMB_0", "HGX_FW_GPU_SXM_8", "HGX_FW_NVSwitch_3"} <= ids
    gpu = bmc.get("/redfish/v1/UpdateService/FirmwareInventory/HGX_FW_GPU_SXM_1")
    assert gpu["Version"] == bmc.model["gpus"][0]["vbios_version"]


def test_power_actions_switch_and_are_logged(bmc):
    assert bmc.reset("ForceOff") == 204 and not bmc.power.is_on
    assert bmc.get("/redfish/v1/Systems/DGX")["PowerState"] == "Off"
    assert bmc.reset("PowerCycle") == 204 and bmc.power.is_on  # a cycle of an off node powers it on
    assert bmc.reset("ForceRestart") == 204
    assert [e["MessageId"] for e in bmc.sel()] == ["OpenBMC.0.1.DCPowerOff", "OpenBMC.0.1.DCPowerOn",
                                                   "OpenBMC.0.1.DCPowerOff", "OpenBMC.0.1.DCPowerOn"]
    lines = (bmc.folder / "node01.log").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [
        "reset ForceOff", "power_off", "reset PowerCycle", "power_on", "reset ForceRestart", "power_off", "power_on"]
    assert bmc.reset("Bogus") == 400


def test_power_ignored_accepts_and_pretends(bmc):
    bmc.faults["bmc_power_ignored"] = {}
    assert bmc.reset("ForceOff") == 204
    assert bmc.power.is_on and bmc.get("/redfish/v1/Systems/DGX")["PowerState"] == "Off"
    del bmc.faults["bmc_power_ignored"]
    assert bmc.get("/redfish/v1/Systems/DGX")["PowerState"] == "On" and bmc.sel() == []


def test_html_and_garbage_answers(bmc):
    bmc.faults["bmc_html"] = {}
    status, headers, data = bmc.call("GET", "/redfish/v1/Systems/DGX")
    assert status == 200 and headers["Content-Type"].startswith("text/html") and data.startswith(b"<!DOCTYPE")
    bmc.faults.clear()
    bmc.faults["bmc_garbage"] = {}
    status, headers, data = bmc.call("GET", "/redfish/v1")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    with pytest.raises(ValueError):
        json.loads(data)


def test_expired_certificate_fails_verification(bmc):
    bmc.faults["bmc_cert_expired"] = {}
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        bmc.call("GET", "/redfish/v1")


def test_unresponsive_bmc_accepts_and_never_answers(bmc):
    bmc.faults["bmc_unresponsive"] = {}
    with socket.create_connection((ADDRESS, bmc.port), timeout=2):
        pass  # the TCP connection is accepted
    with pytest.raises((TimeoutError, socket.timeout)):
        bmc.call("GET", "/redfish/v1", timeout=1.0)


def test_huge_sel_is_paged(bmc):
    bmc.faults["sel_huge"] = {}
    first = bmc.get("/redfish/v1/Systems/DGX/LogServices/SEL/Entries")
    assert first["Members@odata.count"] == HUGE_ENTRIES and len(first["Members"]) == 1000
    second = bmc.get(first["Members@odata.nextLink"])
    assert second["Members"][0]["Id"] == "1001"
    size = len(json.dumps(first["Members"])) * HUGE_ENTRIES // 1000
    assert 8_000_000 < size < 14_000_000


def test_model_faults_change_health_sensors_and_firmware(bmc):
    faultkinds.psu_lost(bmc.model, "2", None)
    faultkinds.over_temp(bmc.model, "3", None)
    faultkinds.firmware_stale(bmc.model, "node", None)
    psu = bmc.get("/redfish/v1/Chassis/DGX/PowerSubsystem/PowerSupplies/PSU_2")
    assert psu["Status"] == {"State": "Absent", "Health": "Critical"}
    power = bmc.get("/redfish/v1/Chassis/DGX/PowerSubsystem")
    assert power["PowerSupplyRedundancy"][0]["Status"]["Health"] == "Warning"
    sensor = bmc.get("/redfish/v1/Chassis/DGX/Sensors/GPU_SXM_4_Temp")
    assert sensor["Reading"] == 95 and sensor["Status"]["Health"] == "Critical"
    assert bmc.get("/redfish/v1/Managers/BMC")["FirmwareVersion"] == faultkinds.STALE["bmc"]
    assert bmc.get("/redfish/v1/UpdateService/FirmwareInventory/CPLDMB_0")["Version"] == "0.2.1.6"
    assert bmc.get("/redfish/v1/Systems/DGX")["Status"]["Health"] == "Critical"


def test_fault_sel_entries_are_critical_and_healed(bmc):
    faultkinds.over_temp(bmc.model, "0", None)
    faultkinds.sel_event(bmc.folder, "node01", {"kind": "over_temp", "device": "0", "label": "x"}, bmc.model)
    faultkinds.sel_event(bmc.folder, "node01", {"kind": "xid79", "device": "1", "label": "x"}, bmc.model)
    entries = bmc.sel()
    assert [e["Severity"] for e in entries] == ["Critical", "Critical"]
    assert entries[0]["MessageId"] == "OpenBMC.0.1.SensorThresholdCriticalHighGoingHigh"
    assert "Xid 79" in entries[1]["Message"] and entries[1]["Created"].endswith("+00:00")
    faultkinds.Sel(bmc.folder, "node01").remove("xid79")
    assert [e["MessageId"] for e in bmc.sel()] == ["OpenBMC.0.1.SensorThresholdCriticalHighGoingHigh"]


def test_bmc_address_is_the_node_address_plus_100():
    assert daemon.address_of("127.0.1.5") == "127.100.1.5"
    assert daemon.address_of("127.200.3.4") == "127.44.3.4"
