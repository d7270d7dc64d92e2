"""`provision sim up --nodes 128` starts without a scenario: its fat-tree is sized from the profile's switch
radix (4 leaves of 32 nodes per rail on 64-port NDR switches), and the fabric a node discovers is that one."""
import json

import pytest

from provision.sim import rack
from tests.conftest import free_address_base
from tests.integration.conftest import provision

pytestmark = pytest.mark.integration
NODES = 128


def test_a_rack_of_128_nodes_starts_on_a_fabric_sized_for_it(tmp_path):
    up = provision("sim", "up", "--nodes", str(NODES), "--inventory", str(tmp_path), "--address-base",
                   free_address_base(NODES))
    try:
        assert up.returncode == 0, up.stderr
        nodes = rack.load_nodes(tmp_path)
        assert len(nodes) == NODES and all(n.alive() for n in nodes)
        assert all(row["ssh"] for row in rack.status(tmp_path))
        shared = rack.state_dir(tmp_path) / rack.FABRIC_FILE
        assert all((n.root() / "etc/provision-sim/fabric.yaml").samefile(shared) for n in (nodes[0], nodes[-1]))
        # Discovered live from the last node (the last leaf), as an operator would: ibnetdiscover per HCA.
        found = provision("fabric", "-i", str(tmp_path), "--limit", nodes[-1].name, "--json", timeout=600)
        assert found.returncode == 0, found.stderr
        view = json.loads(found.stdout)
        assert len(view["planes"]) == 8 and {p["switches"] for p in view["planes"]} == {4 + 2}
        assert {p["hcas"] for p in view["planes"]} == {NODES}
        first = [leaf for leaf in view["leaves"] if leaf["plane"] == view["planes"][0]["name"]]
        assert sorted(len(leaf["hosts"]) for leaf in first) == [32] * 4
        assert {len(leaf["uplinks"]) for leaf in first} == {32} and {leaf["oversubscription"] for leaf in first} == {1}
        assert view["degraded_links"] == []
    finally:
        provision("sim", "down", "--inventory", str(tmp_path))
    assert not rack.load_nodes(tmp_path)
