"""nvidia-smi -q / -q -x: each GPU's fabric block, the driver's recovery action and lost GPUs.

Captures: tests/data/samples/nvidia_smi_qx_b200_8gpu_driver580_hgx.txt (HGX B200, driver 580.105.08)
and nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt (GB200 tray, driver 580.173.02), both
real-hardware captures published scrubbed as test data in NVIDIA/k8s-test-infra
(tests/e2e/go/assertions/nvidiasmi/testdata/hardware/). The -q text layout of the 580 fabric block
("Fabric / State, Status, CliqueId, ClusterUUID / Health / Summary, Bandwidth") and of "GPU Recovery
Action" is built here from the same fields; the lost-GPU line is nvidia-smi's own ("Unable to
determine the device handle for GPU 0000:0C:00.0: GPU is lost.  Reboot the system to recover this
GPU", as users paste it).
"""
import re
from pathlib import Path

import pytest

from provision.parsers import parse_tool

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
B200 = (SAMPLES / "nvidia_smi_qx_b200_8gpu_driver580_hgx.txt").read_text()
GB200 = (SAMPLES / "nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt").read_text()
H100_Q = (SAMPLES / "smi_q_h100x8_535_183.txt").read_text()
GB200_UUID = "00000001-0000-0000-0000-000000000001"


@pytest.mark.parametrize("field,value", [("state", "Completed"), ("status", "Success"), ("clique_id", 2),
                                         ("cluster_uuid", GB200_UUID), ("health_summary", "Healthy"),
                                         ("bandwidth", "Full")])
def test_gb200_fabric_fields(field, value):
    gpus = parse_tool("nvidia-smi-qx", GB200)["gpus"]
    assert len(gpus) == 4
    assert [g["fabric"][field] for g in gpus] == [value] * 4


@pytest.mark.parametrize("field,value", [("state", "Completed"), ("status", "Success"), ("clique_id", 0),
                                         ("cluster_uuid", "00000000-0000-0000-0000-000000000000"),
                                         ("health_summary", "Healthy"), ("bandwidth", None)])
def test_b200_fabric_fields(field, value):
    gpus = parse_tool("nvidia-smi-qx", B200)["gpus"]
    assert len(gpus) == 8
    assert [g["fabric"][field] for g in gpus] == [value] * 8  # bandwidth prints N/A on HGX B200


def test_clique_id_is_an_int_and_uuid_a_string_as_printed():
    fabric = parse_tool("nvidia-smi-qx", GB200.replace("<cliqueId>2<", "<cliqueId>32766<"))["gpus"][0]["fabric"]
    assert fabric["clique_id"] == 32766 and isinstance(fabric["clique_id"], int)
    assert fabric["cluster_uuid"] == GB200_UUID


def test_fabric_in_progress_and_limited_capacity_read_as_printed():
    text = GB200.replace("<state>Completed</state>", "<state>In Progress</state>", 1)
    text = text.replace("<summary>Healthy</summary>", "<summary>Limited Capacity</summary>", 1)
    text = text.replace("<bandwidth>Full</bandwidth>", "<bandwidth>Degraded</bandwidth>", 1)
    first, second = parse_tool("nvidia-smi-qx", text)["gpus"][:2]
    assert (first["fabric"]["state"], first["fabric"]["health_summary"], first["fabric"]["bandwidth"]) == \
        ("In Progress", "Limited Capacity", "Degraded")
    assert second["fabric"]["state"] == "Completed"


def test_recovery_action_as_printed():
    gpus = parse_tool("nvidia-smi-qx", GB200)["gpus"]
    assert [g["recovery_action"] for g in gpus] == ["None"] * 4
    text = GB200.replace("<gpu_recovery_action>None<", "<gpu_recovery_action>Node Reboot Required<", 1)
    assert parse_tool("nvidia-smi-qx", text)["gpus"][0]["recovery_action"] == "Node Reboot Required"
    text = GB200.replace("<gpu_recovery_action>None</gpu_recovery_action>", "")
    assert parse_tool("nvidia-smi-qx", text)["gpus"][0]["recovery_action"] is None


def test_no_fabric_element_is_null_and_an_all_na_block_is_nulls():
    text = GB200.replace(GB200[GB200.index("<fabric>"):GB200.index("</fabric>") + len("</fabric>")], "", 1)
    gpus = parse_tool("nvidia-smi-qx", text)["gpus"]
    assert gpus[0]["fabric"] is None and gpus[1]["fabric"]["clique_id"] == 2
    a10 = parse_tool("nvidia-smi-q", (SAMPLES / "smi_q_a10_remap_pending_535_129.txt").read_text())["gpus"][0]
    assert a10["fabric"] == dict.fromkeys(("state", "status", "clique_id", "cluster_uuid", "health_summary",
                                           "bandwidth"))


def _q_text_580() -> str:
    """The H100 -q capture with the 580 fabric block and recovery action of the GB200 capture's values."""
    block = ("    GPU Recovery Action                   : Drain and Reset\n"
             "    Fabric\n"
             "        State                             : Completed\n"
             "        Status                            : Success\n"
             "        CliqueId                          : 2\n"
             f"        ClusterUUID                       : {GB200_UUID}\n"
             "        Health\n"
             "            Summary                       : Limited Capacity\n"
             "            Bandwidth                     : Full\n"
             "            Route Recovery in progress    : False\n"
             "            Route Unhealthy               : False\n"
             "            Access Timeout Recovery       : False\n")
    old = ("    Fabric\n        State                             : Completed\n"
           "        Status                            : Success\n")
    assert old in H100_Q
    return H100_Q.replace(old, block, 1)


def test_q_text_fabric_and_recovery_action():
    gpus = parse_tool("nvidia-smi-q", _q_text_580())["gpus"]
    assert gpus[0]["fabric"] == {"state": "Completed", "status": "Success", "clique_id": 2,
                                 "cluster_uuid": GB200_UUID, "health_summary": "Limited Capacity",
                                 "bandwidth": "Full"}
    assert gpus[0]["recovery_action"] == "Drain and Reset"
    assert gpus[1]["fabric"]["clique_id"] is None and gpus[1]["recovery_action"] is None  # 535: not printed


def test_a_lost_gpu_named_only_by_nvidia_smis_error_line():
    sections = H100_Q.split("\nGPU 00000000:")
    without_third = "\nGPU 00000000:".join(sections[:3] + sections[4:])
    lost_bus = sections[3].split("\n", 1)[0]
    text = (f"Unable to determine the device handle for GPU 0000:{lost_bus}: GPU is lost.  "
            "Reboot the system to recover this GPU\n" + without_third)
    parsed = parse_tool("nvidia-smi-q", text)
    assert len(parsed["gpus"]) == 8 and parsed["complete"] is True
    lost = [g for g in parsed["gpus"] if g["lost"]]
    assert len(lost) == 1 and lost[0]["bus_id"] == f"0000:{lost_bus}" and lost[0]["lost_reason"] == "GPU is lost"
    assert lost[0]["name"] is None and lost[0]["temp_C"] is None
    assert sum(not g["lost"] for g in parsed["gpus"]) == 7


def test_a_gpu_whose_fields_print_unknown_error_is_lost_not_a_row_of_nulls():
    start = GB200.index('<gpu id="00000000:9C:00.0">')
    end = GB200.index("</gpu>", start)
    section = GB200[start:end]
    broken = section.replace("<product_name>NVIDIA GB200</product_name>", "<product_name>Unknown Error</product_name>")
    for tag in ("gpu_temp", "state", "cliqueId", "gpu_recovery_action"):
        broken = re.sub(f"<{tag}>[^<]*</{tag}>", f"<{tag}>Unknown Error</{tag}>", broken, count=1)
    gpus = parse_tool("nvidia-smi-qx", GB200[:start] + broken + GB200[end:])["gpus"]
    lost = gpus[2]
    assert lost["lost"] is True and lost["bus_id"] == "00000000:9C:00.0"
    assert lost["name"] is None and lost["temp_C"] is None and lost["recovery_action"] is None
    assert lost["fabric"]["state"] is None and lost["fabric"]["clique_id"] is None
    assert [g["lost"] for g in gpus] == [False, False, True, False]


def test_gpu_is_lost_in_any_field_marks_the_gpu_lost():
    text = GB200.replace("<gpu_recovery_action>None<", "<gpu_recovery_action>GPU is lost<", 1)
    gpus = parse_tool("nvidia-smi-qx", text)["gpus"]
    assert gpus[0]["lost"] is True and gpus[0]["name"] == "NVIDIA GB200" and gpus[0]["recovery_action"] is None
    assert not any(g["lost"] for g in gpus[1:])
