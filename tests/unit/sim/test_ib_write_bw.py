"""Simulated ib_write_bw: two processes meet over TCP and report the model's bandwidth."""
from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

import ib_write_bw
from provision.parsers import parse_tool
from tests.unit.sim.conftest import TOOLS

ROW = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", re.M)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pair(sim, server_args: list[str], client_args: list[str]) -> tuple[subprocess.CompletedProcess, ...]:
    """Run a server and a client process against the same model; returns both results."""
    port = str(_free_port())
    script = [sys.executable, str(TOOLS / "ib_write_bw.py")]
    server = subprocess.Popen(script + server_args + ["-p", port], env=sim.env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    banner = [server.stdout.readline() for _ in range(3)]
    assert "Waiting for client to connect" in "".join(banner), server.stderr.read()
    client = subprocess.run(script + client_args + ["-p", port, "127.0.0.1"], env=sim.env(), text=True,
                            capture_output=True, timeout=20)
    out, err = server.communicate(timeout=20)
    return subprocess.CompletedProcess(server.args, server.returncode, "".join(banner) + out, err), client


def test_healthy_pair_reports_profile_bandwidth(sim):
    server, client = _pair(sim, ["-d", "mlx5_1", "--report_gbits"], ["-d", "mlx5_0", "--report_gbits"])
    assert client.returncode == 0 and server.returncode == 0, client.stderr + server.stderr
    assert "Waiting for client to connect" in server.stdout
    for out in (server.stdout, client.stdout):
        size, iters, peak, avg, _rate = ROW.search(out).groups()
        assert (size, iters) == ("65536", "5000")
        assert abs(float(avg) - 392.3) <= 392.3 * 0.021
        assert "BW average[Gb/sec]" in out
    assert ROW.search(server.stdout).group(4) == ROW.search(client.stdout).group(4)
    assert "Device         : mlx5_0" in client.stdout and "Device         : mlx5_1" in server.stdout


def test_rate_slow_hca_and_pcie_lower_bandwidth(sim):
    sim.model["hcas"][1]["rate_Gbps"] = 200
    sim.model["faults"]["slow_hca"] = {"mlx5_0": 0.7}
    sim.write()
    a = ib_write_bw.local_side(sim.model, ib_write_bw.perftest_cli.parse("x", ["-d", "mlx5_0"]))[0]
    b = ib_write_bw.local_side(sim.model, ib_write_bw.perftest_cli.parse("x", ["-d", "mlx5_1"]))[0]
    c = ib_write_bw.local_side(sim.model, ib_write_bw.perftest_cli.parse("x", ["-d", "mlx5_2"]))[0]
    bw = ib_write_bw.bandwidth_Gbps(sim.model, b, c, 65536)
    assert abs(bw - 392.3 / 2) <= 392.3 / 2 * 0.021
    bw = ib_write_bw.bandwidth_Gbps(sim.model, a, b, 65536)
    assert abs(bw - 392.3 * 0.5 * 0.7) <= 392.3 * 0.35 * 0.021
    sim.model["hcas"][3]["pcie"]["gen_current"] = 4
    sim.write()
    d = ib_write_bw.local_side(sim.model, ib_write_bw.perftest_cli.parse("x", ["-d", "mlx5_3"]))[0]
    assert ib_write_bw.bandwidth_Gbps(sim.model, c, d, 65536) < 230


def test_mbsec_units_and_duration(sim):
    server, client = _pair(sim, ["-d", "mlx5_1", "-D", "5"], ["-d", "mlx5_0", "-D", "5", "-s", "8388608"])
    assert client.returncode == 0, client.stderr
    size, iters, _peak, avg, _rate = ROW.search(client.stdout).groups()
    assert size == "8388608" and "BW average[MB/sec]" in client.stdout
    assert abs(float(avg) - 392.3e9 / 8 / 1e6) <= 392.3e9 / 8 / 1e6 * 0.021  # MB = 10^6 bytes (CONTRACT.md)
    assert abs(int(iters) - 392.3e9 / 8 * 5 / 8388608) <= 392.3e9 / 8 * 5 / 8388608 * 0.021


def test_down_port_and_missing_device_fail(sim):
    sim.model["hcas"][4].update(state="Down", physical_state="Disabled")
    sim.write()
    status, _, err = sim.run(ib_write_bw, ["-d", "mlx5_4", "127.0.0.1"])
    assert status == 1 and "Port number 1 state is Down" in err
    status, _, err = sim.run(ib_write_bw, ["-d", "mlx5_9", "127.0.0.1"])
    assert status == 1 and "IB device mlx5_9 not found" in err
    sim.model["hcas"] = []
    sim.write()
    status, _, err = sim.run(ib_write_bw, [])
    assert status == 1 and "Did not detect devices" in err


def test_client_without_server_cannot_connect(sim):
    status, _, err = sim.run(ib_write_bw, ["-d", "mlx5_0", "-p", str(_free_port()), "127.0.0.1"])
    assert status == 1 and "Couldn't connect to 127.0.0.1" in err


def _parsed(out: str) -> dict:
    return parse_tool("perftest", out)


def test_round_trip_gbits(sim):
    sim.model["hcas"][1]["rate_Gbps"] = 200
    sim.write()
    server, client = _pair(sim, ["-d", "mlx5_1", "--report_gbits"], ["-d", "mlx5_0", "--report_gbits"])
    for out, device in ((client.stdout, "mlx5_0"), (server.stdout, "mlx5_1")):
        r = _parsed(out)
        assert (r["test"], r["device"], r["link_type"], r["units"]) == ("RDMA_Write BW", device, "IB", "Gb/sec")
        assert (r["msg_size"], r["iterations"]) == (65536, 5000)
        assert r["bw_avg_Gbps"] == pytest.approx(392.3 / 2, rel=0.021)


def test_round_trip_mbsec(sim):
    server, client = _pair(sim, ["-d", "mlx5_1"], ["-d", "mlx5_0"])
    r = _parsed(client.stdout)
    assert r["units"] == "MB/sec"
    assert r["bw_avg_Gbps"] == pytest.approx(392.3, rel=0.021)
