"""The main job end to end on a 3-node simulated rack: real sshd, real Ansible, real apt.

Starts its own rack in a temporary inventory on its own addresses (so a user's running rack
is untouched), runs `provision run`, checks every node passed with the expected JUnit
testcases, runs the install again and checks nothing changed, breaks one node's hardware
and checks exactly that node fails with the device named, then stops the rack.
"""
import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from provision import paths
from provision.checks import ORDER
from provision.sim import rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
ROLES = {"nvidia_repo", "nvidia_driver", "cuda_toolkit", "cudnn", "nccl", "framework_venv", "burnin_tools"}
CHECKS = set(ORDER)


@pytest.fixture(scope="module")
def sim_rack(tmp_path_factory):
    with own_rack(tmp_path_factory.mktemp("rack")) as inv:
        yield inv


def report_of(run_id):
    return json.loads((paths.RUNS / run_id / "report.json").read_text())


def test_main_job_then_idempotent_install_then_a_fault(sim_rack, request):
    run_id = f"itest-{request.node.name[:20]}-{id(sim_rack) % 10000}"
    first = provision("run", "-i", str(sim_rack), "--run-id", run_id)
    assert first.returncode == 0, first.stdout[-3000:]
    rep = report_of(run_id)
    assert rep["hosts"] == {"node01": "pass", "node02": "pass", "node03": "pass"}
    for host in rep["hosts"]:
        assert rep["install"][host]["status"] == "ok" and rep["install"][host]["changed"] > 0
        suite = ET.parse(paths.RUNS / run_id / "junit" / f"{host}.xml").getroot()
        names = {c.get("classname") for c in suite.iter("testcase")}
        assert {f"burnin.{c}" for c in CHECKS} <= names
        assert {f"install.{r}" for r in ROLES} <= names
        assert not list(suite.iter("failure")) and not list(suite.iter("error"))
        assert (paths.RUNS / run_id / "raw" / host / "gpu_health.txt").read_text().startswith("<?xml")

    # Judged again from the saved raw outputs, the run gives the same report.
    before = rep["burnin"]
    assert provision("evaluate", run_id).returncode == 0
    assert report_of(run_id)["burnin"] == before

    again = provision("install", "-i", str(sim_rack), "--run-id", run_id + "-again")
    assert again.returncode == 0
    assert {h: r["changed"] for h, r in report_of(run_id + "-again")["install"].items()} == {
        "node01": 0, "node02": 0, "node03": 0}

    # Break node02's hardware: one HCA trains at HDR 200 on this NDR profile.
    node = next(n for n in rack.load_nodes(sim_rack) if n.name == "node02")
    hw_path = node.root() / "etc/provision-sim/hardware.yaml"
    model = yaml.safe_load(hw_path.read_text())
    model["hcas"][5]["rate_Gbps"] = 200
    hw_path.write_text(yaml.safe_dump(model))
    broken = provision("burnin", "-i", str(sim_rack), "--run-id", run_id + "-fault", "--checks", "ib_ports")
    assert broken.returncode == 1
    rep = report_of(run_id + "-fault")
    assert rep["hosts"] == {"node01": "pass", "node02": "fail", "node03": "pass"}
    message = rep["burnin"]["node02"][0]["message"]
    assert "mlx5_5 port 1: rate_Gbps = 200 Gb/s, expected 400 Gb/s" in message
    assert "node02 burnin.ib_ports FAIL" in broken.stdout
