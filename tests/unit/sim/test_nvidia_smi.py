"""Simulated nvidia-smi: every output mode reflects the hardware model."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import nvidia_smi
import simhw


def test_table_lists_every_gpu(sim):
    status, out, _ = sim.run(nvidia_smi, [])
    assert status == 0
    assert "Driver Version: 550.127.05" in out and "CUDA Version: 12.4" in out
    for gpu in sim.model["gpus"]:
        assert gpu["bus_id"] in out
    assert out.count("NVIDIA H100 80GB HBM3") == 8
    assert all(len(line) == 91 for line in out.splitlines()[1:] if line)
    assert "/  700W" in out and "/  81559MiB" in out


def test_missing_driver_exits_9(sim):
    sim.driver.unlink()
    status, out, _ = sim.run(nvidia_smi, ["-q"])
    assert status == 9
    assert out.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_fallen_gpu_disappears(sim):
    sim.model["gpus"][2]["fallen_off_bus"] = True
    sim.write()
    lost = sim.model["gpus"][2]["bus_id"]
    for argv in ([], ["-q"], ["-q", "-x"], ["--query-gpu=pci.bus_id", "--format=csv"], ["-L"]):
        _, out, _ = sim.run(nvidia_smi, argv)
        assert lost not in out
    _, out, _ = sim.run(nvidia_smi, ["-q"])
    assert "Attached GPUs                             : 7" in out


def test_query_text_shows_downtrained_link_and_remap(sim):
    gpu = sim.model["gpus"][1]
    gpu["pcie"].update(width_current=8, gen_current=4)
    gpu["remapped_rows"].update(uncorrectable=3, pending=True)
    gpu["ecc"]["volatile"]["dram_uncorrectable"] = 2
    sim.write()
    _, out, _ = sim.run(nvidia_smi, ["-q", "-i", "1"])
    assert f"GPU {gpu['bus_id']}" in out
    assert "                Current                   : 8x" in out
    assert "                Current                   : 4" in out
    assert "        Uncorrectable Error               : 3" in out
    assert "        Pending                           : Yes" in out
    assert "            DRAM Uncorrectable            : 2" in out


def test_query_xml(sim):
    sim.model["gpus"][0]["pcie"]["width_current"] = 8
    sim.model["gpus"][0]["remapped_rows"]["failure"] = True
    sim.write()
    _, out, _ = sim.run(nvidia_smi, ["-q", "-x"])
    root = ET.fromstring(out.split("\n", 2)[2])
    assert root.findtext("driver_version") == "550.127.05"
    assert root.findtext("attached_gpus") == "8"
    gpus = root.findall("gpu")
    assert [g.get("id") for g in gpus] == [g["bus_id"] for g in sim.model["gpus"]]
    first = gpus[0]
    assert first.findtext("pci/pci_gpu_link_info/link_widths/current_link_width") == "8x"
    assert first.findtext("pci/pci_gpu_link_info/link_widths/max_link_width") == "16x"
    assert first.findtext("remapped_rows/remapped_row_failure") == "Yes"
    assert first.findtext("ecc_errors/volatile/dram_uncorrectable") == "0"
    assert first.findtext("temperature/gpu_temp") == f"{sim.model['gpus'][0]['temp_C']} C"
    assert first.findtext("gpu_power_readings/current_power_limit") == "700.00 W"
    assert first.findtext("persistence_mode") == "Disabled"


def test_persistence_follows_daemon_pid(sim, tmp_path, monkeypatch):
    pid = tmp_path / "persistenced.pid"
    pid.write_text(str(os.getpid()))
    monkeypatch.setenv("PROVISION_SIM_PERSISTENCED_PID", str(pid))
    assert simhw.persistence_enabled()
    _, out, _ = sim.run(nvidia_smi, ["--query-gpu=persistence_mode", "--format=csv,noheader"])
    assert out.splitlines() == ["Enabled"] * 8
    _, out, _ = sim.run(nvidia_smi, [])
    assert out.count(" On  |") == 8


def test_query_gpu_csv(sim):
    sim.model["gpus"][3]["pcie"]["width_current"] = 4
    sim.write()
    fields = ("index,name,pci.bus_id,driver_version,temperature.gpu,power.draw,memory.total,persistence_mode,"
              "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
              "ecc.errors.uncorrected.volatile.total,serial,uuid")
    status, out, _ = sim.run(nvidia_smi, [f"--query-gpu={fields}", "--format=csv"])
    lines = out.splitlines()
    assert status == 0 and len(lines) == 9
    assert lines[0].startswith("index, name, pci.bus_id, driver_version, temperature.gpu, power.draw [W], "
                               "memory.total [MiB]")
    row = lines[4].split(", ")
    gpu = sim.model["gpus"][3]
    assert row[:4] == ["3", gpu["model"], gpu["bus_id"], "550.127.05"]
    assert row[5] == f"{gpu['power_W']:.2f} W" and row[6] == "81559 MiB"
    assert row[10:12] == ["4", "16"] and row[13:] == [gpu["serial"], gpu["uuid"]]
    _, out, _ = sim.run(nvidia_smi, ["--query-gpu=power.draw,memory.total", "--format=csv,noheader,nounits"])
    assert out.splitlines()[0] == f"{sim.model['gpus'][0]['power_W']:.2f}, 81559"
    status, out, _ = sim.run(nvidia_smi, ["--query-gpu=bogus", "--format=csv"])
    assert status == 2 and 'Field "bogus" is not a valid field to query.' in out


def test_topo_matrix(sim):
    for link in sim.model["gpus"][5]["nvlink"]["links"][:4]:
        link["active"] = False
    sim.write()
    _, out, _ = sim.run(nvidia_smi, ["topo", "-m"])
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines() if line.startswith(("GPU", "NIC"))}
    head = out.splitlines()[0].split("\t")
    col = {name: i for i, name in enumerate(head)}
    assert rows["GPU0"][col["GPU1"]] == "NV18"
    assert rows["GPU0"][col["GPU5"]] == "NV14" and rows["GPU5"][col["GPU7"]] == "NV14"
    assert rows["GPU0"][col["NIC0"]] == "PIX" and rows["GPU0"][col["NIC2"]] == "NODE"
    assert rows["GPU0"][col["NIC7"]] == "SYS"
    assert rows["GPU0"][col["CPU Affinity"]] == "0-55,112-167"
    assert rows["GPU4"][col["CPU Affinity"]] == "56-111,168-223"
    assert "  NIC3: mlx5_3" in out


def test_nvlink_status_marks_inactive_links(sim):
    sim.model["gpus"][3]["nvlink"]["links"][7]["active"] = False
    sim.write()
    _, out, _ = sim.run(nvidia_smi, ["nvlink", "-s"])
    blocks = out.split("GPU ")[1:]
    assert len(blocks) == 8
    assert "\t Link 7: <inactive>" in blocks[3] and "\t Link 6: 26.562 GB/s" in blocks[3]
    assert "<inactive>" not in blocks[2]
    assert blocks[3].count("GB/s") == 17


def test_compute_apps_are_the_simulated_cuda_programs_running(sim, tmp_path):
    import subprocess
    import sys

    argv = ["--query-compute-apps=gpu_bus_id,pid,process_name", "--format=csv,noheader"]
    status, out, _ = sim.run(nvidia_smi, argv)
    assert status == 0 and out == ""  # none running: no line, as the real tool
    burn = tmp_path / "gpu_burn"  # a program of that name, run as a built gpu-burn is (its script by a Python)
    burn.write_text("import time\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, str(burn), "60"])
    try:
        _, out, _ = sim.run(nvidia_smi, argv)
    finally:
        proc.kill()
        proc.wait()
    lines = out.splitlines()
    assert lines == [f"{g['bus_id']}, {proc.pid}, {burn}" for g in sim.model["gpus"]]
    status, out, _ = sim.run(nvidia_smi, ["--query-compute-apps=bogus", "--format=csv"])
    assert status == 2 and 'Field "bogus" is not a valid field to query.' in out
