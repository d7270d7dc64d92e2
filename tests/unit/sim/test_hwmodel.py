"""The hardware model built from a profile."""
from __future__ import annotations

import copy
import re

import yaml

from provision.sim import hwmodel


def test_model_follows_profile(profile):
    model = hwmodel.build(profile, "node01", 0)
    assert model["hostname"] == "node01" and model["profile"] == profile["name"]
    assert len(model["gpus"]) == profile["gpu"]["count"]
    assert len(model["hcas"]) == profile["hca"]["count"]
    gpu = model["gpus"][0]
    assert gpu["model"] == profile["gpu"]["model"]
    assert gpu["memory_total_MiB"] == profile["gpu"]["memory_total_MiB"]
    assert gpu["pcie"]["gen_max"] == 5 and gpu["pcie"]["width_current"] == 16
    assert len(gpu["nvlink"]["links"]) == 18 and all(link["active"] for link in gpu["nvlink"]["links"])
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert re.fullmatch(r"00000000:[0-9A-F]{2}:00\.0", gpu["bus_id"])
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", gpu["uuid"])
    assert 33 <= gpu["temp_C"] <= 40 and 65 <= gpu["power_W"] <= 80
    assert [g["pcie_switch"] for g in model["gpus"]] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [g["numa_node"] for g in model["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert model["hcas"][3]["name"] == "mlx5_3" and model["hcas"][3]["rate_Gbps"] == 400
    figures = yaml.safe_load(hwmodel.FIGURES.read_text())[profile["name"]]
    assert model["performance"] == {k: v for k, v in figures.items() if k != "sources"}  # the sources stay in the file
    assert model["performance"]["nccl_allreduce_busbw_GBps"] > 0
    assert model["faults"] == {} and model["kernel_log"] == [] and model["noise_pct"] == 2.0
    bond, site = model["storage"]["bond"], yaml.safe_load(hwmodel.SITE.read_text())["provision_storage"]
    assert bond["name"] == site["bond"] == "bond0" and len(bond["slaves"]) == site["slaves"] == 2
    assert all(s["mii_status"] == "up" and s["speed_Mbps"] == 25000 for s in bond["slaves"])


def test_model_is_deterministic_and_unique_per_host(profile):
    a, b = hwmodel.build(profile, "node01", 0), hwmodel.build(profile, "node01", 0)
    c = hwmodel.build(profile, "node02", 1)
    assert a == b
    assert {g["uuid"] for g in a["gpus"]}.isdisjoint(g["uuid"] for g in c["gpus"])
    assert len({g["uuid"] for g in a["gpus"]}) == 8
    assert {h["lid"] for h in a["hcas"]}.isdisjoint(h["lid"] for h in c["hcas"])


def test_dump_round_trips(profile):
    model = hwmodel.build(profile, "node01", 0)
    assert yaml.safe_load(hwmodel.dump(model)) == model


def test_page_retirement_and_no_nvlink(profile):
    prof = copy.deepcopy(profile)
    prof["gpu"].update(memory_error_mechanism="page_retirement", nvswitch=False)
    del prof["gpu"]["nvlink"]
    gpu = hwmodel.build(prof, "node01", 0)["gpus"][0]
    assert gpu["remapped_rows"] is None
    assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert gpu["nvlink"]["links"] == [] and gpu["nvswitch"] is False
