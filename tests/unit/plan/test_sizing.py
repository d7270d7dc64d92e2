"""Cluster sizing against hand calculations (two-layer fat-tree of R-port switches, D:U per leaf)."""
import math

import pytest

from provision import profiles
from provision.errors import ProvisionError
from provision.plan import sizing


def test_10000_pcie_a100_one_hdr_hca_per_node_on_40_port_switches_need_two_zones():
    # Hand calculation: 10,000 GPUs / 8 per node = 1,250 nodes, one HDR HCA each = 1,250 endpoints on one plane.
    # 40 ports at 1:1 = 20 down + 20 up per leaf; a spine reaches 40 leaves, so one tree carries 40 x 20 = 800.
    # 1,250 > 800: ceil(1,250 / 800) = 2 zones of 625; ceil(625 / 20) = 32 leaves and ceil(32 x 20 / 40) = 16
    # spines per zone; 64 leaves + 32 spines = 96 switches. Cables: 1,250 HCA-leaf + 64 x 20 = 1,280 leaf-spine.
    # GPU power: 10,000 x 250 W (A100 PCIe 40GB TDP) = 2.5 MW. DeepSeek's Fire-Flyer 2 is two zones as well.
    s = sizing.size(10_000, profiles.load("a100-pcie-40g-hdr"), radix=40)
    assert (s.nodes, s.hcas, s.planes, s.capacity, s.zones) == (1250, 1250, 1, 800, 2)
    assert (s.down, s.up, s.leaves_per_zone, s.spines_per_zone) == (20, 20, 32, 16)
    assert (s.leaves, s.spines, s.cables) == (64, 32, 1250 + 1280)
    assert s.gpu_MW == pytest.approx(2.5)
    assert s.it_MW is None and "no power.node_max_W" in s.power_source  # a PCIe server's power is the site's to give
    with_power = sizing.size(10_000, profiles.load("a100-pcie-40g-hdr"), radix=40, node_W=4000, pue=1.5)
    assert with_power.it_MW == pytest.approx(1250 * 4000 / 1e6) and with_power.facility_MW == pytest.approx(7.5)


def test_10000_h100_eight_ndr_hcas_per_node_on_64_port_switches_are_eight_rail_planes():
    # Hand calculation: 1,250 nodes x 8 HCAs = 10,000 HCAs; rail-optimized, 8 planes of 1,250 endpoints each.
    # 64 ports at 1:1 = 32 down + 32 up; one tree carries 64 x 32 = 2,048 >= 1,250: one zone per plane.
    # Per plane ceil(1,250 / 32) = 40 leaves, ceil(40 x 32 / 64) = 20 spines; 8 planes: 320 leaves, 160 spines.
    # Cables: 10,000 HCA-leaf + 320 x 32 = 10,240 leaf-spine = 20,240.
    # Power: GPUs 10,000 x 700 W = 7.0 MW; IT 1,250 x 10.2 kW (DGX H100 maximum) = 12.75 MW; x PUE 1.2 = 15.3 MW.
    s = sizing.size(10_000, profiles.load("h100-sxm5-80g-ndr"), radix=64)
    assert (s.nodes, s.hcas, s.planes, s.capacity, s.zones) == (1250, 10_000, 8, 2048, 1)
    assert (s.leaves_per_zone, s.spines_per_zone, s.leaves, s.spines) == (40, 20, 320, 160)
    assert s.cables == 10_000 + 10_240
    assert (s.gpu_MW, s.it_MW, s.facility_MW) == (pytest.approx(7.0), pytest.approx(12.75), pytest.approx(15.3))
    text = "\n".join(s.lines())
    assert "8 rail planes" in text and "320 leaves, 160 spines, 480 in all" in text and "= 20240" in text


def test_oversubscription_moves_ports_from_spines_to_hosts():
    # 2:1 on 64 ports: 42 down (64 x 2 // 3), 22 up; a tree carries 64 x 42 = 2,688; 1,250 endpoints per plane:
    # ceil(1,250 / 42) = 30 leaves, ceil(30 x 22 / 64) = 11 spines.
    s = sizing.size(10_000, profiles.load("h100-sxm5-80g-ndr"), radix=64, oversubscription="2:1")
    assert (s.down, s.up, s.capacity, s.leaves_per_zone, s.spines_per_zone) == (42, 22, 2688, 30, 11)
    assert s.spines_per_zone == math.ceil(30 * 22 / 64)


def test_the_100000_h100_cluster_is_about_150_MW():
    # 12,500 DGX H100 x 10.2 kW = 127.5 MW IT; x 1.2 = 153 MW (the seed's "100,000 H100s as 150 MW").
    s = sizing.size(100_000, profiles.load("h100-sxm5-80g-ndr"), radix=64)
    assert s.it_MW == pytest.approx(127.5) and s.facility_MW == pytest.approx(153.0)
    assert s.zones == 7  # 12,500 endpoints per plane over 2,048 per tree


def test_burnin_budget_adds_the_per_node_checks_and_the_cluster_rounds():
    s = sizing.size(64, profiles.load("h100-sxm5-80g-ndr"))
    # ib_write_bw: 5 s x 8 HCAs one after another; gpu_stress 60 s: both inside the per-node figure.
    assert s.node_burnin_s >= 60 + 40
    assert s.cluster_burnin_s == sizing.CHECK_OVERHEAD_s + (40 + sizing.CHECK_OVERHEAD_s) + (
        sizing.FIXED_s["nccl_allreduce"] + sizing.CHECK_OVERHEAD_s)


@pytest.mark.parametrize("kwargs, text", [
    ({"gpus": 0}, "--gpus: at least 1"), ({"radix": 41}, "--switch-radix: an even port count"),
    ({"oversubscription": "2-1"}, "--oversubscription '2-1': down:up"), ({"pue": 0.9}, "--pue: at least 1.0"),
    ({"oversubscription": "1:100"}, "--oversubscription 1:100: leaves 0 down and 64 up ports of 64"),
    ({"pue": float("nan")}, "--pue: a finite number"), ({"pue": float("inf")}, "--pue: at most 10"),
    ({"node_W": -5.0}, "--node-power-W: a positive number"), ({"node_W": float("inf")}, "--node-power-W: a positive"),
])
def test_bad_arguments_are_one_line_errors(kwargs, text):
    args = {"gpus": 64, "profile": profiles.load("h100-sxm5-80g-ndr"), **kwargs}
    with pytest.raises(ProvisionError, match="^" + text.replace("(", r"\(")):
        sizing.size(**args)
