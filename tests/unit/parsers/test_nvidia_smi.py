"""nvidia-smi formats: table, -q text, -q -x XML, CSV query, topo -m, nvlink -s.

Variants are written from the layouts of other driver branches than the samples'.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import smi_csv, smi_nvlink, smi_query, smi_table, smi_topo, smi_xml

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"

TABLE_470 = """\
Tue Mar  8 10:11:12 2022
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |
| N/A   30C    P0    60W / 400W |      3MiB / 40536MiB |      7%      Default |
|                               |                      |             Disabled |
+-------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM...  Off  | 00000000:0F:00.0 Off |                    2 |
| ERR!  ERR!  ERR!   ERR! / ERR! |  40536MiB / 40536MiB |    ERR!      Default |
|                               |                      |                 ERR! |
+-------------------------------+----------------------+----------------------+
Unable to determine the device handle for GPU0000:87:00.0: Unknown Error

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|=============================================================================|
|    0   N/A  N/A      4242      C   python                          1000MiB |
+-----------------------------------------------------------------------------+
"""

TABLE_418 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 418.67       Driver Version: 418.67       CUDA Version: 10.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  Off  | 00000000:1A:00.0 Off |                  N/A |
| N/A   36C    P0    43W / 300W |      0MiB / 32480MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""


def test_table_pre_550_layout_with_err_cells() -> None:
    result = smi_table.parse(TABLE_470)
    assert (result["driver_version"], result["cuda_version"], result["complete"]) == ("470.82.01", "11.4", True)
    first, second = result["gpus"]
    assert first == {"index": 0, "name": "NVIDIA A100-SXM...", "bus_id": "00000000:07:00.0",
                     "persistence_mode": "On", "fan_pct": None, "temp_C": 30, "perf": "P0",
                     "power_W": 60, "power_cap_W": 400, "memory_used_MiB": 3,
                     "memory_total_MiB": 40536, "util_pct": 7, "ecc_uncorrected_volatile": 0, "faults": []}
    assert second["ecc_uncorrected_volatile"] == 2 and second["temp_C"] is None
    assert second["faults"] == ["fan ERR!", "temp ERR!", "perf ERR!", "power ERR!", "cap ERR!", "util ERR!"]
    assert result["errors"] == ["Unable to determine the device handle for GPU0000:87:00.0: Unknown Error"]


def test_table_418_without_mig_line_and_ecc_na() -> None:
    (gpu,) = smi_table.parse(TABLE_418)["gpus"]
    assert (gpu["name"], gpu["persistence_mode"], gpu["power_W"], gpu["ecc_uncorrected_volatile"]) == \
        ("Tesla V100-SXM2...", "Off", 43, None)


def test_table_truncated() -> None:
    text = (SAMPLES / "smi_table_h100x8_550.txt").read_text()
    result = smi_table.parse(text[:text.index("|   3  NVIDIA")])
    assert result["complete"] is False
    assert [g["index"] for g in result["gpus"]] == [0, 1, 2]


def test_table_refuses_other_text() -> None:
    with pytest.raises(ParseError, match="no 'NVIDIA-SMI ... Driver Version' banner"):
        smi_table.parse((SAMPLES / "ibstat_h100_mixed_down_ports.txt").read_text())


QUERY_470 = """\

==============NVSMI LOG==============

Timestamp                                 : Thu Jan 13 09:00:00 2022
Driver Version                            : 470.82.01
CUDA Version                              : 11.4

Attached GPUs                             : 1
GPU 00000000:1A:00.0
    Product Name                          : Tesla V100-SXM2-32GB
    PCI
        Bus Id                            : 00000000:1A:00.0
        GPU Link Info
            PCIe Generation
                Max                       : 3
                Current                   : 1
            Link Width
                Max                       : 16x
                Current                   : 8x
        Replays Since Reset               : 7
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 12
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : N/A
                Total                     : 12
            Double Bit
                Device Memory             : 2
                Register File             : 0
                L1 Cache                  : 1
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : 0
                Total                     : 3
        Aggregate
            Single Bit
                Device Memory             : 40
                Total                     : 40
            Double Bit
                Device Memory             : 9
                Total                     : 9
    Retired Pages
        Single Bit ECC                    : 1
        Double Bit ECC                    : 4
        Pending Page Blacklist            : Yes
    Temperature
        GPU Current Temp                  : 36 C
    Power Readings
        Power Management                  : Supported
        Power Draw                        : 43.12 W
        Power Limit                       : 300.00 W
    Processes                             : None
"""


def test_query_old_single_double_bit_layout() -> None:
    result = smi_query.parse(QUERY_470)
    assert (result["driver_version"], result["attached_gpus"], result["complete"]) == ("470.82.01", 1, True)
    (gpu,) = result["gpus"]
    assert gpu["ecc_uncorrected_volatile"] == 2 and gpu["sram_uncorrected_volatile"] == 1
    assert gpu["ecc_uncorrected_aggregate"] == 9 and gpu["sram_uncorrected_aggregate"] == 0
    assert gpu["remapped_rows"] is None and gpu["retired_pages_pending"] is True
    assert gpu["retired_pages"] == {"single_bit": 1, "double_bit": 4, "pending": True}
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["width_current"], gpu["width_max"]) == (1, 3, 8, 16)
    assert (gpu["power_W"], gpu["temp_C"], gpu["pcie_replays"]) == (43.12, 36, 7)


def test_query_module_power_never_overwrites_gpu_power() -> None:
    text = QUERY_470.replace("    Power Readings\n", "    Module Power Readings\n"
                             "        Power Draw                        : 612.00 W\n"
                             "    GPU Power Readings\n"
                             "        Average Power Draw                : 70.10 W\n"
                             "        Instantaneous Power Draw          : 71.50 W\n"
                             "    Unused Section\n")
    (gpu,) = smi_query.parse(text)["gpus"]
    assert gpu["power_W"] == 71.50


def test_query_535_split_sram_counters_are_summed() -> None:
    text = (SAMPLES / "smi_q_h100x8_535_183.txt").read_text()
    text = text.replace("SRAM Uncorrectable Parity     : 0", "SRAM Uncorrectable Parity     : 2", 1)
    text = text.replace("SRAM Uncorrectable SEC-DED    : 0", "SRAM Uncorrectable SEC-DED    : 3", 1)
    gpu = smi_query.parse(text)["gpus"][0]
    assert gpu["sram_uncorrected_volatile"] == 5 and gpu["sram_uncorrected_aggregate"] == 0


def test_query_truncated() -> None:
    text = (SAMPLES / "smi_q_h100x8_535_183.txt").read_text()
    cut = smi_query.parse(text[:text.index("GPU 00000000:86:00.0")])
    assert cut["complete"] is False and len(cut["gpus"]) == 3
    inside = smi_query.parse(text[:text.rindex("    Temperature")])
    assert inside["complete"] is False and len(inside["gpus"]) == 8


def test_query_refuses_table() -> None:
    with pytest.raises(ParseError, match="no 'Driver Version' line"):
        smi_query.parse("+----+\n| nothing |\n+----+\n")


XML_V12 = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<driver_version>535.183.01</driver_version>
	<cuda_version>12.2</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:53:00.0">
		<product_name>NVIDIA H100 80GB HBM3</product_name>
		<pci>
			<pci_bus_id>00000000:53:00.0</pci_bus_id>
			<pci_gpu_link_info>
				<pcie_gen>
					<max_link_gen>5</max_link_gen>
					<current_link_gen>4</current_link_gen>
					<device_current_link_gen>4</device_current_link_gen>
					<max_device_link_gen>5</max_device_link_gen>
					<max_host_link_gen>5</max_host_link_gen>
				</pcie_gen>
				<link_widths>
					<max_link_width>16x</max_link_width>
					<current_link_width>16x</current_link_width>
				</link_widths>
			</pci_gpu_link_info>
			<replay_counter>120</replay_counter>
		</pci>
		<ecc_errors>
			<volatile>
				<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>1</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>2</sram_uncorrectable_secded>
				<dram_correctable>5</dram_correctable>
				<dram_uncorrectable>3</dram_uncorrectable>
			</volatile>
			<aggregate>
				<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
				<dram_correctable>0</dram_correctable>
				<dram_uncorrectable>7</dram_uncorrectable>
				<sram_threshold_exceeded>No</sram_threshold_exceeded>
			</aggregate>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</multiple_single_bit_retirement>
			<double_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</double_bit_retirement>
			<pending_blacklist>N/A</pending_blacklist>
			<pending_retirement>N/A</pending_retirement>
		</retired_pages>
		<remapped_rows>
			<remapped_row_corr>0</remapped_row_corr>
			<remapped_row_unc>3</remapped_row_unc>
			<remapped_row_pending>Yes</remapped_row_pending>
			<remapped_row_failure>No</remapped_row_failure>
		</remapped_rows>
		<temperature>
			<gpu_temp>36 C</gpu_temp>
		</temperature>
		<module_power_readings>
			<power_draw>612.00 W</power_draw>
		</module_power_readings>
		<gpu_power_readings>
			<power_draw>71.97 W</power_draw>
		</gpu_power_readings>
		<processes>
		</processes>
	</gpu>

</nvidia_smi_log>
"""


def test_xml_v12_split_sram_remap_and_gpu_power() -> None:
    result = smi_xml.parse(XML_V12)
    assert (result["schema"], result["driver_version"], result["complete"]) == ("v12", "535.183.01", True)
    (gpu,) = result["gpus"]
    assert (gpu["ecc_uncorrected_volatile"], gpu["sram_uncorrected_volatile"]) == (3, 3)
    assert gpu["ecc_uncorrected_aggregate"] == 7
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 3, "pending": True, "failure": False}
    assert gpu["retired_pages_pending"] is None and gpu["retired_pages"] is None
    assert (gpu["power_W"], gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_replays"]) == (71.97, 4, 5, 120)


def test_xml_v13_instant_power_and_v10_double_bit() -> None:
    v13 = XML_V12.replace("<power_draw>71.97 W</power_draw>\n\t\t</gpu_power",
                          "<average_power_draw>70.00 W</average_power_draw>\n"
                          "<instant_power_draw>72.50 W</instant_power_draw>\n\t\t</gpu_power")
    assert smi_xml.parse(v13)["gpus"][0]["power_W"] == 72.50
    v10 = XML_V12.replace("""<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>1</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>2</sram_uncorrectable_secded>
				<dram_correctable>5</dram_correctable>
				<dram_uncorrectable>3</dram_uncorrectable>""",
                          "<double_bit><device_memory>4</device_memory><register_file>1</register_file>"
                          "<total>6</total></double_bit>")
    gpu = smi_xml.parse(v10)["gpus"][0]
    assert (gpu["ecc_uncorrected_volatile"], gpu["sram_uncorrected_volatile"]) == (4, 2)


def test_xml_truncated_parses_what_is_there() -> None:
    text = XML_V12[:XML_V12.index("<temperature>")]
    result = smi_xml.parse(text)
    assert result["complete"] is False
    assert result["gpus"][0]["remapped_rows"]["uncorrectable"] == 3
    assert result["gpus"][0]["temp_C"] is None


def test_xml_refuses_other_xml() -> None:
    with pytest.raises(ParseError, match="no <nvidia_smi_log> element"):
        smi_xml.parse("<?xml version='1.0'?><testsuites></testsuites>")


def test_csv_nounits_noheader_and_placeholders() -> None:
    text = ("index, name, pci.bus_id, memory.used [MiB], clocks_throttle_reasons.active\n"
            "0, NVIDIA H100 80GB HBM3, 00000000:19:00.0, 1 MiB, 0x0000000000000001\n"
            "1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0, [N/A], [Not Supported]\n")
    result = smi_csv.parse(text)
    assert result["columns"] == ["index", "name", "pci.bus_id", "memory.used", "clocks_throttle_reasons.active"]
    assert result["units"]["memory.used"] == "MiB"
    assert result["rows"][0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci.bus_id": "00000000:19:00.0",
                                 "memory.used": 1, "clocks_throttle_reasons.active": "0x0000000000000001"}
    assert result["rows"][1]["memory.used"] is None
    headless = smi_csv.parse("0, 35, 61.20\n1, 37, 65.02\n")
    assert headless["columns"] is None and headless["rows"][1] == {0: 1, 1: 37, 2: 65.02}


def test_csv_truncated_row_dropped() -> None:
    text = (SAMPLES / "smi_query_csv_b300x7_in_watch.txt").read_text().rstrip("\n")
    result = smi_csv.parse(text[:-6])  # "6, 0 %, 39, 184.35 W" loses its unit
    assert result["complete"] is False and len(result["rows"]) == 6


TOPO_OLD = (
    "\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV12\tPXB\tSYS\t0-31\t0\n"
    "GPU1\tNV12\t X \tSYS\tPXB\t32-63\t1\n"
    "mlx5_0\tPXB\tSYS\t X \tSYS\n"
    "mlx5_1\tSYS\tPXB\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n")


def test_topo_hca_names_as_columns() -> None:
    result = smi_topo.parse(TOPO_OLD)
    assert result["matrix"]["GPU0"] == {"GPU0": "X", "GPU1": "NV12", "mlx5_0": "PXB", "mlx5_1": "SYS"}
    assert result["matrix"]["mlx5_1"]["GPU1"] == "PXB"
    assert result["cpu_affinity"] == {"GPU0": "0-31", "GPU1": "32-63"}
    assert result["affinity"]["GPU1"] == {"cpu_affinity": "32-63", "numa_affinity": "1", "gpu_numa_id": None}
    assert result["nic_legend"] == {} and result["complete"] is True


def test_topo_truncated_and_refused() -> None:
    assert smi_topo.parse(TOPO_OLD[:TOPO_OLD.index("mlx5_0\tPXB")])["complete"] is False
    with pytest.raises(ParseError, match="GPU0"):
        smi_topo.parse("GPU 0: NVIDIA A100 (UUID: GPU-1)\n")


NVLINK_A100 = """\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-b876c63f-396c-f826-5cd0-6b8409990352)
\t Link 0: 25 GB/s
\t Link 1: 25 GB/s
\t Link 2: <inactive>
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-3f38364f-09ad-250f-5aea-564e405504f6)
\t Link 0: 25 GB/s
\t Link 1: 25 GB/s
\t Link 2: 25 GB/s
GPU 2: NVIDIA A100-PCIE-40GB (UUID: GPU-0263142c-1fa3-5a88-7390-8118632bc351)
\tNVML: Unable to retrieve NVLink information as all links are inActive
"""


def test_nvlink_multi_gpu_and_all_inactive() -> None:
    result = smi_nvlink.parse(NVLINK_A100)
    assert result["complete"] is True and result["elided"] is False
    assert [len(g["links"]) for g in result["gpus"]] == [3, 3, 0]
    assert result["gpus"][0]["links"][2] == {"link": 2, "active": False, "speed_GBps": None, "status": "<inactive>"}
    assert result["gpus"][1]["links"][0]["speed_GBps"] == 25
    assert result["gpus"][2]["all_inactive"] is True


def test_nvlink_truncated_and_refused() -> None:
    cut = smi_nvlink.parse(NVLINK_A100[:NVLINK_A100.index("\t Link 2: 25 GB/s")])
    assert cut["complete"] is False and len(cut["gpus"][1]["links"]) == 2
    with pytest.raises(ParseError, match="Link k"):
        smi_nvlink.parse("GPU 0: NVIDIA A100 (UUID: GPU-1)\nGPU 1: NVIDIA A100 (UUID: GPU-2)\n")
