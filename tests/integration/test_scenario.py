"""`provision sim up --scenario FILE` starts the scenario's rack with its faults injected."""
import pytest

from provision import paths
from provision.sim import faults, rack
from tests.conftest import free_address_base
from tests.integration.conftest import provision

pytestmark = pytest.mark.integration


def test_scenario_starts_the_rack_with_its_faults(tmp_path):
    scenario = paths.ROOT / "tests/data/scenarios/two-bad-nodes.yaml"
    proc = provision("sim", "up", "--scenario", str(scenario), "--inventory", str(tmp_path),
                     "--address-base", free_address_base(4))
    try:
        assert proc.returncode == 0, proc.stderr
        assert [n.name for n in rack.load_nodes(tmp_path)] == ["node01", "node02", "node03", "node04"]
        active = faults.active(tmp_path)
        assert [(f["kind"], f["label"]) for f in active["node02"]] == [("ib_rate", "mlx5_3")]
        assert [(f["kind"], f["label"]) for f in active["node03"]] == [("xid79", "GPU2 00000000:4C:00.0")]
        listing = provision("sim", "faults", "--inventory", str(tmp_path)).stdout
        assert "active: node03 xid79 on GPU2 00000000:4C:00.0" in listing
        model = (rack.load_nodes(tmp_path)[1].root() / faults.MODEL).read_text()
        assert "rate_Gbps: 200" in model
        assert provision("sim", "heal", "node02", "--inventory", str(tmp_path)).returncode == 0
        assert "node02" not in faults.active(tmp_path)
    finally:
        provision("sim", "down", "--inventory", str(tmp_path))
