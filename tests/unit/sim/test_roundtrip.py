"""Round trip: simulated tool output -> provision.parsers -> the values in the hardware model."""
from __future__ import annotations

import pytest

import all_reduce_perf
import bonding
import dcgmi
import dmesg
import fio
import gpu_burn
import ibstat
import ibstatus
import ibv_devinfo
import lspci
import nvbandwidth
import nvidia_smi
from provision.parsers import parse_tool


@pytest.fixture
def degraded(sim):
    """One of each fault the parsers must read back."""
    m = sim.model
    m["gpus"][1]["pcie"].update(width_current=8, gen_current=4)
    m["gpus"][2]["remapped_rows"].update(uncorrectable=5, pending=True)
    m["gpus"][2]["ecc"]["volatile"]["dram_uncorrectable"] = 3
    m["gpus"][3]["nvlink"]["links"][4]["active"] = False
    m["hcas"][2]["rate_Gbps"] = 200
    m["hcas"][6].update(state="Down", physical_state="Disabled")
    m["storage"]["bond"]["slaves"][1].update(mii_status="down")
    m["faults"]["gpu_burn_faulty"] = [5]
    m["kernel_log"].append("NVRM: Xid (PCI:0000:4c:00): 48, pid='<unknown>', name=<unknown>, "
                           "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.")
    sim.write()
    return sim


def _parse(sim, tool: str, module, argv: list[str]) -> dict:
    status, out, err = sim.run(module, argv)
    assert status == 0, err
    result = parse_tool(tool, out)
    assert result["tool"] == tool and result["complete"] is True
    return result


def test_smi_table(degraded):
    r = _parse(degraded, "nvidia-smi", nvidia_smi, [])
    assert r["driver_version"] == "550.127.05" and r["cuda_version"] == "12.4"
    for parsed, gpu in zip(r["gpus"], degraded.model["gpus"], strict=True):
        assert parsed["bus_id"] == gpu["bus_id"] and parsed["name"] == gpu["model"]
        assert parsed["temp_C"] == gpu["temp_C"] and parsed["power_cap_W"] == gpu["power_cap_W"]
        assert parsed["memory_total_MiB"] == gpu["memory_total_MiB"] and parsed["persistence_mode"] == "Off"
    assert [g["ecc_uncorrected_volatile"] for g in r["gpus"]] == [0, 0, 3, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("tool,argv", [("nvidia-smi-q", ["-q"]), ("nvidia-smi-qx", ["-q", "-x"])])
def test_smi_query(degraded, tool, argv):
    r = _parse(degraded, tool, nvidia_smi, argv)
    assert r["attached_gpus"] == 8 and r["driver_version"] == "550.127.05"
    for parsed, gpu in zip(r["gpus"], degraded.model["gpus"], strict=True):
        assert parsed["bus_id"] == gpu["bus_id"] and parsed["temp_C"] == gpu["temp_C"]
        assert parsed["power_W"] == pytest.approx(gpu["power_W"])
        pcie = gpu["pcie"]
        assert (parsed["pcie_gen_current"], parsed["pcie_gen_max"]) == (pcie["gen_current"], pcie["gen_max"])
        assert (parsed["width_current"], parsed["width_max"]) == (pcie["width_current"], pcie["width_max"])
        assert parsed["remapped_rows"] == gpu["remapped_rows"]
        assert parsed["ecc_uncorrected_volatile"] == gpu["ecc"]["volatile"]["dram_uncorrectable"]
        assert parsed["sram_uncorrected_volatile"] == gpu["ecc"]["volatile"]["sram_uncorrectable"]


def test_smi_csv(degraded):
    fields = "index,pci.bus_id,power.draw,temperature.gpu,pcie.link.width.current,ecc.errors.uncorrected.volatile.total"
    r = _parse(degraded, "nvidia-smi-csv", nvidia_smi, [f"--query-gpu={fields}", "--format=csv"])
    assert r["columns"] == fields.split(",")
    for row, gpu in zip(r["rows"], degraded.model["gpus"], strict=True):
        assert row["pci.bus_id"] == gpu["bus_id"] and row["power.draw"] == pytest.approx(gpu["power_W"])
        assert row["pcie.link.width.current"] == gpu["pcie"]["width_current"]


def test_smi_topo_and_nvlink(degraded):
    r = _parse(degraded, "nvidia-smi-topo", nvidia_smi, ["topo", "-m"])
    assert r["matrix"]["GPU0"]["GPU1"] == "NV18" and r["matrix"]["GPU3"]["GPU0"] == "NV17"
    assert r["matrix"]["GPU0"]["NIC0"] == "PIX" and r["cpu_affinity"]["GPU7"] == "56-111,168-223"
    assert r["nic_legend"] == {f"NIC{i}": f"mlx5_{i}" for i in range(8)}
    r = _parse(degraded, "nvidia-smi-nvlink", nvidia_smi, ["nvlink", "-s"])
    for parsed, gpu in zip(r["gpus"], degraded.model["gpus"], strict=True):
        assert [link["active"] for link in parsed["links"]] == [link["active"] for link in gpu["nvlink"]["links"]]
    # 26.562: the profile's NVLink4 speed as nvidia-smi reports it
    assert r["gpus"][3]["links"][4]["speed_GBps"] is None and r["gpus"][3]["links"][3]["speed_GBps"] == 26.562


@pytest.mark.parametrize("tool,module,argv", [("ibstat", ibstat, []), ("ibstatus", ibstatus, []),
                                              ("ibv_devinfo", ibv_devinfo, ["-v"])])
def test_ib_ports(degraded, tool, module, argv):
    r = _parse(degraded, tool, module, argv)
    ports = {p["ca"]: p for p in r["ports"]}
    assert set(ports) == {h["name"] for h in degraded.model["hcas"]}
    for hca in degraded.model["hcas"]:
        p = ports[hca["name"]]
        assert (p["state"], p["physical_state"]) == (hca["state"], hca["physical_state"])
        assert p["rate_Gbps"] == hca["rate_Gbps"] and p["link_layer"] == hca["link_layer"]


def test_nccl(degraded):
    r = _parse(degraded, "nccl-tests", all_reduce_perf, ["-b", "1M", "-e", "8G", "-f", "2", "-g", "8"])
    assert r["nranks"] == 8 and r["max_size_bytes"] == 8 * 2**30 and r["wrong"] == 0
    assert r["out_of_bounds_failed"] is False
    expected = 482.0 * 17 / 18
    assert r["busbw_at_max_size_GBps"]["out_of_place"] == pytest.approx(expected, rel=0.03)


def test_dcgmi_gpu_burn_dmesg(degraded):
    r = _parse(degraded, "dcgmi-diag", dcgmi, ["diag", "-r", "3"])
    assert r["results"]["PCIe"]["failed_gpus"] == [1] and r["results"]["GPU Memory"]["failed_gpus"] == [2]
    assert r["results"]["Diagnostic"]["failed_gpus"] == [5]
    assert r["results"]["Page Retirement/Row Remap"]["status"] == "Fail"
    r = _parse(degraded, "gpu-burn", gpu_burn, ["1"])
    assert [g["verdict"] for g in r["gpus"]] == ["OK"] * 5 + ["FAULTY"] + ["OK"] * 2
    r = _parse(degraded, "dmesg-xid", dmesg, [])
    assert [(x["xid"], x["pci"]) for x in r["xids"]] == [(48, "0000:4c:00")]


def test_lspci_bonding_nvbandwidth_fio(degraded):
    r = _parse(degraded, "lspci", lspci, ["-vv", "-s", "3b:00.0"])
    assert r["devices"] == [dict(r["devices"][0], lnkcap_speed_GTps=32.0, lnkcap_width=16, lnksta_speed_GTps=16.0,
                                 lnksta_width=8, downgraded=True)]
    r = _parse(degraded, "bonding", bonding, [])
    slaves = degraded.model["storage"]["bond"]["slaves"]
    assert [(s["name"], s["mii_status"]) for s in r["slaves"]] == [(s["name"], s["mii_status"]) for s in slaves]
    assert r["slaves"][0]["speed_Mbps"] == 25000 and r["active_aggregator_id"] == 1
    r = _parse(degraded, "nvbandwidth", nvbandwidth, ["-t", "device_to_device_memcpy_read_ce"])
    matrix = r["tests"][0]["matrix"]
    assert matrix[0][0] is None and matrix[0][1] == pytest.approx(370.0, rel=0.03)
    assert matrix[3][0] == pytest.approx(370.0 * 17 / 18, rel=0.03)
    for argv in ([], ["--output-format=json"]):
        r = _parse(degraded, "fio", fio, ["--name=w", "--rw=write", "--bs=1M", "--iodepth=64"] + argv)
        assert r["jobs"][0]["write_bw_MiBps"] == pytest.approx(6068.0, rel=0.03)
