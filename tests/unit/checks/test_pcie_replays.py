"""pcie_replays: the replay counters read from real nvidia-smi captures, malformed outputs refused in one line,
the rate judged as DCGM's health watch judges a minute, and the check's default row laid under every GPU profile.

The judged cases (healthy, failing, truncated, real) are tests/data/pcie_replays/cases.yaml's, read by
test_check_data.py; these are what a case file cannot say.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from provision import profiles
from provision.checks import pcie_replays, registry
from provision.checks.base import Context
from provision.errors import ParseError
from provision.parsers import parse_tool
from provision.results.model import Outcome

from tests.unit.checks import judge

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLES = DATA / "samples"
CHECK = registry()["pcie_replays"]
# The real H100 node's "Replays Since Reset" per GPU (samples/smi_q_h100x8_535_183.txt, nvidia-smi -q, driver 535).
H100_REPLAYS = [120, 111, 58, 60, 63, 93, 69, 78]
# That capture's own span: its clock-event timestamps go back to 21:18:47.468 and it was taken at 02:03:08.
H100_SPAN_S = 4 * 3600 + 44 * 60 + 20.5


def _profile(name: str) -> profiles.Profile:
    """Profile ``name`` with the checks' default rows under its own, as a host is judged by."""
    return profiles.load(name)


def _uptime(seconds: float) -> dict:
    return parse_tool("grep-h", f"/proc/uptime:{seconds:.2f} {seconds * 2:.2f}\n")


def _findings(smi: dict, up_s: float, name: str = "h100-sxm5-80g-ndr"):
    return CHECK.judge(Context({"smi": smi, "uptime": _uptime(up_s)}, _profile(name), None))


def _gen5_x16(replays: int) -> dict:
    """A one-GPU nvidia-smi -q -x result (the contract's keys) on a Gen5 x16 link."""
    return {"gpus": [{"bus_id": "00000000:19:00.0", "lost": False, "pcie_replays": replays,
                      "pcie_replay_rollovers": 0, "pcie_gen_max": 5, "width_max": 16, "width_current": 16}]}


@pytest.mark.parametrize(("sample", "tool", "replays"), [
    ("nvidia_smi_qx_b200_8gpu_driver580_hgx.txt", "nvidia-smi-qx", [0] * 8),
    ("nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt", "nvidia-smi-qx", [0] * 4),
    ("smi_qx_t4_v11_width_x8.txt", "nvidia-smi-qx", [0]),
    ("smi_q_h100x8_535_183.txt", "nvidia-smi-q", H100_REPLAYS),
])
def test_the_real_captures_counters_are_read(sample, tool, replays):
    gpus = parse_tool(tool, (SAMPLES / sample).read_text())["gpus"]
    assert [g["pcie_replays"] for g in gpus] == replays
    assert [g["pcie_replay_rollovers"] for g in gpus] == [0] * len(replays)


def test_the_edited_b200_capture_reads_gpu1s_counters_only():
    gpus = parse_tool("nvidia-smi-qx", (DATA / "pcie_replays" / "real_b200_replays_gpu1.smi.txt").read_text())["gpus"]
    assert [(g["pcie_replays"], g["pcie_replay_rollovers"]) for g in gpus] == [(0, 0), (5000000, 3)] + [(0, 0)] * 6


def test_the_real_h100_node_passes_at_any_uptime_above_four_minutes():
    """43-120 replays after hours are a healthy link's: a count limit such as DCGM's 80 for one diagnostic run
    would fail three of its GPUs; the rate since boot fails none once the node has been up 4 minutes."""
    smi = parse_tool("nvidia-smi-q", (SAMPLES / "smi_q_h100x8_535_183.txt").read_text())
    for up_s in (H100_SPAN_S, 240.0):
        findings = _findings(smi, up_s)
        assert all(f.ok for f in findings), [f.describe() for f in findings if not f.ok]
    worst = max(f.value for f in _findings(smi, H100_SPAN_S) if f.metric == pcie_replays.METRIC)
    assert worst == round(120 / (H100_SPAN_S * 32e9 * 16 / 1e12), 3)
    assert [f.device for f in _findings(smi, 230.0) if not f.ok] == ["GPU0 00000000:53:00.0"]


@pytest.mark.parametrize(("gen", "passing", "failing"), [(5, 30, 32), (4, 15, 17), (3, 7, 9)])
def test_a_minute_since_boot_is_judged_as_dcgms_health_watch_judges_a_minute(gen, passing, failing):
    """DCGM warns above ceil(10^-12 x GT/s x 10^9 x 60 x 16) replays a minute on an x16 link: 31 (Gen5), 16 (Gen4),
    8 (Gen3); the same rate without DCGM's rounding up is the limit here."""
    dcgm = math.ceil(1e-12 * {3: 8, 4: 16, 5: 32}[gen] * 1e9 * 60 * 16)
    assert passing <= dcgm < failing
    for replays, ok in ((passing, True), (failing, False)):
        smi = _gen5_x16(replays)
        smi["gpus"][0]["pcie_gen_max"] = gen
        finding = next(f for f in _findings(smi, 60.0) if f.metric == pcie_replays.METRIC)
        assert finding.ok is ok, finding.describe()
        assert finding.fault == "PCIE_REPLAYS_HIGH" and f"at Gen{gen} x16" in finding.detail


def test_a_link_trained_down_is_allowed_the_replays_of_its_current_width():
    """DCGM's formula takes the link's current width (DCGM_FI_DEV_PCIE_LINK_WIDTH): the same replays that pass an
    x16 link fail the link that trained down to x8, where replays come from; the message says x8."""
    smi = _gen5_x16(20)  # a minute: x16 allows 30.7, x8 15.4
    assert next(f for f in _findings(smi, 60.0) if f.metric == pcie_replays.METRIC).ok
    smi["gpus"][0]["width_current"] = 8
    finding = next(f for f in _findings(smi, 60.0) if f.metric == pcie_replays.METRIC)
    assert not finding.ok and "at Gen5 x8" in finding.detail


def test_a_site_override_moves_the_limit():
    profile = _profile("h100-sxm5-80g-ndr")
    raised = profile.with_overrides({"pcie_replays": {"replays_per_Tb": {"value": 10}}}, "host node07")
    texts = {"smi": (DATA / "pcie_replays" / "sim_h100_replays_below_limit.smi.txt").read_text(),
             "uptime": "/proc/uptime:8640.00 0.00\n"}  # a tenth of a day: GPU6's 40,000 replays are 9.04 per Tb
    assert judge("node07", CHECK, profile, texts).outcome is Outcome.FAIL
    assert judge("node07", CHECK, raised, texts).outcome is Outcome.PASS
    assert "the site's own figure" in raised.required_reference("pcie_replays", "replays_per_Tb").source


@pytest.mark.parametrize("name", profiles.names())
def test_every_gpu_profile_gets_the_default_row_and_no_profile_file_writes_it(name):
    raw = profiles.load(name, ())  # the profile file's rows alone
    assert "pcie_replays" not in raw.references  # the check's own row, not a profile's (issue 35)
    merged = _profile(name)
    row = merged.reference("pcie_replays", "replays_per_Tb")
    assert (row is not None) == CHECK.applies(merged)
    if row is not None:
        assert merged.reference_layer("pcie_replays", "replays_per_Tb") == "check pcie_replays default"
        assert (row.value, row.lower, row.upper, row.unit) == (1.0, None, 0.0, "replays/Tb") and not row.estimate
        assert "DcgmHealthWatch.cpp" in row.source


@pytest.mark.parametrize(("uptime", "message"), [
    ("/proc/uptime:abc 12.00\n", "'abc 12.00' is not 'seconds idle-seconds'"),
    ("/proc/uptime:\n", "'' is not 'seconds idle-seconds'"),
    ("/proc/uptime:0.00 0.00\n", "0 s since boot"),
    ("/proc/uptime:nan 0.00\n", "nan s since boot"),
    ("", "grep printed no /proc/uptime line"),
    ("grep: /proc/uptime: Permission denied\n", "grep printed no /proc/uptime line (grep: /proc/uptime: Permission"),
])
def test_an_unreadable_uptime_is_a_clear_parse_error(uptime, message):
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace(".", r"\.")):
        pcie_replays.uptime_s(parse_tool("grep-h", uptime))


def test_output_that_is_not_grep_hs_is_refused_in_one_line():
    with pytest.raises(ParseError) as caught:
        parse_tool("grep-h", "33123.49 36253.10\n", "uptime.txt")
    assert str(caught.value) == "uptime.txt: not grep -H output: line 1 is not 'path:value'"


@pytest.mark.parametrize(("edit", "message"), [
    ({"pcie_replays": None}, "GPU0 00000000:19:00.0: replay_counter is None, not a count"),
    ({"pcie_gen_max": None}, "link generation None, width 16: its capacity is unknown"),
    ({"width_current": 0}, "link generation 5, width 0: its capacity is unknown"),
])
def test_a_gpu_without_a_readable_counter_or_link_is_a_parse_error(edit, message):
    smi = _gen5_x16(0)
    smi["gpus"][0].update(edit)
    with pytest.raises(ParseError, match=message):
        _findings(smi, 3600.0)


def test_a_negative_or_missing_counter_in_the_xml_is_an_error_not_a_pass():
    healthy = (DATA / "pcie_replays" / "sim_h100_healthy.smi.txt").read_text()
    uptime = (DATA / "pcie_replays" / "sim_h100_healthy.uptime.txt").read_text()
    profile = _profile("h100-sxm5-80g-ndr")
    negative = healthy.replace("<replay_counter>0</replay_counter>", "<replay_counter>-4</replay_counter>", 1)
    result = judge("node07", CHECK, profile, {"smi": negative, "uptime": uptime})
    assert result.outcome is Outcome.ERROR and "pcie_replays" in result.message and "-4" in result.message
    absent = healthy.replace("<replay_counter>0</replay_counter>", "<replay_counter>N/A</replay_counter>", 1)
    result = judge("node07", CHECK, profile, {"smi": absent, "uptime": uptime})
    assert result.outcome is Outcome.ERROR and "replay_counter is None, not a count" in result.message


def test_a_lost_gpu_is_named_not_judged():
    smi = _gen5_x16(0)
    smi["gpus"][0].update(lost=True, pcie_replays=None)
    lost = [f for f in _findings(smi, 3600.0) if not f.ok and f.fault == "GPU_LOST"]
    assert [f.device for f in lost] == ["GPU0 00000000:19:00.0"]
