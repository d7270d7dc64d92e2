"""Host tools: kernel log Xids, lspci link state, bonding status, fio."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import bonding, dmesg_xid, fio, lspci, parse_tool

KERNEL_LOG = """\
2024-04-05T21:29:39,123456+00:00 NVRM: Xid (PCI:0000:3b:00): 13, pid=2233, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address
Apr 05 21:30:01 node01 kernel: NVRM: Xid (PCI:0000:B3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 1234.567890] NVRM: Xid (0000:02:00): 31, Ch 00000010, engmask 00000101, intr 10000000
[ 1240.000001] usb 1-1: new high-speed USB device number 2 using xhci_hcd
"""  # noqa: E501 -- verbatim kernel log lines, kept as the kernel prints them


def test_xid_every_timestamp_style_and_old_format() -> None:
    result = dmesg_xid.parse(KERNEL_LOG)
    assert [(x["xid"], x["pci"]) for x in result["xids"]] == [(13, "0000:3b:00"), (79, "0000:B3:00"),
                                                             (31, "0000:02:00")]
    assert result["xids"][0]["message"].startswith("Graphics SM Warp Exception")
    assert result["xids"][1]["timestamp"] == "Apr 05 21:30:01 node01"
    assert result["xids"][2]["message"] == "Ch 00000010, engmask 00000101, intr 10000000"
    assert result["fallen_off_bus"] == ["0000:b3:00"] and result["unique_xids"] == [13, 31, 79]


def test_clean_kernel_log_and_refusal() -> None:
    result = dmesg_xid.parse("[    0.000000] Linux version 6.5.0-35-generic\n[    1.2] nvidia: loading\n")
    assert result["xids"] == [] and result["fallen_off_bus"] == [] and result["complete"] is True
    with pytest.raises(ParseError, match="no kernel log line"):
        dmesg_xid.parse("Xid 79 happened yesterday, see ticket\n")


LSPCI_VV = """\
0000:17:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
\tSubsystem: Mellanox Technologies Device 0026
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+

0000:19:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
\tCapabilities: [68] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 16GT/s, Width x16
"""


def test_lspci_several_devices_with_domain() -> None:
    result = lspci.parse(LSPCI_VV)
    nic, gpu = result["devices"]
    assert (nic["bdf"], nic["lnksta_width"], nic["downgraded"], nic["downgraded_reason"]) == \
        ("0000:17:00.0", 8, True, "width")
    assert (gpu["bdf"], gpu["lnkcap_speed_GTps"], gpu["lnksta_speed_GTps"], gpu["downgraded_reason"]) == \
        ("0000:19:00.0", 32.0, 16.0, "speed")
    assert result["complete"] is True


def test_lspci_truncated_and_refused() -> None:
    cut = lspci.parse(LSPCI_VV[:LSPCI_VV.rindex("\t\tLnkSta:")])
    assert cut["complete"] is False and [d["bdf"] for d in cut["devices"]] == ["0000:17:00.0"]
    with pytest.raises(ParseError, match="LnkCap"):
        lspci.parse("00:00.0 Host bridge: Intel Corporation Device 09a2 (rev 04)\n")


ACTIVE_BACKUP = """\
Ethernet Channel Bonding Driver: v5.15.0-91-generic

Bonding Mode: fault-tolerance (active-backup)
Primary Slave: None
Currently Active Slave: eno1
MII Status: up
MII Polling Interval (ms): 100
Up Delay (ms): 0
Down Delay (ms): 0
Peer Notification Delay (ms): 0

Slave Interface: eno1
MII Status: up
Speed: 25000 Mbps
Duplex: full
Link Failure Count: 0
Permanent HW addr: 0c:42:a1:00:00:01
Slave queue ID: 0

Slave Interface: eno2
MII Status: down
Speed: Unknown
Duplex: Unknown
Link Failure Count: 3
Permanent HW addr: 0c:42:a1:00:00:02
Slave queue ID: 0
"""


def test_bonding_active_backup() -> None:
    result = bonding.parse(ACTIVE_BACKUP)
    assert (result["mode"], result["mii_status"], result["active_slave"]) == \
        ("fault-tolerance (active-backup)", "up", "eno1")
    assert result["active_aggregator_id"] is None and result["driver_version"] == "v5.15.0-91-generic"
    assert [(s["name"], s["mii_status"], s["speed_Mbps"], s["link_failure_count"]) for s in result["slaves"]] == \
        [("eno1", "up", 25000, 0), ("eno2", "down", None, 3)]
    assert result["slaves"][1]["partner_mac"] is None and result["complete"] is True


def test_bonding_truncated_and_refused() -> None:
    assert bonding.parse(ACTIVE_BACKUP[:ACTIVE_BACKUP.rindex("Duplex")])["complete"] is False
    with pytest.raises(ParseError, match="Bonding Mode"):
        bonding.parse("cat: /proc/net/bonding/bond0: No such file or directory\n")


FIO_JSON = {
    "fio version": "fio-3.28",
    "global options": {"ioengine": "libaio", "direct": "1"},
    "jobs": [{
        "jobname": "randrw", "groupid": 0, "error": 0,
        "job options": {"rw": "randrw", "bs": "4k", "iodepth": "32"},
        "read": {"io_bytes": 1073741824, "bw": 204800, "iops": 51200.5,
                 "clat_ns": {"percentile": {"99.000000": 1204224}}},
        "write": {"io_bytes": 1073741824, "bw": 102400, "iops": 25600.25,
                  "clat_ns": {"percentile": {"99.000000": 2506752}}},
    }],
}


def test_fio_json_with_leading_note() -> None:
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(FIO_JSON, indent=2)
    result = fio.parse(text)
    (job,) = result["jobs"]
    assert (job["name"], job["rw"], job["bs"], job["ioengine"]) == ("randrw", "randrw", "4k", "libaio")
    assert (job["read_bw_MiBps"], job["write_bw_MiBps"], job["read_iops"]) == (200.0, 100.0, 51200.5)
    assert job["lat_p99_ms"] == pytest.approx(2.506752) and result["errors"] == 0
    cut = fio.parse(text[:len(text) // 2])
    assert cut["complete"] is False and cut["jobs"] == [] and cut["fio_version"] == "fio-3.28"


FIO2_TEXT = """\
seqwrite: (g=0): rw=write, bs=1M-1M/1M-1M/1M-1M, ioengine=libaio, iodepth=32
fio-2.2.10
Starting 1 process

seqwrite: (groupid=0, jobs=1): err= 0: pid=1234: Mon Jan  1 10:00:00 2018
  write: io=10240MB, bw=1048576KB/s, iops=1024, runt= 10000msec
    clat (usec): min=500, max=90000, avg=31000.50, stdev=2000.10
    clat percentiles (usec):
     |  1.00th=[ 1000],  5.00th=[ 2000], 10.00th=[ 3000], 20.00th=[ 4000],
     | 99.00th=[45056], 99.50th=[50000], 99.90th=[60000], 99.95th=[70000],
     | 99.99th=[80000]

Run status group 0 (all jobs):
  WRITE: io=10240MB, aggrb=1048576KB/s, minb=1048576KB/s, maxb=1048576KB/s, mint=10000msec, maxt=10000msec
"""


def test_fio2_text_units() -> None:
    result = fio.parse(FIO2_TEXT)
    (job,) = result["jobs"]
    assert (job["bs"], job["write_bw_MiBps"], job["write_iops"]) == ("1M", 1024, 1024)
    assert (job["write_io"], job["write_runtime_ms"], job["lat_p99_ms"]) == ("10240MB", 10000, 45.056)
    assert job["read_bw_MiBps"] is None and result["complete"] is True


def test_fio_text_truncated_and_refused() -> None:
    cut = fio.parse(FIO2_TEXT[:FIO2_TEXT.index("    clat percentiles")])
    assert cut["complete"] is False and cut["jobs"][0]["write_bw_MiBps"] == 1024
    assert cut["jobs"][0]["lat_p99_ms"] is None
    with pytest.raises(ParseError, match="fio JSON"):
        fio.parse("fio: unrecognized option '--bogus'\n")


def test_stack_tools_driver_lines_nvcc_banner_and_package_lines():
    """The stack check's three tools (provision/parsers/smi_driver.py, nvcc.py, package_query.py)."""
    driver = parse_tool("nvidia-smi-driver", "550.54.15\n550.54.15\n")
    assert (driver["driver_version"], driver["gpu_count"], driver["complete"]) == ("550.54.15", 2, True)
    with pytest.raises(ParseError, match="several driver versions: 535.183.01, 550.127.05"):
        parse_tool("nvidia-smi-driver", "535.183.01\n550.127.05\n")
    banner = "nvcc: NVIDIA (R) Cuda compiler driver\n"
    nvcc = parse_tool("nvcc", banner + "Cuda compilation tools, release 12.4, V12.4.131\n")
    assert (nvcc["release"], nvcc["version"], nvcc["complete"]) == ("12.4", "12.4.131", True)
    assert parse_tool("nvcc", banner)["complete"] is False
    packages = parse_tool("package-query", "libnccl2 2.21.5-1+cuda12.4 ii \nlibcudnn9-cuda-12 9.1.0.70-1 hi \n")
    assert packages["packages"]["libnccl2"] == {"version": "2.21.5-1+cuda12.4", "status": "ii"}
    assert parse_tool("package-query", "libnccl 2.21.5-1+cuda12.4")["complete"] is False  # rpm's line, cut


def test_lspci_and_nvbandwidth_name_device_classes_and_bus_ids():
    lspci = parse_tool("lspci", LSPCI_VV)
    assert all(d["class"] for d in lspci["devices"]) and "3D controller" in {d["class"] for d in lspci["devices"]}
    bare = parse_tool("lspci", "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\t\tLnkSta:\tSpeed 16GT/s, Width x16\n")
    assert bare["devices"][0]["class"] is None
    data = Path(__file__).resolve().parents[2] / "data"
    nvbandwidth = parse_tool("nvbandwidth", (data / "nvbandwidth" / "sim_h100_healthy.txt").read_text())
    assert len(nvbandwidth["bus_ids"]) == 8 and nvbandwidth["bus_ids"][0].endswith(":00")
    assert parse_tool("nvbandwidth", (data / "samples" / "nvbandwidth_readme_d2d_write_8gpu.txt").read_text())[
        "bus_ids"] == {}
