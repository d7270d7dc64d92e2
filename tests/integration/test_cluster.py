"""The cluster procedure on a simulated rack of eight nodes with three faults injected together:
a slow HCA, a slow node and a degraded leaf-spine cable. The burn-in must name all three (the
node and its HCA; the node; the cable with both switch ports) and nothing healthy. The rack is the
installed 8-node rack the integration tests share (conftest.eight_h100), the faults replayed on it."""
import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from provision import paths
from provision.sim import rack
from tests.integration.conftest import provision, replay

pytestmark = pytest.mark.integration
SCENARIO = paths.ROOT / "tests/data/scenarios/cluster-three-faults.yaml"


@pytest.fixture
def three_faults(eight_h100):
    """The shared installed rack with the scenario's three faults (conftest.replay)."""
    return replay(eight_h100, SCENARIO)


def _cable(folder):
    """The cable the scenario degraded, from the rack's fabric: rail 5, uplink 1 of node03's leaf."""
    world = yaml.safe_load((rack.state_dir(folder) / rack.FABRIC_FILE).read_text())
    plane = world["planes"][5]
    return next(c for c in plane["cables"] if c["width"] == "1x"), plane["name"]


def test_the_cluster_burnin_names_the_slow_hca_the_slow_node_and_the_cable(three_faults, tmp_path):
    run_id = "cluster-three-faults"
    proc = provision("burnin", "-i", str(three_faults), "--scope", "cluster", "--run-id", run_id, timeout=2400)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads((paths.RUNS / run_id / "report.json").read_text())
    [group] = report["cluster"]["groups"]
    got = {(s["kind"], s["host"], s["device"]) for s in group["suspects"]}
    assert {("hca", "node02", "mlx5_3"), ("node", "node06", None)} <= got
    cables = [s for s in group["suspects"] if s["kind"] == "cable"]
    assert len(cables) == 1 and len(got) == 3, group["suspects"]
    bad, plane = _cable(three_faults)
    named = cables[0]["cable"]
    assert named["plane"] == "mlx5_5" and named["id"] == "<->".join(
        sorted([f"{bad['a']}/{bad['a_port']}", f"{bad['b']}/{bad['b_port']}"]))
    assert {(named["leaf"], named["leaf_port"]), (named["spine"], named["spine_port"])} == {
        (bad["a"], bad["a_port"]), (bad["b"], bad["b_port"])}
    verdicts = report["verdicts"]
    assert verdicts["node02"] == verdicts["node06"] == "fail"
    assert {h for h, v in verdicts.items() if v != "pass"} == {"node02", "node06"}, verdicts
    assert f"{group['rounds_total']} rounds" in proc.stdout
    # the fabric check sees the degraded cable too, as a fabric finding that fails no node
    fabric = next(r for r in report["results"] if r["check"] == "fabric")
    assert any(f["metric"] == "width_speed" and not f["ok"] and f["host"] == "fabric" for f in fabric["findings"])
    suite = ET.parse(paths.RUNS / run_id / "junit" / "cluster.xml").getroot()
    suspects = [c for c in suite.iter("testcase") if c.get("name", "").startswith("suspect[")]
    assert len(suspects) == 3 and all(c.find("failure") is not None for c in suspects)
