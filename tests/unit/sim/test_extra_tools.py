"""Simulated lspci, bonding, gpu_burn, dcgmi, nvbandwidth and fio, and a hung tool."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import bonding
import dcgmi
import fio
import gpu_burn
import lspci
import nvbandwidth
from tests.unit.sim.conftest import TOOLS


def test_lspci_reports_downgraded_link(sim):
    sim.model["gpus"][0]["pcie"].update(gen_current=1)
    sim.write()
    _, out, _ = sim.run(lspci, ["-vv", "-s", "0000:19:00.0"])
    assert out.startswith("19:00.0 3D controller: NVIDIA Corporation Device 2330")
    assert "LnkCap:\tPort #0, Speed 32GT/s, Width x16" in out
    assert "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)" in out
    _, out, _ = sim.run(lspci, ["-d", "15b3:"])
    assert out.count("Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]") == 8


def test_bonding_slave_down(sim):
    sim.model["storage"]["bond"]["slaves"][0]["mii_status"] = "down"
    sim.write()
    status, out, _ = sim.run(bonding, [])
    assert status == 0 and "Bonding Mode: IEEE 802.3ad Dynamic link aggregation" in out
    assert "\tNumber of ports: 1" in out
    assert "Slave Interface: ens1f0\nMII Status: down\nSpeed: Unknown" in out
    assert "Slave Interface: ens1f1\nMII Status: up\nSpeed: 25000 Mbps" in out
    assert sim.run(bonding, ["bond1"])[0] == 1


def test_gpu_burn_faulty_still_exits_0(sim):
    sim.model["faults"]["gpu_burn_faulty"] = [2]
    sim.write()
    status, out, _ = sim.run(gpu_burn, ["30"])
    assert status == 0 and "Burning for 30 seconds." in out and "\r100.0%  proc'd: " in out
    assert "\tGPU 2: FAULTY" in out and "\tGPU 1: OK" in out and "(WARNING!)" in out


def test_dcgmi_diag_fails_downtrained_gpu(sim):
    sim.model["gpus"][4]["pcie"]["width_current"] = 8
    sim.write()
    _, out, _ = sim.run(dcgmi, ["diag", "-r", "3"])
    lines = out.splitlines()
    assert all(len(line) == 78 for line in lines[1:])
    assert "| PCIe                      | Pass - GPUs: 0, 1, 2, 3, 5, 6, 7               |" in lines
    assert "|                           | Fail - GPU: 4                                  |" in lines
    assert "| Persistence Mode          | Fail                                           |" in lines


def test_nvbandwidth_inactive_links(sim):
    for link in sim.model["gpus"][1]["nvlink"]["links"][:9]:
        link["active"] = False
    sim.write()
    _, out, _ = sim.run(nvbandwidth, ["-t", "device_to_device_memcpy_read_ce"])
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert rows[0][1] == "N/A" and float(rows[0][2]) == pytest.approx(185.0, rel=0.03)
    assert float(rows[0][3]) == pytest.approx(370.0, rel=0.03)


def test_fio_json(sim):
    sim.model["faults"]["slow_storage"] = 0.5
    sim.write()
    _, out, _ = sim.run(fio, ["--name=w", "--rw=write", "--bs=1M", "--iodepth=64", "--output-format=json"])
    job = json.loads(out)["jobs"][0]
    assert job["write"]["bw"] / 1024 == pytest.approx(3050.0, rel=0.03)


def test_hung_tool_never_returns(sim):
    sim.model["faults"]["hung_tools"] = ["all_reduce_perf"]
    sim.write()
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, str(TOOLS / "all_reduce_perf.py"), "-g", "8"], env=sim.env(),
                       capture_output=True, timeout=1.0)
