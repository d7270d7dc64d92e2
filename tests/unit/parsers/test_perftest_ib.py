"""perftest tables (MiB/sec, -a sweeps, old latency columns) and ibstat/ibstatus/ibv_devinfo."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import ibstat, perftest

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"

READ_BW_MIB = """\
---------------------------------------------------------------------------------------
                    RDMA_Read BW Test
 Dual-port       : OFF          Device         : mlx5_1
 Number of qps   : 1            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 PCIe relax order: ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
 Outstand reads  : 16
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x0107 PSN 0x8d2c0a OUT 0x10 RKey 0x1fffbd VAddr 0x007f6f3ed8f000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:11
 remote address: LID 0000 QPN 0x0108 PSN 0x7fd1b4 OUT 0x10 RKey 0x1fffbe VAddr 0x007fa1dcd3f000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:12
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
 2          1000             9.61               9.40               4.927363
 65536      1000             11170.48            11168.90            0.178702
---------------------------------------------------------------------------------------
"""

WRITE_LAT_OLD = """\
                    RDMA_Write Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]
 2       1000          0.98           4.12         1.01
---------------------------------------------------------------------------------------
"""


def test_mib_per_sec_sweep_reports_the_last_row() -> None:
    result = perftest.parse(READ_BW_MIB)
    assert (result["test"], result["device"], result["link_type"]) == ("RDMA_Read BW", "mlx5_1", "Ethernet")
    assert (result["msg_size"], result["iterations"], len(result["rows"])) == (65536, 1000, 2)
    assert (result["bw_peak"], result["bw_avg"], result["units"]) == (11170.48, 11168.90, "MiB/sec")
    assert result["bw_avg_Gbps"] == pytest.approx(11168.90 * 8 * 2**20 / 1e9)
    assert result["complete"] is True


def test_mb_per_sec_conversion() -> None:
    result = perftest.parse((SAMPLES / "ib_write_bw_loopback_8M_mbsec.txt").read_text())
    assert result["bw_avg_Gbps"] == pytest.approx(24056.72 * 8 / 1000)


def test_old_latency_columns() -> None:
    result = perftest.parse(WRITE_LAT_OLD)
    assert (result["test"], result["t_min_usec"], result["t_max_usec"], result["t_typical_usec"]) == \
        ("RDMA_Write Latency", 0.98, 4.12, 1.01)
    assert result["t_avg_usec"] is None and result["p99_usec"] is None and result["p99_9_usec"] is None
    assert "bw_avg" not in result


def test_truncated_without_closing_dashes() -> None:
    text = READ_BW_MIB[:READ_BW_MIB.rindex("\n-") + 1]
    result = perftest.parse(text)
    assert result["complete"] is False and result["msg_size"] == 65536
    only_header = perftest.parse(READ_BW_MIB[:READ_BW_MIB.index(" 2          1000")])
    assert only_header["complete"] is False and only_header["bw_avg"] is None


def test_perftest_refuses_other_text() -> None:
    with pytest.raises(ParseError, match="#bytes"):
        perftest.parse((SAMPLES / "ibstat_h100_mixed_down_ports.txt").read_text())


IBV_DEVINFO_V = """\
hca_id:\tmlx5_0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t28.39.1002
\tnode_guid:\t\t\t946d:ae03:00cd:e72c
\tvendor_part_id:\t\t\t4129
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t1
\t\t\tport_lid:\t\t75
\t\t\tlink_layer:\t\tInfiniBand
\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t100.0 Gbps (128)
\t\t\tphys_state:\t\tLINK_UP (5)

hca_id:\tmlx5_1
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t22.38.1002
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tlink_layer:\t\tEthernet
\t\t\tactive_width:\t\t1X (1)
\t\t\tactive_speed:\t\t2.5 Gbps (1)
\t\t\tphys_state:\t\tDISABLED (3)
"""


def test_ibv_devinfo_verbose() -> None:
    result = ibstat.parse(IBV_DEVINFO_V)
    assert result["tool"] == "ibv_devinfo" and result["complete"] is True
    first, second = result["ports"]
    assert (first["ca"], first["port"], first["state"], first["physical_state"]) == ("mlx5_0", 1, "Active", "LinkUp")
    assert (first["rate_Gbps"], first["link_layer"], first["fw_ver"]) == (400.0, "InfiniBand", "28.39.1002")
    assert (second["state"], second["physical_state"], second["rate_Gbps"]) == ("Down", "Disabled", 2.5)


def test_ibv_devinfo_plain_has_no_rate() -> None:
    plain = "\n".join(r for r in IBV_DEVINFO_V.splitlines() if "active_" not in r and "phys_state" not in r)
    port = ibstat.parse(plain)["ports"][0]
    assert port["rate_Gbps"] is None and port["physical_state"] is None and port["state"] == "Active"


def test_ib_truncated_and_refused() -> None:
    text = (SAMPLES / "ibstatus_a100_hdr_plus_eth.txt").read_text()
    cut = ibstat.parse(text[:text.index("Infiniband device 'mlx5_8'") + 60])
    assert cut["complete"] is False and cut["ports"][-1]["ca"] == "mlx5_8"
    assert cut["ports"][-1]["state"] is None
    with pytest.raises(ParseError, match="hca_id"):
        ibstat.parse("mlx5_0 port 1 ==> ib0 (Up)\n")
