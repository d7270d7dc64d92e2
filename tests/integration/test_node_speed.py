"""A node that passes must be fast (issue 33): on the shared installed 8-node H100 rack, one of each fault of
tests/data/scenarios/node-speed-faults.yaml on a node of its own (another VBIOS, other HCA firmware, ACS on the
switch port above a GPU, nvidia-peermem not loaded, a powersave governor, MIG on, a lowered power limit). The
burn-in of the firmware, settings and GPUDirect checks exits 1 and names each faulty host with its device and
reason in the console, JUnit, report.json, the HTML report and Prometheus; node08 passes. Healed, the same run
passes on every node."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from prometheus_client.parser import text_string_to_metric_families

from provision import paths
from provision.report import html
from provision.results import reading
from provision.sim import rack
from tests.integration.conftest import provision, replay

pytestmark = pytest.mark.integration
SCENARIO = paths.ROOT / "tests/data/scenarios/node-speed-faults.yaml"
CHECKS = "firmware,firmware_fleet,gpu_settings,pcie_acs,host_settings,gpudirect"


def _bus(folder, node: str, gpu: int) -> str:
    import yaml

    from provision.sim import faults

    [found] = [n for n in rack.load_nodes(folder) if n.name == node]
    model = yaml.safe_load((found.root() / faults.MODEL).read_text())
    return next(g["bus_id"] for g in model["gpus"] if g["index"] == gpu)


def _expected(folder) -> dict[str, tuple[str, str, str]]:
    """host -> (check, device text, reason text) each output must name."""
    return {
        "node01": ("firmware", f"GPU3 {_bus(folder, 'node01', 3)}", "vbios = '96.00.99.00.01'"),
        "node02": ("firmware", "mlx5_5", "hca_fw = '28.40.1000'"),
        "node03": ("pcie_acs", "above GPU 0000:" + _bus(folder, "node03", 2).split(":", 1)[1].lower(),
                   "acs_redirect = 'SrcValid+ ReqRedir+ CmpltRedir+'"),
        "node04": ("gpudirect", "mlx5_0 with GPU0 (peermem)", "GPUDIRECT_UNAVAILABLE"),
        "node05": ("host_settings", "policy0", "scaling_governor = 'powersave'"),
        "node06": ("gpu_settings", f"GPU1 {_bus(folder, 'node06', 1)}", "mig_mode = 'Enabled'"),
        "node07": ("gpu_settings", f"GPU4 {_bus(folder, 'node07', 4)}", "power_limit_W = 500 W, expected 700 W"),
    }


def test_each_slow_node_is_named_with_its_device_and_reason_everywhere(eight_h100):
    folder = replay(eight_h100, SCENARIO)
    expected = _expected(folder)
    proc = provision("burnin", "-i", str(folder), "--run-id", "node-speed", "--checks", CHECKS)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = paths.RUNS / "node-speed"
    report = json.loads((out / "report.json").read_text())
    assert {h for h, v in report["verdicts"].items() if v != "pass"} == set(expected), report["verdicts"]
    run = reading.run_from_dict(report, "report.json")
    page = html.render(run)
    junit_text = ET.tostring(ET.parse(out / "junit" / "all.xml").getroot(), encoding="unicode")
    prom = [s for family in text_string_to_metric_families((out / "burnin.prom").read_text())
            for s in family.samples if s.name == "provision_burnin_finding_failed" and s.value == 1.0]
    for host, (check, device, reason) in expected.items():
        [row] = [r for r in report["results"] if r["check"] == check and r["hosts"] == [host]]
        assert row["outcome"] == "fail", (host, row["message"])
        assert device in row["message"] and reason in row["message"], (host, row["message"])
        assert any(host in line and check in line for line in proc.stdout.splitlines()), (host, check)
        assert reason.split(" = ")[0] in junit_text and device in junit_text, (host, device)
        assert device.replace("'", "&#x27;") in page or device in page, (host, device)
        assert any(s.labels["host"] == host and s.labels["check"] == check for s in prom), (host, check)
    assert report["verdicts"]["node08"] == "pass"
    assert "Firmware and versions across the fleet" in page


def test_the_healed_rack_passes_the_same_checks(eight_h100):
    proc = provision("burnin", "-i", str(eight_h100), "--run-id", "node-speed-healthy", "--checks", CHECKS)
    report = json.loads((paths.RUNS / "node-speed-healthy" / "report.json").read_text())
    bad = [(r["check"], r["hosts"], r["message"][:300]) for r in report["results"] if r["outcome"] != "pass"]
    assert proc.returncode == 0 and not bad, bad
