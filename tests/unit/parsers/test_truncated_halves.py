"""The first half of every real sample parses to what is there, or is refused only when the
half holds nothing of the tool's output; a parse that claims complete must not lose data."""
from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import parse_tool

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
CUT = {  # samples whose first half is the tool's output cut mid-run: must be complete false
    ("perftest", "ib_write_bw_cx7_ndr_gbits.txt"), ("perftest", "ib_send_lat_cx7_ndr.txt"),
    ("gpu-burn", "gpu_burn_16gpu_faulty_negative_errors_exit0.txt"), ("gpu-burn", "gpu_burn_a100x8_ok.txt"),
    ("nccl-tests", "nccl_allreduce_a100x8_novalidation.txt"), ("nvidia-smi-qx", "smi_qx_t4_v11_width_x8.txt"),
    ("dcgmi-diag", "dcgmi_diag_r3_verbose_v100_pass.txt"),
}


@pytest.mark.parametrize("tool,name", sorted(CUT))
def test_first_half_is_incomplete(tool, name):
    text = (SAMPLES / name).read_text()
    result = parse_tool(tool, text[: len(text) // 2])
    assert result["complete"] is False


def test_text_of_another_tool_is_still_refused():
    with pytest.raises(ParseError):
        parse_tool("gpu-burn", (SAMPLES / "ibstat_h100_mixed_down_ports.txt").read_text())
    with pytest.raises(ParseError):
        parse_tool("perftest", (SAMPLES / "nvlink_status_v100_two_inactive_elided.txt").read_text())
