"""Firmware, settings and platform facts of the simulated node: the model's fields, what nvidia-smi, lspci,
ibv_devinfo, dmidecode, ipmitool and numactl print from them, the kernel views, and the fault kinds that change
them (provision/sim/settingfaults.py), each shown through the tool or view a check reads."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import dmidecode
import ibv_devinfo
import ipmitool
import lspci
import nvidia_smi
import numactl
from provision.errors import ProvisionError
from provision.sim import faults, kernelviews, settingfaults
from tests.unit.sim.conftest import TOOLS
from tests.unit.sim.test_ib_write_bw import _pair

NEW_KINDS = ("vbios_mismatch", "hca_firmware", "acs_enabled", "peermem_missing", "governor_powersave",
             "mig_enabled", "power_limit", "iommu_translated", "mtu_low", "persistence_off")


def _xml_gpu(sim, index: int = 0) -> ET.Element:
    _, out, _ = sim.run(nvidia_smi, ["-q", "-x"])
    return ET.fromstring(out.split("\n", 2)[2]).findall("gpu")[index]


def _apply(sim, kind: str, device: str = "node", value: str | None = None) -> str:
    label = faults.KINDS[kind].apply(sim.model, device, value)
    sim.write()
    return label


def test_model_has_the_firmware_and_settings_of_a_provisioned_h100(sim):
    gpu, hca = sim.model["gpus"][0], sim.model["hcas"][0]
    assert (gpu["vbios_version"], gpu["inforom_image_version"]) == ("96.00.74.00.01", "G520.0200.00.05")
    assert gpu["gsp_firmware_version"] is None and gpu["persistence_mode"] == "Enabled"
    assert gpu["mig_mode"] == {"current": "Disabled", "pending": "Disabled"}
    assert gpu["ecc_mode"] == {"current": "Enabled", "pending": "Enabled"}
    assert gpu["power_limit_W"] == gpu["default_power_limit_W"] == gpu["max_power_limit_W"] == 700.0
    assert gpu["applications_clocks_MHz"] == gpu["default_applications_clocks_MHz"] == {"graphics": 1980,
                                                                                        "memory": 2619}
    assert (hca["board_id"], hca["active_mtu"], hca["max_mtu"]) == ("MT_0000000838", 4096, 4096)
    model = sim.model
    assert model["cpu_governor"] == "performance" and model["iommu"] == "passthrough"
    assert "iommu=pt" in model["kernel_cmdline"].split()
    assert {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_peermem", "mlx5_core", "mlx5_ib",
            "ib_core"} <= set(model["modules"])
    assert model["bios"]["vendor"].startswith("American Megatrends") and model["bmc"]["firmware_revision"]
    # every GPU and HCA sits on the secondary bus of its own switch downstream port
    ports = {b["device_of"]: b for b in model["pcie_bridges"] if b["role"] == "downstream"}
    for g in model["gpus"]:
        assert ports[f"gpu{g['index']}"]["secondary"] == int(g["bus_id"].split(":")[1], 16)
    for h in model["hcas"]:
        assert ports[h["name"]]["secondary"] == int(h["pcie"]["bdf"].split(":")[1], 16)
    assert {b["role"] for b in model["pcie_bridges"]} == {"root", "upstream", "downstream"}


def test_query_xml_prints_firmware_and_settings_in_the_captures_order(sim):
    gpu = _xml_gpu(sim)
    tags = [child.tag for child in gpu]
    assert tags.index("minor_number") < tags.index("vbios_version") < tags.index("inforom_version") \
        < tags.index("gsp_firmware_version") < tags.index("pci")
    assert tags.index("clocks") < tags.index("applications_clocks") < tags.index("default_applications_clocks") \
        < tags.index("max_clocks")
    assert gpu.findtext("vbios_version") == "96.00.74.00.01"
    assert gpu.findtext("inforom_version/img_version") == "G520.0200.00.05"
    assert gpu.findtext("gsp_firmware_version") == "550.127.05"
    assert gpu.findtext("mig_mode/current_mig") == "Disabled" and gpu.findtext("ecc_mode/pending_ecc") == "Enabled"
    power = gpu.find("gpu_power_readings")
    assert [c.tag for c in power][-5:] == ["current_power_limit", "requested_power_limit", "default_power_limit",
                                          "min_power_limit", "max_power_limit"]
    assert power.findtext("default_power_limit") == "700.00 W" and power.findtext("min_power_limit") == "200.00 W"
    assert gpu.findtext("applications_clocks/graphics_clock") == "1980 MHz"
    assert gpu.findtext("default_applications_clocks/mem_clock") == "2619 MHz"


def test_query_text_prints_the_h100_captures_labels(sim):
    _, out, _ = sim.run(nvidia_smi, ["-q"])
    assert "    VBIOS Version                         : 96.00.74.00.01\n" in out
    assert "    Inforom Version\n        Image Version                     : G520.0200.00.05\n" in out
    assert "    Applications Clocks\n        Graphics                          : 1980 MHz\n" in out
    assert "        Min Power Limit                   : 200.00 W\n" in out


def test_firmware_by_whole_product_words_and_grace_iommu(profile):
    from provision.sim import hwmodel

    assert hwmodel._firmware("NVIDIA A100-SXM4-80GB") == (None, None)
    assert hwmodel._firmware("NVIDIA A10") == ("94.02.5C.00.04", "G133.0215.00.06")
    assert hwmodel._firmware("NVIDIA GB200")[0] == "97.00.B9.00.69"
    grace = {**profile, "gpu": {**profile["gpu"], "model": "NVIDIA GB200"}}
    model = hwmodel.build(grace, "node01", 0)
    assert "iommu.passthrough=1" in model["kernel_cmdline"] and "intel_iommu" not in model["kernel_cmdline"]
    settingfaults.iommu_translated(model, "node", None)
    assert "iommu.passthrough=0" in model["kernel_cmdline"]


def test_a_gpu_without_a_published_vbios_prints_na(sim):
    sim.model["gpus"][0].update(vbios_version=None, inforom_image_version=None)
    sim.write()
    gpu = _xml_gpu(sim)
    assert gpu.findtext("vbios_version") == "N/A" and gpu.findtext("inforom_version/img_version") == "N/A"


def test_vbios_mismatch_and_bad_version(sim):
    assert _apply(sim, "vbios_mismatch", "3", "96.00.99.00.01") == "GPU3 VBIOS 96.00.99.00.01"
    assert _xml_gpu(sim, 3).findtext("vbios_version") == "96.00.99.00.01"
    assert _xml_gpu(sim, 2).findtext("vbios_version") == "96.00.74.00.01"
    with pytest.raises(ProvisionError, match="VBIOS version"):
        settingfaults.vbios_mismatch(sim.model, "3", "new")


def test_hca_firmware_shows_in_ibv_devinfo(sim):
    _apply(sim, "hca_firmware", "mlx5_2", "28.36.1010")
    _, out, _ = sim.run(ibv_devinfo, ["-d", "mlx5_2"])
    assert "\tfw_ver:\t\t\t\t28.36.1010\n" in out and "\thw_ver:\t\t\t\t0x0\n\tboard_id:\t\t\tMT_0000000838\n" in out
    with pytest.raises(ProvisionError, match="MAJOR.MINOR.SUBMINOR"):
        settingfaults.hca_firmware(sim.model, "mlx5_2", "x")


def _port_block(out: str, secondary: int) -> str:
    return next(b for b in out.split("\n\n") if f"secondary={secondary:02x}," in b)


def test_lspci_shows_bridges_and_acs_enabled_on_the_gpus_port(sim):
    _, out, _ = sim.run(lspci, ["-D", "-vvv"])
    block = _port_block(out, 0x19)
    assert block.startswith("0000:17:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)")
    assert "\tBus: primary=17, secondary=19, subordinate=19, sec-latency=0" in block
    assert "Express (v2) Downstream Port (Slot+), MSI 00" in block
    assert ("\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
            in block)
    root = next(b for b in out.split("\n\n") if "Root Port" in b)
    assert "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+" in root
    assert "0000:19:00.0 3D controller: NVIDIA Corporation Device 2330" in out
    _apply(sim, "acs_enabled", "0")
    _, out, _ = sim.run(lspci, ["-D", "-vvv"])
    assert ("ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
            in _port_block(out, 0x19))
    assert "ACSCtl:\tSrcValid- " in _port_block(out, 0x18)  # the HCA's port beside it keeps ACS off
    _apply(sim, "acs_enabled", "mlx5_0")
    _, out, _ = sim.run(lspci, ["-D", "-vvv"])
    assert "ACSCtl:\tSrcValid+ " in _port_block(out, 0x18)


def test_vendor_filter_leaves_the_bridges_out(sim):
    _, out, _ = sim.run(lspci, ["-D", "-vv", "-d", "10de:"])
    assert out.count("\n0000:") + out.startswith("0000:") == 8 and "PCI bridge" not in out
    _, out, _ = sim.run(lspci, ["-D", "-vv", "-d", "15b3:"])
    assert "PCI bridge" not in out and out.count("Infiniband controller") == 8


def test_mig_persistence_and_power_limit(sim, tmp_path, monkeypatch):
    pid = tmp_path / "persistenced.pid"
    pid.write_text(str(os.getpid()))
    monkeypatch.setenv("PROVISION_SIM_PERSISTENCED_PID", str(pid))
    _apply(sim, "mig_enabled", "1")
    _apply(sim, "persistence_off", "2")
    assert _apply(sim, "power_limit", "4") == "GPU4 power limit 500 W"
    assert _xml_gpu(sim, 1).findtext("mig_mode/current_mig") == "Enabled"
    assert _xml_gpu(sim, 2).findtext("persistence_mode") == "Disabled"
    assert _xml_gpu(sim, 3).findtext("persistence_mode") == "Enabled"
    power = _xml_gpu(sim, 4).find("gpu_power_readings")
    assert power.findtext("current_power_limit") == "500.00 W" and power.findtext("default_power_limit") == "700.00 W"
    _, table, _ = sim.run(nvidia_smi, [])
    assert table.count(" On  |") == 7 and "/  500W |" in table and table.count("Enabled |") == 1
    with pytest.raises(ProvisionError, match="watts between 200 and 700"):
        settingfaults.power_limit(sim.model, "4", "900")


def test_mtu_low_in_ibv_devinfo(sim):
    _apply(sim, "mtu_low", "mlx5_1")
    _, out, _ = sim.run(ibv_devinfo, ["-d", "mlx5_1"])
    assert "\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t2048 (4)\n" in out
    with pytest.raises(ProvisionError, match="an IB MTU"):
        settingfaults.mtu_low(sim.model, "mlx5_1", "3000")


def test_kernel_views_follow_the_model_in_place(sim, tmp_path):
    kernelviews.write(tmp_path, sim.model)
    cmdline, modules = tmp_path / kernelviews.CMDLINE, tmp_path / kernelviews.MODULES
    governor = tmp_path / kernelviews.CPUFREQ / "policy56" / "scaling_governor"
    groups = tmp_path / kernelviews.IOMMU_GROUPS
    inodes = [p.stat().st_ino for p in (cmdline, modules, governor, groups)]
    assert "iommu=pt" in cmdline.read_text() and governor.read_text() == "performance\n"
    assert "nvidia 104153088 3 nvidia_uvm,nvidia_modeset,nvidia_peermem, Live 0x0000000000000000 (OE)\n" \
        in modules.read_text()
    assert (groups / "0" / "type").read_text() == "identity\n" and len(list(groups.iterdir())) == 40
    assert [p.name for p in (groups / "0" / "devices").iterdir()] == ["0000:15:01.0"]
    for kind in ("peermem_missing", "governor_powersave", "iommu_translated"):
        faults.KINDS[kind].apply(sim.model, "node", None)
    kernelviews.write(tmp_path, sim.model)
    assert [p.stat().st_ino for p in (cmdline, modules, governor, groups)] == inodes
    assert "iommu=pt" not in cmdline.read_text() and "intel_iommu=on" in cmdline.read_text()
    assert "nvidia_peermem" not in modules.read_text().replace("nvidia_modeset,", "")
    assert "nvidia 104153088 2 nvidia_uvm,nvidia_modeset, Live" in modules.read_text()
    assert governor.read_text() == "powersave\n" and (groups / "7" / "type").read_text() == "DMA-FQ\n"
    sim.model["iommu"] = "off"
    kernelviews.write(tmp_path, sim.model)
    assert list(groups.iterdir()) == [] and groups.stat().st_ino == inodes[3]
    with pytest.raises(ProvisionError, match="one of performance"):
        settingfaults.governor_powersave(sim.model, "node", "turbo")


def test_every_new_kind_is_registered_with_a_description_and_a_default_device(sim):
    import random

    for kind in NEW_KINDS:
        registered = faults.KINDS[kind]
        assert registered.description
        device = faults.default_device(registered, sim.model, random.Random(1))
        registered.apply(sim.model, device, None)


@pytest.mark.parametrize("dmabuf", [False, True])
def test_gpudirect_without_peermem_fails_on_both_sides_unless_dmabuf(sim, dmabuf):
    _apply(sim, "peermem_missing")
    extra = ["--use_cuda_dmabuf"] if dmabuf else []
    server, client = _pair(sim, ["-d", "mlx5_1", "--use_cuda=1", *extra, "-s", "8388608", "--report_gbits"],
                           ["-d", "mlx5_0", "--use_cuda=0", *extra, "-s", "8388608", "--report_gbits"])
    for side, gpu in ((server, 1), (client, 0)):
        assert "initializing CUDA\nListing all CUDA devices in system:\nCUDA device 0: PCIe address is 19:00\n" \
            in side.stdout
        assert f"\nPicking device No. {gpu}\n" in side.stdout
        assert "device name = [NVIDIA H100 80GB HBM3]\ncreating CUDA Ctx\n" in side.stdout
        assert "allocated GPU buffer of a 16777216 address at 0x" in side.stdout
    if dmabuf:
        assert server.returncode == client.returncode == 0, server.stderr + client.stderr
        assert "using DMA-BUF for GPU buffer address at 0x" in client.stdout
        assert "BW average[Gb/sec]" in client.stdout and client.stdout.endswith("destroying current CUDA Ctx\n")
    else:
        assert server.returncode == 1 and client.returncode == 1
        assert "Couldn't allocate MR with error=14\nfailed to create mr\nFailed to create MR\n" \
               " Couldn't create IB resources\n" in server.stderr + client.stderr
        assert "BW average" not in server.stdout + client.stdout


def test_gpudirect_with_peermem_reports_bandwidth(sim):
    server, client = _pair(sim, ["-d", "mlx5_1", "--use_cuda=1", "--report_gbits"],
                           ["-d", "mlx5_0", "--use_cuda=0", "--report_gbits"])
    assert server.returncode == client.returncode == 0, server.stderr + client.stderr
    assert "Picking device No. 0" in client.stdout and "BW average[Gb/sec]" in client.stdout
    assert "using DMA-BUF" not in client.stdout


def test_dmidecode_bios_and_system(sim):
    status, out, _ = sim.run(dmidecode, ["-t", "bios", "-t", "system"])
    assert status == 0 and out.startswith("# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.5.0 present.\n\n")
    assert "Handle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n\tVendor: American Megatrends International, " \
           "LLC.\n" in out
    assert "\nSystem Information\n\tManufacturer: NVIDIA\n\tProduct Name: DGXH100\n" in out
    assert f"\tSerial Number: {sim.model['system']['serial_number']}\n" in out
    _, out, _ = sim.run(dmidecode, ["-s", "bios-version"])
    assert out == f"{sim.model['bios']['version']}\n"
    assert sim.run(dmidecode, ["-t", "bogus"])[0] == 2


def test_ipmitool_mc_info_only(sim):
    status, out, _ = sim.run(ipmitool, ["mc", "info"])
    assert status == 0 and out.startswith("Device ID                 : 32\nDevice Revision           : 1\n")
    assert f"Firmware Revision         : {sim.model['bmc']['firmware_revision']}\n" in out
    assert "Aux Firmware Rev Info     : \n    0x17\n" in out
    assert sim.run(ipmitool, ["-I", "open", "mc", "info"])[0] == 0
    status, _, err = sim.run(ipmitool, ["sdr"])
    assert status == 1 and "Commands:\n" in err


def test_numactl_checks_nodes_and_execs(sim):
    run = [sys.executable, str(TOOLS / "numactl.py")]
    done = subprocess.run(run + ["--cpunodebind=1", "--membind=1", "echo", "bound"], env=sim.env(),
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 0 and done.stdout == "bound\n"
    done = subprocess.run(run + ["--cpunodebind=2", "--membind=2", "echo", "bound"], env=sim.env(),
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 1 and done.stdout == "<2> is invalid\n"
    assert done.stderr.startswith("libnuma: Warning: node argument 2 is out of range\n\nusage: numactl")
    assert numactl.nodes_of("0-1", 2) == [0, 1]
    _, out, _ = sim.run(numactl, ["-H"])
    assert out.startswith("available: 2 nodes (0-1)\nnode 0 cpus: 0 1 2")


def test_persistence_off_fails_dcgmi_and_mtu_shows_in_perftest(sim, tmp_path, monkeypatch):
    import dcgmi
    import ib_write_bw

    pid = tmp_path / "persistenced.pid"
    pid.write_text(str(os.getpid()))
    monkeypatch.setenv("PROVISION_SIM_PERSISTENCED_PID", str(pid))
    _, out, _ = sim.run(dcgmi, ["diag", "-r", "1"])
    assert "| Persistence Mode          | Pass" in out
    _apply(sim, "persistence_off", "6")
    _, out, _ = sim.run(dcgmi, ["diag", "-r", "1"])
    assert "| Persistence Mode          | Fail" in out
    _apply(sim, "mtu_low", "mlx5_5", "1024")
    args = ib_write_bw.perftest_cli.parse("ib_write_bw", ["-d", "mlx5_5"])
    side = ib_write_bw.local_side(sim.model, args)[0]
    assert " Mtu             : 1024[B]\n" in ib_write_bw.header(args, side, False)
