"""GPU test tools: dcgmi diag, nvbandwidth, p2pBandwidthLatencyTest, gpu_burn."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import dcgmi, gpu_burn, nvbandwidth, p2p

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _dcgm_row(name: str, text: str) -> list[str]:
    """Table lines as dcgmi prints them: 45-character chunks, continuations unnamed."""
    chunks = [text[i:i + 45] for i in range(0, len(text), 45)] or [""]
    return [f"| {name if i == 0 else '':<25} | {chunk:<45}  |" for i, chunk in enumerate(chunks)]


def _dcgm_2x() -> str:
    rule = "+---------------------------+------------------------------------------------+"
    rows = ["Successfully ran diagnostic for group.", rule,
            "| Diagnostic                | Result                                         |",
            "+===========================+================================================+",
            "|-----  Deployment  --------+------------------------------------------------|"]
    for name, text in [("Blacklist", "Pass"), ("NVML Library", "Pass"),
                       ("Page Retirement/Row Remap", "Fail"),
                       ("Warning", "GPU 3 There are 2 pending retired pages on GPU 3."),
                       ("Graphics Processes", "Pass")]:
        rows += _dcgm_row(name, text)
    rows.append("+-----  Integration  -------+------------------------------------------------+")
    rows += _dcgm_row("PCIe", "Fail - GPUs: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11")
    rows.append("+-----  Hardware  ----------+------------------------------------------------+")
    rows += _dcgm_row("GPU Memory", "Warn - All") + _dcgm_row("SM Stress", "Pass - All")
    rows += _dcgm_row("Targeted Stress", "Skip - All")
    return "\n".join(rows + [rule]) + "\n"


def test_dcgmi_2x_table_wrapped_gpu_list_and_warning() -> None:
    result = dcgmi.parse(_dcgm_2x())
    results = result["results"]
    assert results["Page Retirement/Row Remap"]["status"] == "Fail"
    assert results["Page Retirement/Row Remap"]["warnings"] == ["GPU 3 There are 2 pending retired pages on GPU 3."]
    assert results["PCIe"]["failed_gpus"] == list(range(12))
    assert results["GPU Memory"]["status"] == "Warn" and results["Targeted Stress"]["status"] == "Skip"
    assert result["failed_tests"] == ["Page Retirement/Row Remap", "PCIe"]
    assert result["failed_gpus"] == list(range(12)) and result["gpu_device_ids"] == []
    assert result["dcgm_version"] is None and result["complete"] is True


def test_dcgmi_truncated_and_refused() -> None:
    text = _dcgm_2x()
    cut = dcgmi.parse(text[:text.index("| SM Stress")])
    assert cut["complete"] is False and "SM Stress" not in cut["results"]
    assert cut["results"]["GPU Memory"]["status"] == "Warn"
    with pytest.raises(ParseError, match="Diagnostic | Result"):
        dcgmi.parse("Error: unable to establish a connection to the specified host: localhost\n")


NVBANDWIDTH_07 = """\
nvbandwidth Version: v0.7
Built from Git version: v0.7

CUDA Runtime Version: 12040
CUDA Driver Version: 12040
Driver Version: 550.54.15

Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)
Device 1: NVIDIA H100 80GB HBM3 (00000000:3b:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     55.53     55.54

SUM host_to_device_memcpy_ce 111.07

Running device_to_device_memcpy_read_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    389.12
 1    390.01       N/A

SUM device_to_device_memcpy_read_ce 779.13
"""


def test_nvbandwidth_newer_format_with_na_and_sum() -> None:
    result = nvbandwidth.parse(NVBANDWIDTH_07)
    assert result["version"] == "v0.7" and result["complete"] is True
    host, d2d = result["tests"]
    assert host["name"] == "host_to_device_memcpy_ce" and host["matrix"] == {0: {0: 55.53, 1: 55.54}}
    assert d2d["matrix"] == {0: {0: None, 1: 389.12}, 1: {0: 390.01, 1: None}}
    assert (d2d["sum_GBps"], d2d["sum_printed"]) == (779.13, True)


def test_nvbandwidth_truncated_and_refused() -> None:
    assert nvbandwidth.parse(NVBANDWIDTH_07[:NVBANDWIDTH_07.rindex("SUM")])["complete"] is False
    readme = (SAMPLES / "nvbandwidth_readme_d2d_write_8gpu.txt").read_text()
    cut = nvbandwidth.parse(readme[:readme.index("\n6 ")])
    assert cut["complete"] is False and len(cut["tests"][0]["matrix"]) == 6
    with pytest.raises(ParseError, match="Running <testcase>"):
        nvbandwidth.parse("nvbandwidth: command not found\n")


P2P_T4 = """\
[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
Device: 0, Tesla T4, pciBusID: 3b, pciDeviceID: 0, pciDomainID:0
Device: 1, Tesla T4, pciBusID: d8, pciDeviceID: 0, pciDomainID:0
Device=0 CANNOT Access Peer Device=1
Device=1 CANNOT Access Peer Device=0

***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.
So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.

P2P Connectivity Matrix
     D\\D     0     1
     0       1     0
     1       0     1
Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 239.33   5.84
     1   5.86 240.05
Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 239.94   5.85
     1   5.86 240.64
Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 243.73  10.33
     1  10.51 244.40
Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 243.72  10.31
     1  10.49 244.20
P2P=Disabled Latency Matrix (us)
   GPU     0      1
     0   1.72  13.92
     1  13.37   1.69

   CPU     0      1
     0   3.51   8.33
     1   8.19   3.44
P2P=Enabled Latency Matrix (us)
   GPU     0      1
     0   1.69  13.54
     1  13.56   1.71

   CPU     0      1
     0   3.46   8.29
     1   8.31   3.41

NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost is enabled.
"""


def test_p2p_older_titles_without_peer_access() -> None:
    result = p2p.parse(P2P_T4)
    assert result["complete"] is True and result["gpu_count"] == 2
    assert result["peer_access"] == {0: {1: False}, 1: {0: False}}
    assert result["gpus"][1] == {"index": 1, "name": "Tesla T4", "pci_bus_id": "d8", "pci_domain_id": "0"}
    assert result["uni_p2p_enabled_GBps"] == {0: {0: 239.94, 1: 5.85}, 1: {0: 5.86, 1: 240.64}}
    assert result["bi_p2p_enabled_GBps"][1][0] == 10.49
    assert result["latency_p2p_disabled_cpu_us"][1][0] == 8.19
    assert result["latency_p2p_enabled_gpu_us"][0][1] == 13.54


def test_p2p_truncated_and_refused() -> None:
    cut = p2p.parse(P2P_T4[:P2P_T4.index("Bidirectional P2P=Enabled")])
    assert cut["complete"] is False and cut["bi_p2p_enabled_GBps"] == {}
    assert cut["bi_p2p_disabled_GBps"][0][1] == 10.33
    with pytest.raises(ParseError, match="P2P"):
        p2p.parse((SAMPLES / "nvbandwidth_readme_d2d_write_8gpu.txt").read_text())


GPU_BURN_OLD = (
    "GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
    "GPU 1: Tesla V100-SXM2-16GB (UUID: GPU-66666666-7777-8888-9999-000000000000)\n"
    "Initialized device 0 with 16130 MB of memory (15748 MB available, using 14173 MB of it), using FLOATS\n"
    "10.0%  proc'd: 4356 / 4356   errors: 0 - 0   temps: 52 C - 50 C \r"
    "20.0%  proc'd: 8712 / 8712   errors: 0 - 3  (WARNING!)  temps: 60 C - 58 C \r"
    "100.0%  proc'd: 43560 / 43120   errors: 0 - 7  (WARNING!)  temps: 71 C - 69 C \n"
    "Killing processes.. done\n\nTested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: FAULTY\n")


def test_gpu_burn_old_format_without_gflops() -> None:
    result = gpu_burn.parse(GPU_BURN_OLD)
    assert result["completed"] is True and result["faulty_gpus"] == [1]
    assert result["gpus"][1] == {"index": 1, "name": "Tesla V100-SXM2-16GB", "verdict": "FAULTY",
                                 "gflops": None, "errors": 7, "warning": True, "temp_C": 69}


def test_gpu_burn_truncated() -> None:
    cut = gpu_burn.parse(GPU_BURN_OLD[:GPU_BURN_OLD.index("Killing")] + "100.0%  proc'd: 1 / 1   errors: 0 - 9")
    assert cut["completed"] is False and cut["complete"] is False
    assert [g["verdict"] for g in cut["gpus"]] == [None, None]
    assert [g["errors"] for g in cut["gpus"]] == [0, 7]  # the cut-off last line is not used
    with pytest.raises(ParseError, match="proc'd"):
        gpu_burn.parse("GPU 0: NVIDIA A100 (UUID: GPU-1)\nNo CUDA devices\n")
