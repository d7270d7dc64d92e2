"""Every captured sample parses, and every hand-read value in its ``expected`` matches.

Sample key/value spellings are mapped onto the contract in ``_sample_rules``; the
comparison itself is strict (floats to 1e-6 relative).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from provision.parsers import PARSERS, parse_tool
from tests.unit.parsers._sample_rules import RULES, TOOL_OF

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
CASES = sorted(SAMPLES.glob("*.txt"))


def _load(path: Path) -> tuple[str, dict, dict]:
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["tool"] in TOOL_OF, f"map sample tool {meta['tool']!r} in _sample_rules.TOOL_OF"
    tool = TOOL_OF[meta["tool"]]
    return tool, meta["expected"], parse_tool(tool, path.read_text(), path.name)


def _rename(value, names: dict):
    if isinstance(value, dict):
        return {names.get(k, k): _rename(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, names) for v in value]
    return value


def _lookup(actual, path: tuple):
    for step in path:
        actual = actual[step]
    return actual


def _assert_same(expected, actual, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a mapping, got {actual!r}"
        for key, value in expected.items():
            found = key if key in actual else int(key) if str(key).isdigit() and int(key) in actual else None
            assert found is not None, f"{where}.{key}: missing from parser output"
            _assert_same(value, actual[found], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), \
            f"{where}: expected {len(expected)} items, got {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            _assert_same(e, a, f"{where}[{i}]")
    elif isinstance(expected, float) or isinstance(actual, float):
        assert expected is not None and actual is not None, f"{where}: {actual!r} != {expected!r}"
        assert not isinstance(actual, bool) and math.isclose(actual, expected, rel_tol=1e-6), \
            f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected and type(actual) is type(expected), f"{where}: {actual!r} != {expected!r}"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_sample_matches_expected(path: Path) -> None:
    tool, expected, actual = _load(path)
    rules = RULES[tool]
    compared = 0
    for key, value in expected.items():
        if key in rules.get("skip", {}):
            continue
        value = rules.get("value", {}).get(key, lambda v: v)(value)
        value = _rename(value, rules.get("rename", {}))
        if key in rules.get("derive", {}):
            got = rules["derive"][key](actual)
        elif key in rules.get("path", {}):
            got = _lookup(actual, rules["path"][key])
        else:
            got = actual[rules.get("rename", {}).get(key, key)]
        _assert_same(value, got, f"{path.stem}:{key}")
        compared += 1
    assert compared > 0


# Samples that are excerpts rather than a tool's whole output.
EXCERPTS = {"nccl_log_warn_ib_async_fatal_qp": "NCCL log excerpt without a results table"}

# The contract's required keys: top level, and of each item of a list ("key[]").
REQUIRED = {
    "nvidia-smi": {"": ["driver_version", "cuda_version", "gpus"],
                   "gpus[]": ["index", "name", "bus_id", "persistence_mode", "temp_C", "power_W",
                              "power_cap_W", "memory_used_MiB", "memory_total_MiB", "util_pct",
                              "ecc_uncorrected_volatile", "faults"]},
    "nvidia-smi-q": {"": ["driver_version", "cuda_version", "attached_gpus", "gpus"],
                     "gpus[]": ["bus_id", "name", "ecc_uncorrected_volatile", "sram_uncorrected_volatile",
                                "remapped_rows", "retired_pages_pending", "temp_C", "power_W",
                                "pcie_gen_current", "pcie_gen_max", "width_current", "width_max",
                                "pcie_replays"]},
    "nvidia-smi-csv": {"": ["columns", "rows"]},
    "nvidia-smi-topo": {"": ["matrix", "cpu_affinity", "nic_legend"]},
    "nvidia-smi-nvlink": {"": ["gpus"], "gpus[]": ["index", "links"]},
    "nccl-tests": {"": ["collective", "nranks", "rows", "avg_busbw_GBps", "max_size_bytes",
                        "busbw_at_max_size_GBps", "wrong", "out_of_bounds_failed", "warnings"],
                   "rows[]": ["size_bytes", "count", "type", "redop", "out_of_place", "in_place"]},
    "perftest": {"": ["test", "device", "link_type", "msg_size", "iterations"]},
    "ibstat": {"": ["ports"], "ports[]": ["ca", "port", "state", "physical_state", "rate_Gbps",
                                          "link_layer", "fw_ver"]},
    "dcgmi-diag": {"": ["results", "failed_tests"]},
    "nvbandwidth": {"": ["tests"], "tests[]": ["name", "matrix", "sum_GBps"]},
    "p2pBandwidthLatencyTest": {"": ["gpu_count", "uni_p2p_enabled_GBps", "bi_p2p_enabled_GBps"]},
    "gpu-burn": {"": ["gpus", "completed"], "gpus[]": ["index", "verdict", "gflops", "errors", "temp_C"]},
    "dmesg-xid": {"": ["xids", "fallen_off_bus"], "xids[]": ["xid", "pci", "message"]},
    "dmidecode": {"": ["bios", "system"]},
    "ipmitool-mc-info": {"": ["device_id", "firmware_revision", "ipmi_version", "manufacturer_name",
                              "product_name", "aux_firmware_revision"]},
    "proc-modules": {"": ["modules"]},
    "proc-cmdline": {"": ["params", "args"]},
    "lspci": {"": ["devices"], "devices[]": ["bdf", "lnkcap_speed_GTps", "lnkcap_width",
                                             "lnksta_speed_GTps", "lnksta_width", "downgraded"]},
    "bonding": {"": ["mode", "mii_status", "active_aggregator_id", "slaves"],
                "slaves[]": ["name", "mii_status", "speed_Mbps", "aggregator_id", "partner_mac"]},
    "fio": {"": ["jobs", "errors"], "jobs[]": ["name", "rw", "bs", "write_bw_MiBps", "write_iops",
                                               "read_bw_MiBps", "read_iops", "lat_p99_ms"]},
    "ibnetdiscover": {"": ["switches", "cas", "links", "errors"],
                      "switches[]": ["guid", "description", "lid", "ports"],
                      "cas[]": ["guid", "description", "ports_cabled"],
                      "links[]": ["a", "a_port", "b", "b_port", "width", "speed", "width_speed", "mismatch"]},
}
REQUIRED["nvidia-smi-qx"] = REQUIRED["nvidia-smi-q"]
REQUIRED["ibstatus"] = REQUIRED["ibv_devinfo"] = REQUIRED["ibstat"]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_sample_has_contract_shape(path: Path) -> None:
    tool, _, actual = _load(path)
    assert actual["tool"] == tool
    assert actual["complete"] is (path.stem not in EXCERPTS)
    for where, keys in REQUIRED[tool].items():
        items = actual[where[:-2]] if where else [actual]
        for item in items:
            assert not set(keys) - set(item), f"{where or 'top'}: missing {set(keys) - set(item)}"
    if tool == "perftest" and actual["test"] is None:  # a run that failed before its banner
        assert actual["errors"] and actual["bw_avg_Gbps"] is None
    elif tool == "perftest":
        bw = ["bw_peak", "bw_avg", "units", "bw_avg_Gbps"]
        lat = ["t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec", "p99_usec", "p99_9_usec"]
        assert not set(bw if "BW" in actual["test"] else lat) - set(actual)
    json.dumps(actual)  # plain data only


def test_every_sample_tool_has_a_parser() -> None:
    assert set(TOOL_OF.values()) <= set(PARSERS)
    assert set(RULES) <= set(PARSERS)


CONTRACTS = sorted(SAMPLES.glob("*.contract.json"))


def _same_cable(want: dict, got: dict) -> bool:
    """Contract cables compare either way round (a/b order is not part of the contract)."""
    flipped = {**want, "a": want["b"], "a_port": want["b_port"], "b": want["a"], "b_port": want["a_port"]}
    return any(all(got[k] == w[k] for k in w) for w in (want, flipped))


@pytest.mark.parametrize("path", CONTRACTS, ids=[p.name.removesuffix(".contract.json") for p in CONTRACTS])
def test_sample_matches_its_contract_values(path: Path) -> None:
    """``NAME.contract.json`` holds values in the contract's own key names (ibnetdiscover samples)."""
    want = json.loads(path.read_text())
    text = path.with_name(path.name.removesuffix(".contract.json") + ".txt").read_text()
    got = parse_tool(want["tool"], text, path.name)
    assert len(got["switches"]) == want["switch_count"] and len(got["cas"]) == want["ca_count"]
    assert len(got["links"]) == want["cables_total"]
    assert got["errors"] == want["errors"]
    loops = [lk for lk in got["links"] if lk["a"] == lk["b"]]
    assert len(loops) == len(want["self_loop_links"])
    for cable in want["self_loop_links"] + want["degraded_links"]:
        assert any(_same_cable(cable, lk) for lk in got["links"]), f"{path.name}: no cable {cable}"
