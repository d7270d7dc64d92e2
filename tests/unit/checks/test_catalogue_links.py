"""The link checks (pcie_link, nvlink, topology, nvbandwidth) against healthy, degraded and
truncated captures: outcome, device and fault named.

Captures: ``tests/data/<check>/sim_h100_*`` come from the simulated tools with a fault set in
the hardware model (tests/data/tools/capture_links.py); pcie_link's carry the step key
(``.gpu.txt``/``.hca.txt``). ``tests/data/samples/`` are real outputs from real clusters.

Truncation: half of the lspci and ``nvlink -s`` texts ends on a device boundary, and neither
tool prints an end marker, so that text reads as a node with 4 of 8 GPUs: a failure naming
the count. A cut inside a device's lines is an error (``*_cut_mid_device`` tests).
"""
import copy
import importlib
from pathlib import Path

import pytest

from provision import profiles
from provision.checks import Outcome
from provision.errors import ProfileError

from tests.unit.checks import judge

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.load("h100-sxm5-80g-ndr")
IDS = ("pcie_link", "nvlink", "topology", "nvbandwidth")
CHECKS = {name: importlib.import_module(f"provision.checks.{name}").CHECK for name in IDS}


def applicable(check, profile) -> bool:
    return all(profile.has(need) for need in check.needs)


def variant(base: str, changes: dict) -> profiles.Profile:
    """A copy of a bundled profile with ``{"a.b.c": value}`` set (None deletes the key)."""
    profile = profiles.load(base)
    data = copy.deepcopy(profile.data)
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        if value is None:
            node.pop(leaf)
        else:
            node[leaf] = value
    return profiles.Profile(f"{profile.name}-test", data, profile.path)


def pcie(name: str) -> dict:
    return {key: (DATA / f"pcie_link/sim_h100_{name}.{key}.txt").read_text() for key in ("gpu", "hca")}


def one(capture: str) -> dict:
    return {"": (DATA / capture).read_text()}


V100_NVLINK = variant("a100-sxm4-80g-hdr", {"gpu.nvlink": {"version": 2, "links": 6, "speed_GBps": 25.781}})
RTX = profiles.load("rtx4090-pcie")
README_D2D = {"value": 276.0, "lower": -0.005, "upper": None, "unit": "GB/s", "source": "test",
              "params": {"testcase": "device_to_device_memcpy_write_ce", "buffer_size_MiB": 512}}

# (check, profile, texts, outcome, texts the message must contain)
CASES = [
    ("pcie_link", H100, pcie("healthy"), Outcome.PASS, ["gpu_count = 8"]),
    ("pcie_link", H100, pcie("gpu_x8"), Outcome.FAIL, ["0000:5d:00.0: lnksta_width = 8 lanes", "PCIE_DOWNTRAINED"]),
    ("pcie_link", H100, pcie("hca_gen4"), Outcome.FAIL,
     ["0000:ba:00.0: lnksta_speed_GTps = 16.0 GT/s", "PCIE_DOWNTRAINED"]),
    ("pcie_link", H100, pcie("truncated"), Outcome.FAIL, ["gpu_count = 4, expected 8", "hca_count = 4", "GPU_MISSING"]),
    ("pcie_link", variant("h100-sxm5-80g-ndr", {"gpu.count": 1, "hca.count": 0}),
     {"gpu": (DATA / "samples/lspci_vvv_h100_gen5_x16_ok.txt").read_text()}, Outcome.PASS, ["gpu_count = 1"]),
    ("pcie_link", variant("rtx4090-pcie", {"gpu.count": 1}),
     {"gpu": (DATA / "samples/lspci_lnk_4090_riser_gen1.txt").read_text()}, Outcome.FAIL,
     ["gpu #0 (no address printed): lnksta_speed_GTps = 2.5 GT/s, expected 16.0", "PCIE_DOWNTRAINED"]),
    ("nvlink", H100, one("nvlink/sim_h100_healthy.txt"), Outcome.PASS, ["gpu_count = 8"]),
    ("nvlink", H100, one("nvlink/sim_h100_nvlink_down.txt"), Outcome.FAIL,
     ["GPU6: nvlink_active_links = 9, expected 18", "inactive links 0,1,2", "NVLINK_DOWN"]),
    ("nvlink", H100, one("nvlink/sim_h100_truncated.txt"), Outcome.FAIL, ["gpu_count = 4, expected 8"]),
    ("nvlink", V100_NVLINK, one("samples/nvlink_status_v100_two_inactive_elided.txt"), Outcome.FAIL,
     ["GPU3: nvlink_active_links = 4, expected 6", "inactive links 3,5", "NVLINK_DOWN"]),
    ("nvlink", H100, one("samples/nvlink_status_v100_two_inactive_elided.txt"), Outcome.FAIL,
     ["GPU3 link 0: speed_GBps = 25.781 GB/s, expected 26.562", "NVLINK_SPEED"]),
    ("topology", H100, one("topology/sim_h100_healthy.txt"), Outcome.PASS, ["gpu_count = 8"]),
    ("topology", H100, one("topology/sim_h100_nvlink_down.txt"), Outcome.FAIL,
     ["GPU0-GPU6: gpu_gpu = 'NV9', expected 'NV18'", "TOPO_NVLINK"]),
    ("topology", H100, one("topology/sim_h100_nic_far.txt"), Outcome.FAIL,
     ["GPU2: nearest_nic = 'NODE', expected 'PIX or closer'", "GPU3: nearest_nic", "TOPO_NIC_AFFINITY"]),
    ("topology", H100, one("topology/sim_h100_truncated.txt"), Outcome.ERROR, ["incomplete"]),
    ("topology", profiles.load("a100-sxm4-80g-hdr"), one("samples/topo_m_a100x8_nv12_4nic.txt"), Outcome.FAIL,
     ["GPU0: nearest_nic = 'SYS', expected 'PIX or closer'; via NIC0 (mlx5_0)", "TOPO_NIC_AFFINITY"]),
    ("topology", H100, one("samples/topo_m_a100x8_nv12_4nic.txt"), Outcome.FAIL,
     ["GPU0-GPU1: gpu_gpu = 'NV12', expected 'NV18'", "TOPO_NVLINK"]),
    ("topology", variant("a100-sxm4-80g-hdr", {"topology.gpu_nearest_nic": "SYS"}),
     one("samples/topo_m_a100x8_nv12_4nic.txt"), Outcome.PASS, ["gpu_count = 8"]),
    ("nvbandwidth", H100, one("nvbandwidth/sim_h100_healthy.txt"), Outcome.PASS,
     ["h2d_GBps", "over 8 devices", "d2d_GBps", "over 56 devices"]),
    ("nvbandwidth", H100, one("nvbandwidth/sim_h100_slow_gpu_pair.txt"), Outcome.FAIL,
     ["GPU2->GPU5: d2d_GBps", "GPU5->GPU2: d2d_GBps", "D2D_SLOW"]),
    ("nvbandwidth", H100, one("nvbandwidth/sim_h100_gpu_x8.txt"), Outcome.FAIL,
     ["GPU3 00000000:5D:00: h2d_GBps", "H2D_SLOW"]),
    ("nvbandwidth", H100, one("nvbandwidth/sim_h100_truncated.txt"), Outcome.ERROR, ["incomplete"]),
    # The README run is the write testcase: the profile's read and host testcases are missing.
    ("nvbandwidth", H100, one("samples/nvbandwidth_readme_d2d_write_8gpu.txt"), Outcome.ERROR,
     ["no host_to_device_memcpy_ce result"]),
    ("nvbandwidth", variant("h100-sxm5-80g-ndr", {"references.nvbandwidth": {"d2d_GBps": README_D2D}}),
     one("samples/nvbandwidth_readme_d2d_write_8gpu.txt"), Outcome.PASS, ["d2d_GBps"]),
    # Its one low cell (row 6, column 0 of "GPU(row) <- GPU(column)") is the copy GPU0 -> GPU6.
    ("nvbandwidth",
     variant("h100-sxm5-80g-ndr", {"references.nvbandwidth": {"d2d_GBps": {**README_D2D, "lower": 0.0}}}),
     one("samples/nvbandwidth_readme_d2d_write_8gpu.txt"), Outcome.FAIL, ["GPU0->GPU6: d2d_GBps = 274.89 GB/s"]),
]


@pytest.mark.parametrize("check_id,profile,texts,outcome,needles", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_capture_is_judged(check_id, profile, texts, outcome, needles):
    result = judge("node07", CHECKS[check_id], profile, texts)
    assert result.outcome == outcome, result.message
    for needle in needles:
        assert needle in result.message


def test_elided_nvlink_text_does_not_judge_the_gpu_count():
    result = judge("n", CHECKS["nvlink"], V100_NVLINK, one("samples/nvlink_status_v100_two_inactive_elided.txt"))
    assert "gpu_count" not in result.message


def test_pcie_cut_mid_device_is_an_error():
    texts = pcie("healthy")
    texts["gpu"] = texts["gpu"][: texts["gpu"].rindex("LnkSta")]
    assert judge("n", CHECKS["pcie_link"], H100, texts).outcome == Outcome.ERROR


def test_nvlink_cut_mid_gpu_is_an_error():
    text = (DATA / "nvlink/sim_h100_healthy.txt").read_text()
    result = judge("n", CHECKS["nvlink"], H100, {"": text[: text.rindex("Link 9:")]})
    assert result.outcome == Outcome.ERROR and "incomplete" in result.message


def test_every_check_has_pass_and_fail_cases():
    for check_id in IDS:
        outcomes = {c[3] for c in CASES if c[0] == check_id}
        assert Outcome.PASS in outcomes and Outcome.FAIL in outcomes, check_id


@pytest.mark.parametrize("name", IDS)
def test_check_id_is_its_module_name(name):
    assert CHECKS[name].id == name


def test_nvbandwidth_without_references_names_the_missing_row():
    bare = variant("h100-sxm5-80g-ndr", {"references.nvbandwidth": None})
    with pytest.raises(ProfileError,
                       match=r"profile h100-sxm5-80g-ndr-test .*: references.nvbandwidth.h2d_GBps: missing"):
        CHECKS["nvbandwidth"].steps(bare, None)


def test_nvbandwidth_runs_only_the_testcases_the_profile_has():
    d2d_only = variant("h100-sxm5-80g-ndr", {"references.nvbandwidth.h2d_GBps": None})
    argv = CHECKS["nvbandwidth"].steps(d2d_only, None)[0].argv
    assert argv[argv.index("-t") + 1:] == ["device_to_device_memcpy_read_ce"]


def test_steps_are_argv_lists_from_the_profile():
    for check in CHECKS.values():
        for step in check.steps(H100, None):
            assert isinstance(step.argv, list) and all(isinstance(a, str) for a in step.argv)
    assert [s.key for s in CHECKS["pcie_link"].steps(H100, None)] == ["gpu", "hca"]
    assert [s.key for s in CHECKS["pcie_link"].steps(RTX, None)] == ["gpu"]
    assert not applicable(CHECKS["nvlink"], RTX) and applicable(CHECKS["nvlink"], H100)
    nvbw = CHECKS["nvbandwidth"].steps(H100, None)[0].argv
    assert nvbw.count("-t") == 1 and nvbw[nvbw.index("-b") + 1] == "512"
    assert nvbw[nvbw.index("-t") + 1:] == ["host_to_device_memcpy_ce", "device_to_device_memcpy_read_ce"]
