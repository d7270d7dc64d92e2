"""One truth on the simulated rack (issue 23 item 2): every output is a view of one results model.

On the installed 8-node rack the integration tests share (conftest.eight_h100, healed before each test):
1. tests/data/scenarios/flapping-port-slow-hca.yaml replayed on it: a slow HCA (node02 mlx5_3: ib_write_bw
   fails it, so it is left out of the cluster tests) and a flapping switch port (rail 1, uplink 0 of node05's
   leaf: ibnetdiscover cannot see it, localization names its cable) in one burn-in: the console's closing
   lines, JUnit, Prometheus and the HTML report carry the same hosts, cables and switch ports as
   report.json's model, and the left-out host with its reason;
2. healed, then one leaf-spine cable trained down to 1x and nothing else: every host passes, the run exits 1
   and every output says the run failed by that cable (never "0 failed").
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from provision import paths
from provision.report import html, junit, summary
from provision.results import reading
from provision.results.model import FABRIC, Outcome
from provision.sim import rack
from tests.integration.conftest import provision, replay

pytestmark = pytest.mark.integration
SCENARIO = paths.ROOT / "tests/data/scenarios/flapping-port-slow-hca.yaml"


def _broken_cable(folder, key: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """The ends of the rack's one cable with ``key`` set (flapping) or trained below 4x (width), as
    (switch GUID, port) pairs, from the rack's own fabric."""
    world = yaml.safe_load((rack.state_dir(folder) / rack.FABRIC_FILE).read_text())
    [cable] = [c for p in world["planes"] for c in p["cables"]
               if (c.get("flapping") if key == "flapping" else c.get("width") not in (None, "4x"))]
    return (cable["a"], int(cable["a_port"])), (cable["b"], int(cable["b_port"]))


def _outputs(run_id: str, stdout: str) -> dict:
    """What each output of the run says: the model (report.json read back), the console's lines, JUnit's
    failing suites and fabric cases, Prometheus' samples, the HTML page."""
    folder = paths.RUNS / run_id
    run = reading.run_from_dict(json.loads((folder / "report.json").read_text()), "report.json")
    suites = {s.get("name"): s for s in ET.parse(folder / "junit" / "all.xml").getroot().iter("testsuite")}
    prom: dict[str, list] = {}
    for family in text_string_to_metric_families((folder / "burnin.prom").read_text()):
        for s in family.samples:
            prom.setdefault(s.name, []).append((s.labels, s.value))
    return {"run": run, "lines": stdout.splitlines(), "suites": suites, "prom": prom, "html": html.render(run)}


def _ones(samples, key):
    return [(labels, labels[key]) for labels, value in samples if value == 1.0]


def _same_everywhere(out: dict) -> tuple[set, set]:
    """Assert that the console, JUnit and Prometheus name the model's failed hosts, cables and switch
    ports; return (failed hosts, failed cables as frozensets of their two (GUID, port) ends)."""
    run, lines, suites, prom = out["run"], out["lines"], out["suites"], out["prom"]
    hosts = {h for h, v in run.verdicts().items() if v == "fail"}
    comps = [c for c in run.fabric_components() if c.outcome is Outcome.FAIL]
    cables = {frozenset({(c.switch, c.port), (c.peer, c.peer_port)}) for c in comps if c.kind == "cable"}
    ports = {(c.switch, c.port) for c in comps if c.kind == "port"}
    # the console: the closing lines are the model's, in order, at the end of the summary
    closing = summary.closing(run)
    at = lines.index(closing[0])
    assert lines[at:at + len(closing)] == closing, lines[-8:]
    assert closing[-1] == run.outcome().line() and closing[-1].startswith("run FAIL")
    assert not re.search(r"\b0 failed\b", "\n".join(closing))
    for c in comps:
        if c.kind == "cable":
            assert any(line.startswith(c.name) and " FAIL " in line for line in lines), c.name
    # JUnit: a failing suite per failed host, a failed fabric testcase per failed cable and port
    failing = {name for name, s in suites.items() if name not in (junit.CLUSTER_SUITE, junit.FABRIC_SUITE)
               and int(s.get("failures")) + int(s.get("errors"))}
    assert failing == hosts
    fabric_failed = {case.get("name") for case in suites[junit.FABRIC_SUITE].iter("testcase")
                     if case.find("failure") is not None}
    assert fabric_failed == {c.name for c in comps}
    assert all(re.fullmatch(r"\d+\.\d{3}", s.get("time")) for s in suites.values())
    # Prometheus: host verdicts, cables and ports by switch GUID and port, and the run
    assert {labels["host"] for labels, v in _ones(prom["provision_burnin_host_verdict"], "verdict")
            if v == "fail"} == hosts
    prom_cables = {frozenset({(lb["switch_guid"], int(lb["port"])), (lb["peer_guid"], int(lb["peer_port"]))})
                   for lb, v in _ones(prom["provision_burnin_cable_outcome"], "outcome") if v == "fail"}
    prom_ports = {(lb["switch_guid"], int(lb["port"]))
                  for lb, v in _ones(prom["provision_burnin_switch_port_outcome"], "outcome") if v == "fail"}
    assert prom_cables == cables and prom_ports == ports
    assert prom["provision_burnin_run_passed"] == [({}, 0.0)]
    assert [v for _, v in _ones(prom["provision_burnin_run_outcome"], "outcome")] == ["fail"]
    return hosts, cables


def test_a_flapping_port_and_a_slow_hca_are_the_same_hosts_and_ports_everywhere(eight_h100):
    replay(eight_h100, SCENARIO)
    run_id = "truth-flap-slow-hca"
    proc = provision("burnin", "-i", str(eight_h100), "--checks", "ib_write_bw,ib_pairs", "--run-id", run_id,
                     timeout=2400)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = _outputs(run_id, proc.stdout)
    hosts, cables = _same_everywhere(out)
    assert hosts == {"node02"}
    flapping = frozenset(_broken_cable(eight_h100, "flapping"))
    assert flapping in cables, (flapping, cables)
    run, lines = out["run"], out["lines"]
    # the slow HCA: its node check names it; node02 is left out of the cluster tests, with the reason
    assert any(line.startswith("node02 burnin.ib_write_bw FAIL") and "mlx5_3" in line for line in lines)
    assert run.left_out() == {"node02": "a node check did not pass (ib_write_bw fail)"}
    assert "node02: a node check did not pass (ib_write_bw fail)" in lines
    left = [lb for lb, v in out["prom"]["provision_burnin_host_left_out"] if v == 1.0]
    assert [lb["host"] for lb in left] == ["node02"]
    skipped = [c for c in out["suites"]["node02"].iter("testcase") if c.get("name") == "cluster"]
    assert len(skipped) == 1 and "ib_write_bw fail" in skipped[0].find("skipped").get("message")
    # the suspect line carries the cable, its fault code and its action
    (a, a_port), (b, b_port) = sorted(flapping)
    suspects = [line for line in lines if line.startswith("  suspect fabric cable")]
    assert any(f"{a}[{a_port}]" in line and f"{b}[{b_port}]" in line and "[SUSPECT_CABLE: " in line
               for line in suspects), suspects
    confidence = {lb["device"] for lb, _ in out["prom"]["provision_burnin_suspect_confidence"]}
    assert any(f"{a}[{a_port}]" in d and f"{b}[{b_port}]" in d for d in confidence), confidence
    # HTML (what html.py renders): the failing host and the suspect cable's switch ports
    page = out["html"]
    assert "node02" in page and f"{a}[{a_port}]" in page and f"{b}[{b_port}]" in page


def test_a_run_failed_only_by_a_cable_exits_1_and_says_so_everywhere(eight_h100):
    assert provision("sim", "heal", "all", "--inventory", str(eight_h100)).returncode == 0
    fault = provision("sim", "fault", "node03", "cable_degraded", "--device", "mlx5_5:up1", "--value", "1x",
                      "--inventory", str(eight_h100))
    assert fault.returncode == 0, fault.stderr
    run_id = "truth-cable-only"
    proc = provision("burnin", "-i", str(eight_h100), "--scope", "cluster", "--run-id", run_id, timeout=2400)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = _outputs(run_id, proc.stdout)
    hosts, cables = _same_everywhere(out)
    run = out["run"]
    assert hosts == set() and set(run.verdicts().values()) == {"pass"}
    assert cables == {frozenset(_broken_cable(eight_h100, "width"))}
    assert run.outcome().line() == "run FAIL: 1 cable failed, 2 switch ports failed"
    assert summary.closing(run)[0] == "8 passed of 8 hosts"
    outcome = {(lb["host"], lb["check"]) for lb, v in _ones(out["prom"]["provision_burnin_check_outcome"], "outcome")
               if v == "fail"}
    assert (FABRIC, "fabric") in outcome  # the textfile says the fabric failed, not only "pass"
