"""Cluster sizing against hand calculations (two-layer fat-tree of R-port switches, D:U per leaf)."""
import math

import pytest

from provision import profiles
from provision.errors import ProvisionError
from provision.plan import sizing


def test_10000_pcie_a100_one_hdr_hca_per_node_on_40_port_switches_need_two_zones():
    # Hand calculation: 10,000 GPUs / 8 per node = 1,250 nodes, one HDR HCA each = 1,250 endpoints on one plane.
    # 40 ports at 1:1 = 20 down + 20 up per leaf; a spine reaches 40 leaves, so one tree carries 40 x 20 = 800.
    # 1,250 (+1 subnet manager port) > 800: 2 zones of 626; ceil(626 / 20) = 32 leaves per zone. Spines: 32 x 20 =
    # 640 uplinks would fit 16 spines of 40 ports, but 20 uplinks over 16 spines is 1.25 cables a leaf-spine pair;
    # an even tree gives each leaf k cables to each of 20 / k spines with 32 x k <= 40: k = 1, 20 spines (32 of
    # their 40 ports used). 2 x (32 + 20) = 104 switches (issue 23: 96 before). Cables: 1,250 + 64 x 20 = 1,280.
    # GPU power: 10,000 x 250 W (A100 PCIe 40GB TDP) = 2.5 MW. DeepSeek's Fire-Flyer 2 is two zones as well.
    s = sizing.size(10_000, profiles.load("a100-pcie-40g-hdr"), radix=40)
    assert (s.nodes, s.hcas, s.planes, s.capacity, s.zones) == (1250, 1250, 1, 800, 2)
    assert (s.down, s.up, s.leaves_per_zone, s.spines_per_zone, s.per_pair) == (20, 20, 32, 20, 1)
    assert (s.leaves, s.spines, s.cables) == (64, 40, 1250 + 1280)
    assert s.leaves + s.spines == 104
    assert s.gpu_MW == pytest.approx(2.5)
    assert s.it_MW is None and "no power.node_max_W" in s.power_source  # a PCIe server's power is the site's to give
    with_power = sizing.size(10_000, profiles.load("a100-pcie-40g-hdr"), radix=40, node_W=4000, pue=1.5)
    assert with_power.it_MW == pytest.approx(1250 * 4000 / 1e6) and with_power.facility_MW == pytest.approx(7.5)


def test_10000_h100_eight_ndr_hcas_per_node_on_64_port_switches_are_eight_rail_planes():
    # Hand calculation: 1,250 nodes x 8 HCAs = 10,000 HCAs; rail-optimized, 8 planes of 1,250 endpoints each.
    # 64 ports at 1:1 = 32 down + 32 up; one tree carries 64 x 32 = 2,048 >= 1,250: one zone per plane.
    # Per plane ceil(1,251 / 32) = 40 leaves (one port for the subnet manager). 20 spines of 64 ports would take the
    # 1,280 uplinks at 1.6 cables a pair; evenly, k divides 32 with 40 x k <= 64: k = 1, 32 spines (40 ports used).
    # 8 planes: 320 leaves, 256 spines, 576 switches (issue 23: 160 spines, 480 before).
    # Cables: 10,000 HCA-leaf + 320 x 32 = 10,240 leaf-spine = 20,240.
    # Power: GPUs 10,000 x 700 W = 7.0 MW; IT 1,250 x 10.2 kW (DGX H100 maximum) = 12.75 MW; x PUE 1.2 = 15.3 MW.
    s = sizing.size(10_000, profiles.load("h100-sxm5-80g-ndr"), radix=64)
    assert (s.nodes, s.hcas, s.planes, s.capacity, s.zones) == (1250, 10_000, 8, 2048, 1)
    assert (s.leaves_per_zone, s.spines_per_zone, s.leaves, s.spines) == (40, 32, 320, 256)
    assert s.cables == 10_000 + 10_240
    assert (s.gpu_MW, s.it_MW, s.facility_MW) == (pytest.approx(7.0), pytest.approx(12.75), pytest.approx(15.3))
    text = "\n".join(s.lines())
    assert "8 rail planes" in text and "320 leaves, 256 spines, 576 in all" in text and "= 20240" in text


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


@pytest.mark.parametrize("gpus, profile, radix, oversubscription", [
    (10_000, "a100-pcie-40g-hdr", 40, "1:1"), (10_000, "h100-sxm5-80g-ndr", 64, "1:1"),
    (10_000, "h100-sxm5-80g-ndr", 64, "2:1"), (100_000, "h100-sxm5-80g-ndr", 64, "1:1"),
    (1024, "h100-sxm5-80g-ndr", 64, "1:1"), (2000, "a100-sxm4-80g-hdr", 40, "3:1"), (4096, "b200-hgx", 64, "1:1"),
])
def test_every_leaf_has_the_same_whole_number_of_cables_to_every_spine(gpus, profile, radix, oversubscription):
    s = sizing.size(gpus, profiles.load(profile), radix=radix, oversubscription=oversubscription)
    assert s.spines_per_zone * s.per_pair == s.up  # every uplink of a leaf: per_pair cables to each spine
    assert s.leaves_per_zone * s.per_pair <= radix  # a spine's ports take every leaf's cables
    # the fewest spines that do: a larger whole k would overflow a spine's ports
    assert all(s.up % k or s.leaves_per_zone * k > radix for k in range(s.per_pair + 1, s.up + 1))
    assert s.storage is not None and s.storage.spines * s.storage.per_pair == s.storage.up


def test_storage_and_management_take_their_own_ports_and_switches():
    # The DGX SuperPOD pod of 127 DGX H100 (RA-11333-001 Table 7/8): 127 x 2 storage ports + 48 storage-side ports +
    # 1 subnet manager = 303 endpoints on a 1:1 tree of 64-port switches: ceil(303 / 32) = 10 leaves, k | 32 with
    # 10 k <= 64: k = 4, 8 spines; 18 switches, at least the RA's 16 (it runs the DGX side near 4:3).
    s = sizing.size(127 * 8, profiles.load("h100-sxm5-80g-ndr"))
    assert s.storage is not None
    assert (s.storage.endpoints, s.storage.leaves, s.storage.spines, s.storage.per_pair) == (303, 10, 8, 4)
    assert s.storage.switches == 18 >= 16
    assert (s.storage_servers, s.management, s.ufm) == (24, 4, 4)
    # the compute planes keep a leaf port for their subnet manager: 127 + 1 endpoints, 4 leaves of 32
    assert s.leaves_per_zone == 4 and s.switches == s.leaves + s.spines + 18
    text = "\n".join(s.lines())
    assert "storage: 24 storage servers (48 ports at 2 each, assumed) and 2 storage ports per node" in text
    assert "management: 4 management servers and 4 UFM appliances" in text
    assert "power unknown (the tables hold no switch's power: give --switch-power-W" in text


def test_switch_power_joins_the_it_load_when_given():
    s = sizing.size(10_000, profiles.load("h100-sxm5-80g-ndr"), switch_W=1500)
    assert s.switches == 576 + s.storage.switches
    assert s.switch_kW == pytest.approx(s.switches * 1.5)
    assert f"{s.switches} switches x 1500 W = {s.switch_kW:.1f} kW" in "\n".join(s.lines())
    with pytest.raises(ProvisionError, match="^--switch-power-W: a positive number"):
        sizing.size(64, profiles.load("h100-sxm5-80g-ndr"), switch_W=-1.0)


def test_the_burnin_estimate_takes_the_localizers_own_rounds():
    # issue 23: 6 rounds were assumed; the figure now comes from provision.fabric.localize.expected_rounds, the
    # same one bench/localize.py measures, on this tree's leaves (32 hosts, 32 uplinks at 1:1 on 64 ports)
    from provision.fabric.localize import expected_rounds
    for gpus in (128, 10_000):
        s = sizing.size(gpus, profiles.load("h100-sxm5-80g-ndr"))
        assert s.localize_rounds == expected_rounds(s.nodes, min(32, s.nodes), 32)
        assert s.localize_s == s.localize_rounds * (5 * 8 + sizing.CHECK_OVERHEAD_s)
        assert f"({s.localize_rounds} rounds, the localizer's expected_rounds on this tree)" in "\n".join(s.lines())
    assert sizing.size(8, profiles.load("h100-sxm5-80g-ndr")).localize_rounds == 0  # one node: no cluster rounds
