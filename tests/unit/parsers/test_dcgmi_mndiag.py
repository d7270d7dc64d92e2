"""``dcgmi mndiag`` (table and ``-j`` JSON) on tests/data/dcgm_mndiag/ (printed as DCGM 4.6's dcgmi/MnDiag.cpp
prints them; SOURCES.md there), and cut, refused or foreign text."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import parse_tool

DATA = Path(__file__).resolve().parents[2] / "data" / "dcgm_mndiag"
NCCL = "NCCL Error : unhandled cuda error (run with NCCL_DEBUG=INFO for details)"


def read(name: str) -> dict:
    return parse_tool("dcgmi-mndiag", (DATA / name).read_text(), name)


def test_a_healthy_run_reads_every_host_and_gpu_in_both_forms():
    js, table = read("sim_gb200_4trays_healthy.txt"), read("sim_gb200_4trays_healthy_text.txt")
    for out in (js, table):
        assert (out["complete"], out["test"], out["status"], out["runtime_error"]) == (True, "MNUBERGEMM", "Pass", None)
        assert (out["hosts_found"], out["hosts_with_errors"], out["total_gpus"]) == (4, 0, 16)
        assert (out["driver_version"], out["dcgm_version"]) == ("580.105.08", "4.5.2")
        assert [(h["host_id"], h["hostname"], h["status"]) for h in out["hosts"]] == [
            (0, "node07", "Pass"), (1, "node08", "Pass"), (2, "node09", "Pass"), (3, "node10", "Pass")]
        assert all([g["gpu"] for g in h["gpus"]] == [0, 1, 2, 3] for h in out["hosts"])
    assert (js["format"], table["format"]) == ("json", "text")
    assert js["hosts"][0]["driver_version"] == "580.105.08" and table["hosts"][0]["driver_version"] is None


def test_a_failed_gpus_wrapped_error_is_read_back_whole_without_the_error_prefix():
    out = read("sim_gb200_gemm_and_nvlink_text.txt")
    assert out["status"] == "Fail" and out["hosts_with_errors"] == 2
    node09 = out["hosts"][2]
    assert node09["status"] == "Fail" and [g["status"] for g in node09["gpus"]] == ["Pass", "Pass", "Fail", "Pass"]
    assert node09["gpus"][2]["errors"] == [NCCL]  # 45-character chunks joined, the space at a cut kept
    assert out["hosts"][1]["gpus"][1]["errors"] == ["cuBLAS Error : execution failed"]
    assert read("sim_gb200_fabric_in_progress.txt")["hosts"][2]["gpus"][2]["errors"] == [NCCL]


def test_an_mpi_failure_is_a_global_error_in_both_forms():
    for name in ("sim_gb200_mpi_failed.txt", "sim_gb200_mpi_failed_text.txt"):
        out = read(name)
        assert out["status"] == "Fail" and [h["hostname"] for h in out["hosts"]] == ["node07", "node08", "node09"]
        [error] = out["global_errors"]
        assert error["category"] == "MPI" and error["message"] == (
            "MPI exited with code: 1; Check logs: /var/log/nvidia-dcgm/mndiag_mpi.stdout, "
            "/var/log/nvidia-dcgm/mndiag_mpi.stderr for more details")


def test_a_run_refused_before_it_ran_has_its_error_and_no_result():
    for name in ("sim_unsupported_sku.txt", "sim_unsupported_sku_text.txt"):
        out = read(name)
        assert out["complete"] and out["status"] is None and out["hosts"] == []
        assert out["runtime_error"] == ("Error: Unable to complete multi-node diagnostic on host localhost. "
                                        "Return: (Feature not supported) -6")


def test_a_cut_output_is_incomplete():
    assert read("sim_gb200_truncated.txt")["complete"] is False
    text = (DATA / "sim_gb200_4trays_healthy.txt").read_text()
    cut = parse_tool("dcgmi-mndiag", text[: len(text) // 2])
    assert cut["complete"] is False and cut["status"] is None


def test_a_gpu_list_cut_at_its_column_keeps_the_ids_it_can_read():
    text = (DATA / "sim_gb200_4trays_healthy_text.txt").read_text().replace(
        "|   GPUs: 0, 1, 2, 3        | Pass", "|   GPUs: 0, 1, 2, 3, 4,... | Pass", 1)
    host = parse_tool("dcgmi-mndiag", text)["hosts"][0]
    assert [g["gpu"] for g in host["gpus"]] == [0, 1, 2, 3, 4] and host["gpus_cut"] is True  # 4 ends before ","


@pytest.mark.parametrize("text, why", [
    ("Successfully ran diagnostic for group.\n", "neither"),
    ('{"DCGM Diagnostic": "DCGM Diagnostic", "test_categories": []}', "DCGM Multi-Node Diagnostic"),
    ("", "empty"),
])
def test_other_text_is_refused_in_one_line(text, why):
    with pytest.raises(ParseError, match=why) as caught:
        parse_tool("dcgmi-mndiag", text)
    assert "\n" not in str(caught.value)


def test_an_unknown_result_word_is_refused():
    text = (DATA / "sim_gb200_4trays_healthy_text.txt").read_text().replace(
        "| MNUBERGEMM Test           | Pass ", "| MNUBERGEMM Test           | Okay ", 1)
    with pytest.raises(ParseError, match="'Okay' is none of Pass, Fail"):
        parse_tool("dcgmi-mndiag", text)
