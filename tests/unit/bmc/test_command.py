"""``provision bmc``: a table or JSON per host, one line per failed BMC (exit 8), power refused without --yes where
no one can confirm it (exit 9), against the HTTPS stub on 127.0.0.1."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from provision import paths
from tests.unit.bmc import _stub
from tests.unit.bmc.conftest import PASSWORD


def provision(*args, **kw):
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, cwd=paths.ROOT, timeout=120, **kw)


def write_inventory(folder, port: int, password_file: str, ca: str) -> str:
    hosts = folder / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    node01:\n      ansible_host: 127.0.9.5\n"
                     f"      provision_bmc_address: 127.0.0.1:{port}\n      provision_bmc_username: admin\n"
                     f"      provision_bmc_password_file: {password_file}\n      provision_bmc_ca_file: {ca}\n"
                     "    plain:\n      ansible_host: 127.0.9.6\n")
    return str(hosts)


@pytest.fixture
def rack(tmp_path, password_file):
    server = _stub.Stub(tmp_path, PASSWORD)
    yield server, write_inventory(tmp_path, server.port, password_file, str(server.ca))
    server.close()


def test_status_json(rack):
    server, inv = rack
    proc = provision("bmc", "status", "-i", inv, "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)["hosts"]["node01"]
    assert found["power_state"] == "On" and found["bmc"] == f"127.0.0.1:{server.port}"
    assert "plain: no BMC in the inventory" in proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr


def test_status_table(rack):
    _, inv = rack
    proc = provision("bmc", "status", "-i", inv, "--limit", "node01")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["HOST", "BMC", "POWER", "HEALTH", "STATE", "MANAGER", "FIRMWARE",
                                                   "BOOT", "ID"]
    assert proc.stdout.splitlines()[1].split()[-1] == "-"  # the node does not answer SSH: no boot id
    assert proc.stdout.splitlines()[1].split()[2] == "On"


def test_power_needs_yes_without_a_terminal(rack):
    server, inv = rack
    proc = provision("bmc", "power", "off", "-i", inv, "--limit", "node01")
    assert proc.returncode == 9
    assert proc.stderr.strip().splitlines()[-1] == ("provision: error: bmc power off: not confirmed: give --yes "
                                                    "(no terminal to ask on)")
    assert not [r for r in server.requests if r[0] == "POST"]  # nothing reached the BMC


def test_a_failing_bmc_is_one_line_and_exit_8(tmp_path, password_file):
    port = _stub.closed_port()
    ca = tmp_path / "ca.pem"
    ca.write_text(_stub.certificates(tmp_path)[0].read_text())
    inv = write_inventory(tmp_path, port, password_file, str(ca))
    proc = provision("bmc", "log", "-i", inv, "--limit", "node01")
    assert proc.returncode == 8
    assert proc.stderr.strip().splitlines()[-1] == (f"provision: error: node01: BMC 127.0.0.1:{port}: GET "
                                                    "/redfish/v1/: connection refused (nothing listens there)")


def test_insecure_is_said(rack):
    _, inv = rack
    proc = provision("bmc", "status", "-i", inv, "--limit", "node01", "--insecure-bmc")
    assert "--insecure-bmc: the BMCs' TLS certificates are NOT verified" in proc.stderr


def test_power_takes_an_action_and_only_power(rack):
    _, inv = rack
    for argv in (("status", "on"), ("power",)):
        proc = provision("bmc", *argv, "-i", inv)
        assert proc.returncode == 2 and "an action (on, off, cycle, reset) goes with power" in proc.stderr
