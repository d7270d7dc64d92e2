"""IpmiBmc: the password in the child's environment only, ipmitool's outputs parsed, failures one line."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from provision.bmc.ipmi import IpmiBmc
from provision.errors import BmcError
from tests.unit.bmc.conftest import PASSWORD

IPMI = Path(__file__).resolve().parents[2] / "data" / "redfish_client" / "ipmitool"
OUTPUTS = {("chassis", "status"): "chassis_status.txt", ("mc", "info"): "mc_info.txt",
           ("sel", "elist"): "sel_elist.txt", ("sensor",): "sensor.txt"}


class Tool:
    """Records each ipmitool run and answers with the saved outputs."""

    def __init__(self, rc: int = 0, stderr: str = "", power: str = "on"):
        self.calls: list[tuple[list[str], dict]] = []
        self.rc, self.stderr, self.power = rc, stderr, power

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs["env"]))
        command = tuple(argv[argv.index("-R") + 2:])
        if command[:2] == ("chassis", "power"):
            out = f"Chassis Power is {self.power}\n" if command[2] == "status" else "Chassis Power Control: Up/On\n"
        else:
            out = (IPMI / OUTPUTS[command]).read_text() if command in OUTPUTS else ""
        return subprocess.CompletedProcess(argv, self.rc, out if self.rc == 0 else "", self.stderr)


def test_password_only_in_the_childs_environment(bmc_config):
    tool = Tool()
    bmc = IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=tool)
    assert bmc.status() == {"power_state": "On", "health": "OK", "state": "Enabled", "manager_health": None,
                            "firmware_version": "1.74"}
    for argv, env in tool.calls:
        assert PASSWORD not in " ".join(argv) and env["IPMI_PASSWORD"] == PASSWORD
        assert argv[:12] == ["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", "623", "-U", "admin", "-E", "-Z",
                             "-R"]
    assert PASSWORD not in bmc.raw("status")


def test_log_and_sensors(bmc_config):
    bmc = IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=Tool())
    assert [e["severity"] for e in bmc.log()][:2] == ["OK", "Critical"]
    assert bmc.sensors()["fans"][0]["speed_RPM"] == 8400


def test_firmware_is_not_in_ipmi(bmc_config):
    bmc = IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=Tool())
    with pytest.raises(BmcError, match=r"^node01: BMC 127.0.0.1: IPMI has no firmware inventory"):
        bmc.firmware()


@pytest.mark.parametrize("power,sent", [("on", "cycle"), ("off", "on")])
def test_cycle_of_a_node_that_is_off_is_on(bmc_config, power, sent):
    tool = Tool(power=power)
    IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=tool).power("cycle")
    assert tool.calls[-1][0][-3:] == ["chassis", "power", sent]


def test_wrong_password_one_line(bmc_config):
    tool = Tool(rc=1, stderr="Error: Unable to establish IPMI v2 / RMCP+ Session\n")
    with pytest.raises(BmcError) as caught:
        IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=tool).status()
    assert str(caught.value) == ("node01: BMC 127.0.0.1: ipmitool chassis status: cannot log in over IPMI (wrong "
                                 "username or password, or IPMI over LAN disabled): Error: Unable to establish IPMI "
                                 "v2 / RMCP+ Session")


def test_timeout(bmc_config):
    def hang(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])
    with pytest.raises(BmcError, match="ipmitool sel elist: no answer within 5 s"):
        IpmiBmc(bmc_config(protocol="ipmi", port=623), 5, run=hang).log()
