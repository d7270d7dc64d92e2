"""Every simulated node has a BMC (issue 37): `sim up` starts the rack's BMC daemon and writes the BMC variables
into hosts.yml; Redfish power actions really stop and boot the node (its sshd closes; a boot gets a new boot id),
each transition is in the BMC's SEL and its log; node_hung freezes a node until a power cycle; IPMI answers with
ipmitool; `sim down` stops the daemon. Two nodes, under a minute on two cores."""
import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest
import yaml

from provision.sim import rack
from provision.sim.bmc import daemon
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
BOOT_S = 60.0


class Redfish:
    def __init__(self, hostvars: dict) -> None:
        self.address = hostvars["provision_bmc_address"]
        self.ctx = ssl.create_default_context(cafile=hostvars["provision_bmc_ca_file"])
        secret = open(hostvars["provision_bmc_password_file"]).read().splitlines()[0]
        self.auth = "Basic " + base64.b64encode(f"{hostvars['provision_bmc_username']}:{secret}".encode()).decode()

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        conn = http.client.HTTPSConnection(self.address, 443, context=self.ctx, timeout=30)
        try:
            conn.request(method, path, json.dumps(body) if body else None,
                         {"Authorization": self.auth, "Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, json.loads(data) if data else None
        finally:
            conn.close()

    def reset(self, reset_type: str) -> None:
        status, _ = self.call("POST", "/redfish/v1/Systems/DGX/Actions/ComputerSystem.Reset", {"ResetType": reset_type})
        assert status == 204

    def power_state(self) -> str:
        return self.call("GET", "/redfish/v1/Systems/DGX")[1]["PowerState"]

    def sel(self) -> list[dict]:
        return self.call("GET", "/redfish/v1/Systems/DGX/LogServices/SEL/Entries")[1]["Members"]


def ssh(inv, node, command: str, timeout: float = 10.0) -> subprocess.CompletedProcess:
    sdir = rack.state_dir(inv)
    return subprocess.run(["ssh", "-i", str(sdir / "id_ed25519"), "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                           "-o", f"UserKnownHostsFile={sdir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
                           "-o", "KexAlgorithms=curve25519-sha256", f"root@{node.address}", command],
                          capture_output=True, text=True, timeout=timeout)


def boot_id(inv, node) -> str:
    """The node's boot id once its sshd answers (waits for a boot)."""
    deadline = time.monotonic() + BOOT_S
    while time.monotonic() < deadline:
        try:
            done = ssh(inv, node, "cat /run/provision-sim/boot_id")
        except subprocess.TimeoutExpired:
            continue
        if done.returncode == 0:
            return done.stdout.strip()
        time.sleep(0.2)
    raise AssertionError(f"{node.name}: no SSH in {BOOT_S} s")


def port_open(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


def test_bmc_powers_the_node_and_logs_it(tmp_path):
    with own_rack(tmp_path / "rack", nodes=2) as inv:
        hosts = yaml.safe_load((inv / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
        node1, node2 = rack.load_nodes(inv)
        assert hosts["node02"]["provision_bmc_address"] == daemon.address_of(node2.address)
        assert hosts["node02"]["provision_boot_id_path"] == "/run/provision-sim/boot_id"
        assert os.stat(hosts["node02"]["provision_bmc_password_file"]).st_mode & 0o777 == 0o600
        status = provision("sim", "status", "--inventory", str(inv))
        assert f"bmc {daemon.address_of(node2.address)} up" in status.stdout, status.stdout
        bmc = Redfish(hosts["node02"])
        pid = daemon.running(rack.state_dir(inv))

        first = boot_id(inv, node2)
        bmc.reset("ForceOff")
        assert not port_open(node2.address, 22) and bmc.power_state() == "Off"
        assert "STOPPED" in provision("sim", "status", "--inventory", str(inv)).stdout
        bmc.reset("On")
        second = boot_id(inv, node2)
        started = time.monotonic()
        bmc.reset("PowerCycle")
        third = boot_id(inv, node2)
        print(f"power cycle to a new boot id over SSH: {time.monotonic() - started:.2f} s")
        assert len({first, second, third}) == 3 and bmc.power_state() == "On"
        assert [e["MessageId"].rsplit(".", 1)[1] for e in bmc.sel()] == ["DCPowerOff", "DCPowerOn", "DCPowerOff",
                                                                         "DCPowerOn"]
        log = (daemon.folder(rack.state_dir(inv)) / "node02.log").read_text().splitlines()
        assert [line.split(" ", 1)[1] for line in log if " power_" in line] == [
            "power_off", "power_on", "power_off", "power_on"]
        assert daemon.running(rack.state_dir(inv)) == pid  # the daemon outlives the cycles

        assert provision("sim", "fault", "node02", "psu_lost", "--device", "1", "--inventory", str(inv)).returncode == 0
        assert bmc.call("GET", "/redfish/v1/Chassis/DGX/PowerSubsystem/PowerSupplies/PSU_1")[1]["Status"] == {
            "State": "Absent", "Health": "Critical"}
        assert bmc.sel()[-1]["Severity"] == "Critical"
        bmc.reset("ForceOff")  # heal works on a node its BMC powered off
        assert provision("sim", "heal", "node02", "--inventory", str(inv)).returncode == 0
        assert bmc.call("GET", "/redfish/v1/Systems/DGX")[1]["Status"]["Health"] == "OK"
        assert bmc.sel()[-1]["MessageId"].endswith("DCPowerOff")
        bmc.reset("On")

        hung_before = boot_id(inv, node1)
        assert provision("sim", "fault", "node01", "node_hung", "--inventory", str(inv)).returncode == 0
        assert ssh(inv, node1, "true", timeout=15).returncode == 255  # sshd frozen: no banner in ConnectTimeout
        assert Redfish(hosts["node01"]).power_state() == "On"
        Redfish(hosts["node01"]).reset("PowerCycle")
        assert boot_id(inv, node1) != hung_before

        if shutil.which("ipmitool"):
            env = {**os.environ, "IPMI_PASSWORD": open(hosts["node01"]["provision_bmc_password_file"]).read().strip()}
            done = subprocess.run(["ipmitool", "-I", "lanplus", "-H", hosts["node01"]["provision_bmc_address"], "-U",
                                   "admin", "-E", "chassis", "power", "status"], capture_output=True, text=True,
                                  env=env, timeout=30)
            assert done.stdout.strip() == "Chassis Power is on", done.stderr
        sdir = rack.state_dir(inv)
    assert not daemon.running(sdir) and not pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """The process runs (a zombie its new parent has not reaped yet has ended)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False
