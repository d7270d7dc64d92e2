"""The Xid catalogue as data (provision/checks/xid_catalogue.json, tools/xid_catalogue.py) and the
xid check's judging by NVIDIA's resolution buckets.

Log lines follow the R570/R580 format "NVRM: Xid (PCI:dddd:bb:dd): N, pid=..., name=..., <text>";
the NVLink5 text ("RLW_SRC_TRACK Nonfatal XC1 i0 Link 03 (...)") and the Xid 154 text ("GPU recovery
action changed from 0x0 (None) to 0x2 (Node Reboot Required)") are the driver's as printed on GB200
(format seen in leptonai/gpud components/accelerator/nvidia/xid/kmsg_extended_test.go and quoted by
the catalogue's Xid 154 row); the numbers here are made up.
"""
import json
from pathlib import Path

from provision import profiles
from provision.checks import Outcome, faults, registry, xid
from provision.checks.faults import catalogue as fault_catalogue
from tests.unit.checks import judge

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "tools" / "xid_catalogue_page.tsv"
H100 = profiles.load("h100-sxm5-80g-ndr")


def _judge(*lines: str):
    text = "".join(f"[ 812.{i:06d}] NVRM: Xid ({line}\n" for i, line in enumerate(lines))
    return judge("gb01", registry()["xid"], H100, {"": text})


def _page_codes() -> dict[int, list[str]]:
    rows = [line.split("\t") for line in PAGE.read_text().splitlines() if line and not line.startswith("#")]
    return {int(r[0]): r[1] for r in rows[1:]}


def test_the_catalogue_covers_every_code_of_the_table_read():
    document = json.loads(xid.CATALOGUE.read_text())
    codes = [row["xid"] for row in document["codes"]]
    page = _page_codes()
    assert codes == sorted(page) == list(range(1, 173))  # Table 1 Xids as read on 2026-12-02: 1..172
    assert {row["xid"]: row["mnemonic"] for row in document["codes"]} == page
    assert document["source"]["url"] == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    assert document["source"]["read_on"] == "2026-12-02"
    for row in document["codes"]:
        assert set(row) >= {"mnemonic", "description", "immediate", "investigatory", "applies_to"}, row["xid"]
        assert set(row["applies_to"]) <= {"A100", "H100", "B100", "GB200"}


def test_catalogue_rows_read_as_the_page_prints_them():
    rows = xid.catalogue()
    assert rows[79]["immediate"] == "RESTART_BM" and rows[79]["description"] == "GPU has fallen off the bus"
    assert rows[13]["immediate"] == "RESTART_APP" and rows[13]["investigatory"] == "WORKFLOW_XID_13"
    assert rows[74]["applies_to"] == ["A100", "H100"]  # NVLink4 and older; Blackwell reports 144-150
    assert rows[121]["applies_to"] == ["GB200"]
    assert all(rows[n]["applies_to"] == ["B100", "GB200"] for n in range(144, 151))
    assert rows[154]["mnemonic"] == "GPU_RECOVERY_ACTION_CHANGED"
    assert all(rows[n]["immediate"] is None for n in range(162, 173))  # no bucket published yet


def test_every_catalogued_xid_has_a_fault_row():
    for number in xid.catalogue():
        assert xid.code(number) in fault_catalogue(), number
    assert xid.code(145) == "XID_NVLINK5" and xid.code(13) == "XID_13" and xid.code(8) == "XID_RESTART_APP"
    assert xid.code(167) == "XID_UNCLASSIFIED" and xid.code(173) == "XID_UNKNOWN"


def test_a_blackwell_nvlink5_xid_is_named_with_its_resolution():
    result = _judge("PCI:0008:01:00): 145, pid=4242, name=python3, RLW_SRC_TRACK Nonfatal XC1 i0 Link 03 "
                    "(0x040868e2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)")
    assert result.outcome == Outcome.FAIL, result.message
    assert "PCI 0008:01:00: xid = 145" in result.message
    assert "NVLINK: RLW Error (NVLINK_RLW_ERROR)" in result.message
    assert "WORKFLOW_NVLINK5_ERR" in result.message and "XID_NVLINK5" in result.message
    for number in range(144, 151):
        assert xid.severity(number) == "failure" and xid.code(number) == "XID_NVLINK5"


def test_restart_the_application_is_a_warning_naming_the_process():
    result = _judge("PCI:0008:01:00): 13, pid=31337, name=train.py, Graphics Exception: ESR 0x514648=0x1000f")
    assert result.outcome == Outcome.PASS, result.message
    finding = next(f for f in result.findings if f.metric == "xid")
    assert finding.ok and "restart the application: process train.py pid 31337" in finding.detail
    assert "warning" in finding.detail


def test_an_ignore_code_is_a_warning():
    result = _judge("PCI:0009:01:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                    "(0x00000000001d6a40) marked for remapping, reset gpu to activate.")
    assert result.outcome == Outcome.PASS, result.message
    finding = next(f for f in result.findings if f.metric == "xid")
    assert "NVIDIA's resolution: IGNORE" in finding.detail and "warning" in finding.detail


def test_reset_gpu_fails_with_that_action():
    result = _judge("PCI:0018:01:00): 119, pid=1203, name=nvidia-smi, Timeout after 6s of waiting for RPC "
                    "response from GPU1 GSP!")
    assert result.outcome == Outcome.FAIL
    assert "NVIDIA's resolution: RESET_GPU" in result.message and "XID_119" in result.message
    assert faults.action("XID_RESET_GPU").startswith("Drain the node and reset the GPU")


def test_the_driver_recovery_action_fails_and_is_named_beside_the_xid():
    result = _judge("PCI:0019:01:00): 145, pid=77, name=python3, RLW_REMAP Nonfatal XC0 i0 Link 05 "
                    "(0x00000004 0x00000001 0x00000000 0x00000000)",
                    "PCI:0019:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
    assert result.outcome == Outcome.FAIL
    rows = [f for f in result.findings if f.metric == "xid"]
    assert all("driver recovery action: Node Reboot Required" in f.detail for f in rows)
    assert rows[1].fault == "XID_154" and not rows[1].ok


def test_a_recovery_action_back_to_none_is_a_warning():
    result = _judge("PCI:0019:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")
    assert result.outcome == Outcome.PASS, result.message


def test_unclassified_and_unknown_codes_fail():
    result = _judge("PCI:0008:01:00): 167, pid='<unknown>', name=<unknown>, PCIE_FATAL_TIMEOUT")
    assert result.outcome == Outcome.FAIL and "XID_UNCLASSIFIED" in result.message
    result = _judge("PCI:0008:01:00): 999, pid='<unknown>', name=<unknown>, something new")
    assert result.outcome == Outcome.FAIL and "XID_UNKNOWN" in result.message
