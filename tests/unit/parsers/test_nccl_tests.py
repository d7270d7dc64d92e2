"""nccl-tests: current header generation, tag-output prefixes, validation, truncation."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import nccl_tests

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"

CURRENT_TAGGED = """\
[1,0]<stdout>:# nccl-tests version 2.14.1 nccl-headers=22304 nccl-library=22304
[1,0]<stdout>:# Collective test starting: all_reduce_perf
[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [0000:19:00] NVIDIA H100 80GB HBM3
[1,1]<stdout>:#  Rank  1 Group  0 Pid  12346 on      node1 device  1 [0000:3b:00] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#
[1,0]<stdout>:#                                                              out-of-place                       in-place
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,1]<stderr>:node1:12346:12400 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM
[1,0]<stdout>:           8             2     float     sum      -1    18.52    0.00    0.00      0    18.33    0.00    0.00      0
[1,0]<stdout>:   134217728      33554432     float     sum      -1    412.3  325.53  325.53      0    410.8  326.72  326.72      3
[1,1]<stderr>:node1:12346:12400 [1] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_3:1 Got async event : port error
[1,0]<stdout>:# Out of bounds values : 3 FAILED
[1,0]<stdout>:# Avg bus bandwidth    : 162.765
[1,0]<stdout>:#
[1,0]<stdout>:# Collective test concluded: all_reduce_perf
"""  # noqa: E501 -- verbatim nccl-tests output; its lines are as wide as the tool prints them


def test_current_format_with_tag_output_and_wrong_counts() -> None:
    result = nccl_tests.parse(CURRENT_TAGGED)
    assert (result["collective"], result["collective_source"], result["nranks"]) == ("all_reduce", "printed", 2)
    assert result["nccl_tests_version"] == "2.14.1" and result["validation"] == 1
    assert [r["size_bytes"] for r in result["rows"]] == [8, 134217728]
    last = result["rows"][-1]
    assert (last["type"], last["redop"], last["root"], last["count"]) == ("float", "sum", -1, 33554432)
    assert last["in_place"] == {"time_us": 410.8, "algbw_GBps": 326.72, "busbw_GBps": 326.72, "wrong": 3}
    assert result["busbw_at_max_size_GBps"] == {"out_of_place": 325.53, "in_place": 326.72}
    assert (result["wrong"], result["out_of_bounds_failed"], result["avg_busbw_GBps"]) == (3, True, 162.765)
    assert result["warnings"] == ["node1:12346:12400 [1] transport/net_ib.cc:154 NCCL WARN NET/IB : "
                                  "mlx5_3:1 Got async event : port error"]
    assert result["devices"][1]["name"] == "NVIDIA H100 80GB HBM3" and result["complete"] is True


def test_a_line_mpirun_forwarded_in_two_pieces_carries_its_tag_again_and_still_parses() -> None:
    """Open MPI tags each piece it forwards: a row and a Rank line cut mid-line (as seen under
    Debian 12's Open MPI 4.1) parse as the uncut text does."""
    cut = CURRENT_TAGGED.replace("33554432     float", "33554432    [1,0]<stdout>: float").replace(
        "Pid  12345 on ", "Pid  12345[1,0]<stdout>: on ")
    assert cut != CURRENT_TAGGED and nccl_tests.parse(cut) == nccl_tests.parse(CURRENT_TAGGED)


def test_current_format_validation_off() -> None:
    text = CURRENT_TAGGED.replace("validation: 1", "validation: 0").replace("      0", "    N/A")
    text = text.replace("      3\n", "    N/A\n").replace("3 FAILED", "0 OK")
    result = nccl_tests.parse(text)
    assert result["wrong"] is None and result["rows"][0]["out_of_place"]["wrong"] is None
    assert result["out_of_bounds_failed"] is False


def test_collective_inferred_from_sizes_when_not_printed() -> None:
    text = (SAMPLES / "nccl_allreduce_a100x8_novalidation.txt").read_text()
    result = nccl_tests.parse(text)
    assert (result["collective"], result["collective_source"]) == ("all_reduce", "inferred")
    scatter = text.replace("8589934592    2147483648", "8589934592     268435456")
    assert nccl_tests.parse(scatter)["collective"] == "reduce_scatter"


def test_truncated_without_average() -> None:
    text = CURRENT_TAGGED[:CURRENT_TAGGED.index("[1,0]<stdout>:# Out of bounds")]
    result = nccl_tests.parse(text)
    assert result["complete"] is False and result["avg_busbw_GBps"] is None
    assert len(result["rows"]) == 2 and result["out_of_bounds_failed"] is None
    half_row = nccl_tests.parse(CURRENT_TAGGED[:CURRENT_TAGGED.index("412.3") + 5])
    assert len(half_row["rows"]) == 1 and half_row["complete"] is False


def test_refuses_other_text() -> None:
    with pytest.raises(ParseError, match="not nccl-tests output"):
        nccl_tests.parse((SAMPLES / "ib_write_bw_cx7_ndr_gbits.txt").read_text())
