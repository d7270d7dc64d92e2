"""Simulated B200 and GB200 nodes: nvidia-smi -q -x / -q / nvlink -s in driver 580's layout, and their faults.

The simulated output is parsed with the project's own parsers and compared with the real driver-580 captures
(tests/data/samples/nvidia_smi_qx_b200_8gpu_driver580_hgx.txt, HGX B200 on 580.105.08, and
nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt, a GB200 tray on 580.173.02; both published scrubbed by
NVIDIA in k8s-test-infra): every element the simulator prints is one the capture prints, in the capture's order,
and the <fabric> block has the capture's elements exactly.
"""
from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import dmesg
import nvidia_smi
import pytest
import yaml

from provision.errors import ProvisionError
from provision.parsers import parse_tool
from provision.sim import faults, hwmodel

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "tests" / "data" / "samples"
CAPTURES = {"b200-hgx": SAMPLES / "nvidia_smi_qx_b200_8gpu_driver580_hgx.txt",
            "gb200-nvl72": SAMPLES / "nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt"}
DRIVER_580 = {"version": "580.105.08", "cuda_version": "13.0"}  # stack_release.yaml lines.blackwell


def _profile(name: str) -> dict:
    return yaml.safe_load((ROOT / "provision" / "profiles" / "data" / f"{name}.yaml").read_text())


@pytest.fixture
def node(sim):
    """``node(profile, node_index)``: the simulated node ``sim`` turned into that Blackwell node on driver 580."""
    def make(name: str, index: int = 6):
        sim.write(hwmodel.build(copy.deepcopy(_profile(name)), f"node{index + 1:02d}", index))
        sim.driver.write_text(json.dumps(DRIVER_580))
        return sim
    return make


def _paths(gpu: ET.Element) -> list[str]:
    """Every element path below one <gpu>, in document order."""
    out: list[str] = []

    def walk(element: ET.Element, prefix: str) -> None:
        for child in element:
            path = f"{prefix}/{child.tag}"
            out.append(path)
            walk(child, path)
    walk(gpu, "")
    return out


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(item == other for other in it) for item in small)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_xml_prints_the_captures_elements_in_their_order(node, name):
    _, out, _ = node(name).run(nvidia_smi, ["-q", "-x"])
    real = ET.fromstring(CAPTURES[name].read_text().split("\n", 2)[2])
    sim = ET.fromstring(out.split("\n", 2)[2])
    assert out.splitlines()[1] == CAPTURES[name].read_text().splitlines()[1]  # <!DOCTYPE ... nvsmi_device_v13.dtd>
    assert out.splitlines()[3].startswith("\t<timestamp>") and "\n\t\t<product_name>" in out  # one tab a level
    real_paths = _paths(real.find("gpu"))
    for gpu in sim.findall("gpu"):
        paths = _paths(gpu)
        assert _is_subsequence(paths, real_paths), [p for p in paths if p not in real_paths]
        fabric = [p for p in paths if p.startswith("/fabric")]
        assert fabric == [p for p in real_paths if p.startswith("/fabric")]
    assert len(sim.findall("gpu")) == len(real.findall("gpu"))


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_parsed_like_the_real_capture(node, name):
    _, out, _ = node(name).run(nvidia_smi, ["-q", "-x"])
    sim, real = parse_tool("nvidia-smi-qx", out), parse_tool("nvidia-smi-qx", CAPTURES[name].read_text())
    assert sim["complete"] and sim["schema"] == real["schema"] == "v13"
    assert sim["driver_version"] == "580.105.08" and sim["cuda_version"] == real["cuda_version"]
    keys = ("name", "pcie_gen_max", "width_max", "recovery_action", "lost")
    for mine, theirs in zip(sim["gpus"], real["gpus"], strict=True):
        assert {k: mine[k] for k in keys} == {k: theirs[k] for k in keys}
        assert mine["bus_id"] == theirs["bus_id"]
        if name == "b200-hgx":  # an NVSwitch board: no cluster, the capture's fabric exactly
            assert mine["fabric"] == theirs["fabric"]
        else:  # a tray: the clique and cluster are the rack's (the capture's are scrubbed)
            same = ("state", "status", "health_summary", "bandwidth")
            assert {k: mine["fabric"][k] for k in same} == {k: theirs["fabric"][k] for k in same}
            assert mine["fabric"]["clique_id"] == hwmodel.FIRST_CLIQUE
            assert set(mine["fabric"]["cluster_uuid"].replace("-", "")) != {"0"}
    real_xml = CAPTURES[name].read_text()
    for tag in ("addressing_mode", "c2c_mode", "product_architecture"):
        first = real_xml.split(f"<{tag}>", 1)[1].split("<", 1)[0]
        assert f"<{tag}>{first}</{tag}>" in out


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_text_report_says_what_the_xml_says(node, name):
    sim = node(name)
    _, xml, _ = sim.run(nvidia_smi, ["-q", "-x"])
    _, text, _ = sim.run(nvidia_smi, ["-q"])
    keys = ("bus_id", "name", "fabric", "recovery_action", "lost", "temp_C", "power_W")
    parsed = parse_tool("nvidia-smi-q", text)
    assert parsed["complete"]
    assert [{k: g.get(k) for k in keys} for g in parsed["gpus"]] == \
        [{k: g.get(k) for k in keys} for g in parse_tool("nvidia-smi-qx", xml)["gpus"]]
    assert "        CliqueId                          : " in text and "            Summary" in text


def test_trays_of_one_nvlink_domain_share_a_clique_and_cluster():
    profile = _profile("gb200-nvl72")
    per_domain = int(profile["nvlink_domain"]["nodes"])
    fabrics = [hwmodel.build(copy.deepcopy(profile), f"node{i + 1:02d}", i)["gpus"][0]["fabric"]
               for i in range(per_domain + 1)]
    first = {(f["clique_id"], f["cluster_uuid"]) for f in fabrics[:per_domain]}
    assert len(first) == 1
    assert (fabrics[-1]["clique_id"], fabrics[-1]["cluster_uuid"]) not in first


def test_nvlink5_links(node):
    sim = node("gb200-nvl72")
    _, out, _ = sim.run(nvidia_smi, ["nvlink", "-s"])
    assert out.count("\t Link 17: 53.125 GB/s") == 4 and "Link 18" not in out
    _, topo, _ = sim.run(nvidia_smi, ["topo", "-m"])
    assert topo.splitlines()[1].split("\t")[2] == "NV18"
    assert topo.splitlines()[4].split("\t")[9] == "72-143"  # GPU3 on the second Grace CPU: 72 cores, no SMT


def _fault(sim, kind: str, device: str, value: str | None = None) -> dict:
    faults.KINDS[kind].apply(sim.model, device, value)
    sim.write()
    _, out, _ = sim.run(nvidia_smi, ["-q", "-x"])
    return parse_tool("nvidia-smi-qx", out)


def test_fabric_faults_change_what_nvidia_smi_prints(node):
    sim = node("gb200-nvl72")
    gpus = _fault(sim, "fabric_in_progress", "2")["gpus"]
    assert gpus[2]["fabric"] == {"state": "In Progress", "status": None, "clique_id": None, "cluster_uuid": None,
                                 "health_summary": None, "bandwidth": None}
    assert _fault(sim, "fabric_limited", "1")["gpus"][1]["fabric"]["health_summary"] == "Limited Capacity"
    gpus = _fault(sim, "fabric_other_clique", "3", "7")["gpus"]
    assert gpus[3]["fabric"]["clique_id"] == 7 and gpus[0]["fabric"]["clique_id"] == hwmodel.FIRST_CLIQUE
    assert _fault(sim, "recovery_action", "0", "Node Reboot")["gpus"][0]["recovery_action"] == "Node Reboot"
    with pytest.raises(ProvisionError):
        faults.KINDS["recovery_action"].apply(sim.model, "0", "Reboot please")


def test_a_lost_gpu_prints_the_two_real_forms(node):
    sim = node("gb200-nvl72")
    parsed = _fault(sim, "gpu_unreadable", "2")
    assert [g["lost"] for g in parsed["gpus"]] == [False, False, True, False]
    assert parsed["gpus"][2]["bus_id"] == "00000000:9C:00.0" and parsed["gpus"][2]["name"] is None
    parsed = _fault(sim, "gpu_lost", "1")
    lost = [g for g in parsed["gpus"] if g["lost"]]
    assert len(parsed["gpus"]) == 4 and parsed["attached_gpus"] == 4
    assert {g["lost_reason"] for g in lost if "lost_reason" in g} == {"GPU is lost"}
    assert "Unable to determine the device handle for GPU0000:3F:00.0: GPU is lost." in \
        sim.run(nvidia_smi, ["-q"])[1]


def test_nvlink5_xid_in_the_kernel_log(node):
    sim = node("b200-hgx")
    faults.KINDS["nvlink5_xid"].apply(sim.model, "3", "149:5")
    sim.write()
    _, out, _ = sim.run(dmesg, [])
    event = parse_tool("dmesg-xid", out)["xids"][0]
    assert (event["xid"], event["pci"].lower()) == (149, "0000:97:00")
    assert "NETIR_LINK_EVT Fatal XC0 i0 Link 05 (0x025001c6" in out
    assert sim.model["gpus"][3]["nvlink"]["links"][5]["active"] is False  # a fatal link event takes the link down
    with pytest.raises(ProvisionError):
        faults.KINDS["nvlink5_xid"].apply(sim.model, "3", "147")


def test_older_drivers_keep_their_layout(sim):
    _, out, _ = sim.run(nvidia_smi, ["-q", "-x"])
    assert "nvsmi_device_v12.dtd" in out and "<cliqueId>" not in out and "<gpu_recovery_action>" not in out
    assert "\n        <fabric>\n            <state>Completed</state>\n            <status>Success</status>\n" \
           "        </fabric>" in out
