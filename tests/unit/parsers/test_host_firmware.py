"""Issue 33 parser additions: firmware/settings fields of nvidia-smi, lspci device blocks, perftest's
CUDA lines and failures, ibv_devinfo CAs, and the dmidecode, ipmitool, uname, /proc and grep -H parsers."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import parse_tool

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _sample(name: str) -> str:
    return (SAMPLES / name).read_text()


@pytest.mark.parametrize("tool,name,want", [
    ("nvidia-smi-q", "smi_q_h100x8_535_183.txt",
     {"persistence_mode": "Enabled", "vbios_version": "96.00.74.00.01", "inforom_image_version": "G520.0200.00.05",
      "gsp_firmware_version": "535.183.01", "mig_mode_current": "Disabled", "ecc_mode_current": "Enabled",
      "power_limit_W": 700.0, "default_power_limit_W": 700.0, "max_power_limit_W": 700.0,
      "applications_clocks_MHz": {"graphics": 1980, "memory": 2619},
      "default_applications_clocks_MHz": {"graphics": 1980, "memory": 2619}}),
    ("nvidia-smi-q", "smi_q_a10_remap_pending_535_129.txt",  # MIG N/A on an A10
     {"mig_mode_current": None, "power_limit_W": 150.0, "applications_clocks_MHz": {"graphics": 1695, "memory": 6251}}),
    ("nvidia-smi-qx", "nvidia_smi_qx_b200_8gpu_driver580_hgx.txt",
     {"persistence_mode": "Disabled", "vbios_version": "97.00.FA.00.09", "inforom_image_version": "G525.0220.00.03",
      "gsp_firmware_version": "580.105.08", "mig_mode_current": "Disabled", "ecc_mode_current": "Enabled",
      "power_limit_W": 1000.0, "default_power_limit_W": 1000.0, "max_power_limit_W": 1000.0,
      "applications_clocks_MHz": {"graphics": 1965, "memory": 3996}}),
    ("nvidia-smi-qx", "smi_qx_t4_v11_width_x8.txt",  # v11: power_readings/power_limit
     {"vbios_version": "90.04.84.00.06", "gsp_firmware_version": "515.105.01", "power_limit_W": 70.0,
      "max_power_limit_W": 70.0, "applications_clocks_MHz": {"graphics": 585, "memory": 5001}}),
])
def test_smi_firmware_and_settings(tool, name, want):
    gpu = parse_tool(tool, _sample(name))["gpus"][0]
    assert {key: gpu[key] for key in want} == want


def test_smi_settings_na_and_older_power_limit():
    text = ("==============NVSMI LOG==============\nDriver Version                            : 470.57.02\n"
            "Attached GPUs                             : 1\nGPU 00000000:01:00.0\n"
            "    Product Name                          : Tesla T4\n    GSP Firmware Version                  : N/A\n"
            "    MIG Mode\n        Current                           : N/A\n"
            "    Power Readings\n        Power Limit                       : 70.00 W\n"
            "        Default Power Limit               : 70.00 W\n"
            "    Applications Clocks\n        Graphics                          : N/A\n"
            "        Memory                            : 5001 MHz\n")
    gpu = parse_tool("nvidia-smi-q", text)["gpus"][0]
    assert gpu["gsp_firmware_version"] is None and gpu["mig_mode_current"] is None
    assert gpu["power_limit_W"] == 70.0 and gpu["max_power_limit_W"] is None
    assert gpu["applications_clocks_MHz"] is None and gpu["vbios_version"] is None


def test_lspci_blocks_root_port_and_endpoint_order():
    text = ("0000:00:01.1 PCI bridge: Intel Corporation Device 09ab\n"
            "\tBus: primary=00, secondary=1a, subordinate=1f, sec-latency=0\n"
            "\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00\n"
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n\t\tLnkSta:\tSpeed 32GT/s, Width x16\n"
            "\tCapabilities: [220 v1] Access Control Services\n"
            "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-\n\n"
            "0000:1b:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
            "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n")
    root, gpu = parse_tool("lspci", text)["blocks"]
    assert root["port_type"] == "Root Port" and root["bus"] == {"primary": 0, "secondary": 26, "subordinate": 31}
    assert root["acs_ctl"]["ReqRedir"] is True and root["acs_ctl"]["UpstreamFwd"] is False
    assert (gpu["bdf"], gpu["class"], gpu["port_type"], gpu["bus"], gpu["acs_ctl"]) == \
        ("0000:1b:00.0", "3D controller", "Endpoint", None, None)
    assert gpu["description"] == "NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"


def test_perftest_cuda_by_bus_id_and_unknown_failure_refused():
    text = ("initializing CUDA\nFinding PCIe BUS 0000:1b:00.0\nPicking GPU number 3\n"
            "Couldn't init GPU context: 1\n Couldn't create IB resources\n")
    result = parse_tool("perftest", text)
    assert result["cuda"] == {"device": 3, "pci": "0000:1b:00.0", "name": None, "dmabuf": False}
    assert result["errors"] == ["Couldn't init GPU context: 1", "Couldn't create IB resources"]
    assert result["bw_avg_Gbps"] is None and result["complete"] is True
    with pytest.raises(ParseError, match="known failure"):
        parse_tool("perftest", "initializing CUDA\nPicking device No. 0\nSegmentation fault\n")


def test_perftest_dmabuf_failure_and_cut_banner():
    fail = _sample("ib_write_bw_cuda_mr_fail_k80_old_perftest.txt")
    with pytest.raises(ParseError):
        parse_tool("perftest", fail[: fail.index("Couldn't allocate")])  # cut before the failure: nothing known
    ok = _sample("ib_write_bw_cuda_dmabuf_h200_gbits.txt")
    cut = parse_tool("perftest", ok[: ok.index(" #bytes")])
    assert cut["complete"] is False and cut["cuda"]["dmabuf"] is True and cut["bw_avg_Gbps"] is None


def test_ibv_devinfo_cas_from_ibstat_too():
    cas = parse_tool("ibstat", _sample("ibstat_h100_mixed_down_ports.txt"))["cas"]
    assert cas and all(c["board_id"] is None and c["fw_ver"] for c in cas)
    assert all(p["active_mtu"] is None for c in cas for p in c["ports"])


def test_dmidecode_refuses_other_blocks_and_keeps_missing_as_null():
    with pytest.raises(ParseError, match="BIOS Information"):
        parse_tool("dmidecode", "# dmidecode 3.3\nHandle 0x0002, DMI type 2, 8 bytes\nBase Board Information\n")
    result = parse_tool("dmidecode", "Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n"
                                     "\tManufacturer: Supermicro\n\tProduct Name: Not Specified\n")
    assert result["bios"] is None and result["system"] == {"manufacturer": "Supermicro", "product_name": None,
                                                           "serial_number": None}


def test_ipmitool_without_aux_and_refused():
    result = parse_tool("ipmitool-mc-info", "Device ID                 : 32\nFirmware Revision         : 3.65\n"
                                            "IPMI Version              : 2.0\n")
    assert result["firmware_revision"] == "3.65"
    assert result["aux_firmware_revision"] is None and result["product_name"] is None
    with pytest.raises(ParseError, match="Firmware Revision"):
        parse_tool("ipmitool-mc-info", "Device ID                 : 32\n")


@pytest.mark.parametrize("text,kernel", [("6.8.0-45-generic\n", "6.8.0-45-generic"),
                                         ("\n3.10.0-862.el7.x86_64", "3.10.0-862.el7.x86_64"),
                                         ("6.6.72+\n", "6.6.72+"), ("5.17.1-t2\n", "5.17.1-t2")])
def test_uname_release(text, kernel):
    assert parse_tool("uname-r", text)["kernel"] == kernel


@pytest.mark.parametrize("text", ["Linux\n", "uname: invalid option -- 'x'\n", "6\n", "6.8.0 generic\n"])
def test_uname_refuses_non_release(text):
    with pytest.raises(ParseError):
        parse_tool("uname-r", text)


def test_cmdline_quotes_repeats_and_refusals():
    result = parse_tool("proc-cmdline", 'BOOT_IMAGE=/vmlinuz iommu=off dyndbg="file x.c +p" quiet iommu=pt\n')
    assert result["params"][2] == ["dyndbg", "file x.c +p"] and result["args"]["iommu"] == "pt"
    for text in ("quiet splash\n", "a=1\nb=2\n"):
        with pytest.raises(ParseError):
            parse_tool("proc-cmdline", text)


def test_proc_modules_refuses_lsmod_and_truncated_line():
    with pytest.raises(ParseError):
        parse_tool("proc-modules", "Module                  Size  Used by\nnvidia_uvm           4673536  2\n")
    with pytest.raises(ParseError):
        parse_tool("proc-modules", "nvidia 54300672 67 nvidia_modeset,nvidia_uvm, Li")


def test_grep_h_files_and_refusal():
    text = ("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor:performance\n"
            "/sys/devices/system/cpu/cpufreq/policy1/scaling_governor:powersave\n"
            "/sys/kernel/iommu_groups/7/type:DMA-FQ\n")
    assert parse_tool("grep-h", text)["files"] == {
        "/sys/devices/system/cpu/cpufreq/policy0/scaling_governor": "performance",
        "/sys/devices/system/cpu/cpufreq/policy1/scaling_governor": "powersave",
        "/sys/kernel/iommu_groups/7/type": "DMA-FQ"}
    assert parse_tool("grep-h", "")["files"] == {}
    missing = parse_tool("grep-h", "grep: /sys/devices/system/cpu/cpufreq: No such file or directory\n")
    assert missing["files"] == {} and missing["errors"] == [
        "grep: /sys/devices/system/cpu/cpufreq: No such file or directory"]
    assert parse_tool("grep-h", "find: '/sys/kernel/iommu_groups': Permission denied\n")["errors"] == [
        "find: '/sys/kernel/iommu_groups': Permission denied"]
    with pytest.raises(ParseError):
        parse_tool("grep-h", "no colon here\n")
