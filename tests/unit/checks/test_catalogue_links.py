"""The link checks (pcie_link, nvlink, topology, nvbandwidth): what their test data cannot declare.

Their captures and how each is judged are ``tests/data/<check>/cases.yaml``, read by
test_check_data.py; here: captures cut in the test, a fragment a message must not hold, the
steps' argv from the profile.

Truncation: half of the lspci and ``nvlink -s`` texts ends on a device boundary, and neither
tool prints an end marker, so that text reads as a node with 4 of 8 GPUs: a failure naming
the count. A cut inside a device's lines is an error (``*_cut_mid_device`` tests).
"""
import importlib
from pathlib import Path

import pytest

from provision import profiles
from provision.checks import Outcome
from provision.errors import ProfileError

from tests.unit.checks import declared, judge

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.load("h100-sxm5-80g-ndr")
IDS = ("pcie_link", "nvlink", "topology", "nvbandwidth")
CHECKS = {name: importlib.import_module(f"provision.checks.{name}").CHECK for name in IDS}


def applicable(check, profile) -> bool:
    return all(profile.has(need) for need in check.needs)


def variant(base: str, changes: dict) -> profiles.Profile:
    """A copy of a bundled profile with ``{"a.b.c": value}`` set (None deletes the key)."""
    return declared.variant(profiles.load(base), f"{base}-test", changes)


def pcie(name: str) -> dict:
    return {key: (DATA / f"pcie_link/sim_h100_{name}.{key}.txt").read_text() for key in ("gpu", "hca")}


def one(capture: str) -> dict:
    return {"": (DATA / capture).read_text()}


V100_NVLINK = variant("a100-sxm4-80g-hdr", {"gpu.nvlink": {"version": 2, "links": 6, "speed_GBps": 25.781}})
RTX = profiles.load("rtx4090-pcie")


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
