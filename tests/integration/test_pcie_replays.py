"""The pcie_replays check on a simulated rack: its steps run over SSH on real nodes (the simulated nvidia-smi the
driver package installs, the real grep reading the nodes' /proc/uptime, this machine's), the healthy node passes
by its default reference row alone (no profile file names it), and `provision sim fault NODE pcie_replays` fails
that node, naming the GPU and the fault; the fault matrix (test_fault_matrix.py) injects it on a random GPU too."""
import json

import pytest
import yaml

from provision import paths
from provision.sim import faults, rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration


def test_a_gpu_whose_link_replays_fails_its_node_and_only_it(tmp_path):
    run_id = f"itest-pcie-replays-{id(tmp_path) % 10000}"
    with own_rack(tmp_path / "rack", nodes=2) as inv:
        install = provision("install", "-i", str(inv), "--run-id", run_id + "-install", "--tags", "driver")
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-2000:]
        fault = provision("sim", "fault", "node02", "pcie_replays", "--device", "3", "--inventory", str(inv))
        assert fault.returncode == 0, fault.stderr
        model = yaml.safe_load((rack.load_nodes(inv)[1].root() / faults.MODEL).read_text())
        burnin = provision("burnin", "-i", str(inv), "--checks", "pcie_replays", "--run-id", run_id)
        assert burnin.returncode == 1, burnin.stdout[-3000:]
    rep = json.loads((paths.RUNS / run_id / "report.json").read_text())
    assert rep["verdicts"] == {"node01": "pass", "node02": "fail"}
    rows = {tuple(r["hosts"]): r for r in rep["results"] if r["check"] == "pcie_replays"}
    healthy, broken = rows[("node01",)], rows[("node02",)]
    assert "replays_per_Tb 0..0 replays/Tb over 8 devices, reference 1 bounds [-, 1]" in healthy["message"]
    bus = model["gpus"][3]["bus_id"]
    assert f"GPU3 {bus}: replays_per_Tb = " in broken["message"] and "[PCIE_REPLAYS_HIGH: " in broken["message"]
    assert f"{faults.REPLAYS} replays (0 rollovers) in " in broken["message"]
    failing = [f for f in broken["findings"] if not f["ok"]]
    assert [(f["device"], f["metric"]) for f in failing] == [(f"GPU3 {bus}", "replays_per_Tb")]
    assert failing[0]["reference"] == 1.0 and failing[0]["upper_bound"] == 1.0
    assert "DcgmHealthWatch.cpp" in failing[0]["source"]
