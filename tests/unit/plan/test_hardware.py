"""Hardware balance: NIC line rate against its PCIe link, NVLink against the NIC share, the storage
network against a checkpoint target, rack power. Each figure checked against a hand calculation."""
import copy

import pytest

from provision import profiles
from provision.plan import ERROR, INFO, WARNING, hardware


def _with(name: str, **hca) -> profiles.Profile:
    base = profiles.load(name)
    data = copy.deepcopy(base.data)
    data["hca"].update(hca)
    return profiles.Profile(base.name, data, base.path)


def test_pcie_rates_per_direction():
    # 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s; Gen5 twice that; Gen2 x8: 5 x 8 x 8/10 / 8 = 4.0 GB/s.
    assert hardware.pcie_GBps(4, 16) == pytest.approx(31.5077, abs=1e-3)
    assert hardware.pcie_GBps(5, 16) == pytest.approx(63.0154, abs=1e-3)
    assert hardware.pcie_GBps(2, 8) == pytest.approx(4.0)
    assert hardware.pcie_GBps(7, 16) is None


def test_connectx7_400_on_gen4_x16_is_a_bottleneck_and_connectx6_200_is_not():
    cx7 = _with("h100-sxm5-80g-ndr", pcie={"gen": 4, "width": 16})
    [nic] = [f for f in hardware.balance(cx7) if f.subject.startswith("ConnectX-7")]
    # 400 Gb/s = 50 GB/s against 31.5 GB/s: capped at 31.5 x 8 = 252 Gb/s, 63 % of the line rate.
    assert nic.severity == WARNING
    assert "line rate 50.0 GB/s per direction exceeds its PCIe link (31.5 GB/s)" in nic.text
    assert "caps it at 252 Gb/s (63%)" in nic.text
    [cx6] = [f for f in hardware.balance(profiles.load("a100-pcie-40g-hdr")) if f.subject.startswith("ConnectX-6")]
    assert cx6.severity == INFO and "25.0 GB/s per direction fits its PCIe link (31.5 GB/s, 79% of it)" in cx6.text


def test_the_gpu_link_bounds_a_gpudirect_path_too():
    # An NDR NIC on Gen5 behind a GPU on Gen4: the path is the GPU's 31.5 GB/s.
    p = profiles.load("h100-sxm5-80g-ndr")
    data = copy.deepcopy(p.data)
    data["gpu"]["pcie"] = {"gen": 4, "width": 16}
    [nic] = [f for f in hardware.balance(profiles.Profile(p.name, data, p.path)) if f.subject.startswith("ConnectX")]
    assert nic.severity == WARNING and "the GPU's PCIe Gen4 x16 (31.5 GB/s)" in nic.text


def test_nvlink_against_the_nic_share():
    # H100: 18 links x 26.562 GB/s = 478 GB/s per GPU; its share of 8 x 400 Gb/s over 8 GPUs is 50 GB/s.
    [nv] = [f for f in hardware.balance(profiles.load("h100-sxm5-80g-ndr")) if f.subject.startswith("NVLink")]
    assert nv.severity == INFO and "478 GB/s per GPU, 10x its NIC share (50.0 GB/s)" in nv.text
    [pcie] = [f for f in hardware.balance(profiles.load("a100-pcie-40g-hdr")) if f.subject.startswith("GPU ")]
    assert "no NVLink" in pcie.text and "3.1 GB/s per GPU" in pcie.text  # 200 Gb/s / 8 / 8 GPUs


STORAGE = {"bond": "bond0", "mode": "802.3ad", "slaves": 2, "slave_speed_Mbps": 25000, "checkpoint_path": "/ckpt"}
SEVEN_B = {"parameters": 7e9, "bytes_per_parameter": 14, "seconds": 20}


def test_a_7b_checkpoint_through_one_25_Gbps_nic_against_a_bonded_pair():
    # 7e9 x 14 B (mixed-precision Adam) = 98 GB. 25 Gb/s = 3.125 GB/s: 98 / 3.125 = 31.36 s > 20 s allowed.
    # Two bonded (802.3ad, 50 Gb/s): 15.68 s <= 20 s, with several streams (one flow stays on one slave).
    assert hardware.checkpoint_s(7e9, 14, 25) == pytest.approx(31.36)
    assert hardware.checkpoint_s(7e9, 14, 50) == pytest.approx(15.68)
    [one] = hardware.checkpoint(SEVEN_B, {**STORAGE, "slaves": 1})
    assert one.severity == WARNING and "98 GB through one 25 Gb/s NIC (25 Gb/s)" in one.text
    assert "at least 31.4 s, allowed 20 s" in one.text and "asynchronous" in one.text
    [two] = hardware.checkpoint(SEVEN_B, STORAGE)
    assert two.severity == INFO and "2 x 25 Gb/s 802.3ad (50 Gb/s)" in two.text and "15.7 s" in two.text
    assert "one TCP flow uses one slave (25 Gb/s)" in two.text
    [backup] = hardware.checkpoint(SEVEN_B, {**STORAGE, "mode": "active-backup"})
    assert backup.severity == WARNING and "(25 Gb/s)" in backup.text  # active-backup carries on one link


def test_rack_power_against_the_budget():
    # 4 x DGX H100 at 10.2 kW = 40.8 kW: over a 40 kW rack; 3 fit.
    [over] = hardware.rack_power(profiles.load("h100-sxm5-80g-ndr"), {"budget_kW": 40, "nodes": 4})
    assert over.severity == ERROR and "40.8 kW at maximum power exceeds the rack budget of 40 kW: 3 such" in over.text
    [fits] = hardware.rack_power(profiles.load("a100-sxm4-80g-hdr"), {"budget_kW": 40, "nodes": 4})
    assert fits.severity == INFO and "26.0 kW" in fits.text
    [unknown] = hardware.rack_power(profiles.load("rtx4090-pcie"), {"budget_kW": 40, "nodes": 4})
    assert unknown.severity == WARNING and "the rest of the node is unknown" in unknown.text
