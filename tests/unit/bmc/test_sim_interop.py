"""The client against the simulated rack's BMC (provision/sim/bmc/standalone.py: the Redfish service ``sim up``
serves, over an H100 node's model, one process, no rack): every read, power by Reset, and the faults a client must
name in one line. The simulator's own tests check the service; these check that this client reads it as it is."""
from __future__ import annotations

import copy
import os

import pytest
import yaml

from provision import paths
from provision.bmc import client
from provision.bmc.config import BmcConfig
from provision.errors import BmcError

ADDRESS = "127.100.250.9"
PASSWORD = "interop-pw-2718"  # IPMI v2 (RMCP+) passwords are at most 20 bytes


@pytest.fixture
def sim_bmc(tmp_path):
    from provision.sim import hwmodel
    from provision.sim.bmc import standalone
    from provision.sim.bmc.power import FakePower

    profile = yaml.safe_load((paths.ROOT / "provision/profiles/data/h100-sxm5-80g-ndr.yaml").read_text())
    model = hwmodel.build(copy.deepcopy(profile), "node01", 0)
    power, faults = FakePower(), {}
    server = standalone.serve(model, ADDRESS, tmp_path, PASSWORD, power, faults)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    os.chmod(password, 0o600)
    port = server.server_address[1]
    cfg = BmcConfig(host="node01", address=f"{ADDRESS}:{port}", protocol="redfish", hostname=ADDRESS, port=port,
                    username="admin", password_file=str(password), ca_file=str(tmp_path / "ca.pem"))
    yield cfg, power, faults, server
    server.shutdown()
    server.server_close()


def test_reads(sim_bmc):
    cfg, _, _, _ = sim_bmc
    bmc = client.connect(cfg, 10)
    try:
        status = bmc.status()
        assert status["power_state"] == "On" and status["health"] == "OK" and status["firmware_version"]
        assert isinstance(bmc.log(), list)
        sensors = bmc.sensors()
        assert sensors["sensors"] and sensors["power_supplies"] and sensors["fans"]
        assert {f["id"] for f in bmc.firmware()}
        assert PASSWORD not in "".join(bmc.raw(w) for w in ("status", "sel", "sensors", "firmware"))
    finally:
        bmc.close()


def test_power_cycle_is_logged(sim_bmc):
    cfg, power, _, _ = sim_bmc
    bmc = client.connect(cfg, 10)
    try:
        before = len(bmc.log())
        bmc.power("cycle")
    finally:
        bmc.close()
    again = client.connect(cfg, 10)
    try:
        assert len(again.log()) > before
    finally:
        again.close()


@pytest.mark.parametrize("fault,words", [
    ("bmc_html", "answered HTML"), ("bmc_garbage", "answered invalid JSON"),
    ("bmc_cert_expired", "TLS: the BMC's certificate has expired"), ("sel_huge", "over the 8 MiB cap"),
])
def test_faults_are_one_line(sim_bmc, fault, words):
    cfg, _, faults, _ = sim_bmc
    faults[fault] = {}
    with pytest.raises(BmcError) as caught:
        bmc = client.connect(cfg, 10)
        try:
            bmc.log()
        finally:
            bmc.close()
    assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_unresponsive_costs_one_timeout(sim_bmc):
    cfg, _, faults, _ = sim_bmc
    faults["bmc_unresponsive"] = {}
    with pytest.raises(BmcError, match="no answer within 1 s") as caught:
        client.connect(cfg, 1)
    assert cfg.address in str(caught.value) and "\n" not in str(caught.value)  # its cost: bench/bmc_timeouts.py


@pytest.mark.skipif(not __import__("shutil").which("ipmitool"), reason="ipmitool is not installed")
def test_ipmi_through_ipmitool(sim_bmc, tmp_path):
    """Real ipmitool (lanplus) against the simulated BMC's pyghmi endpoint: status and power work; what it does not
    serve (the SEL) is one line."""
    import socket

    from provision.sim.bmc import ipmi as sim_ipmi

    cfg, _, _, server = sim_bmc
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((ADDRESS, 0))
        port = probe.getsockname()[1]
    sim_ipmi.serve([server.bmc], [ADDRESS], port)
    ipmi_cfg = BmcConfig(host="node01", address=f"{ADDRESS}:{port}", protocol="ipmi", hostname=ADDRESS, port=port,
                         username="admin", password_file=cfg.password_file)
    bmc = client.connect(ipmi_cfg, 20)
    try:
        status = bmc.status()
        assert status["power_state"] == "On" and status["health"] == "OK" and status["firmware_version"]
        bmc.power("off")
        assert bmc.backend.tool("chassis", "power", "status").strip() == "Chassis Power is off"
        with pytest.raises(BmcError, match=r"ipmitool sel elist: .*Invalid command"):
            bmc.log()
    finally:
        bmc.close()
