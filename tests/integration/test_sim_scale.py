"""`provision sim up --nodes 128` starts without a scenario: its fat-tree is sized from the profile's switch
radix (4 leaves of 32 nodes per rail on 64-port NDR switches), and the fabric a node discovers is that one."""
import subprocess

import pytest

from provision.fabric.discover import plane_from_ibnetdiscover
from provision.parsers import parse_tool

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
        uppers = [rack.state_dir(tmp_path) / "nodes" / n.name / "upper/etc/provision-sim/fabric.yaml" for n in nodes]
        assert all(upper.samefile(shared) for upper in uppers)  # one file for the rack, not 128 copies
        # Discovered from the last node (the last leaf) by its simulated ibnetdiscover (the package that puts it
        # on PATH comes with the install), over the rack's own SSH with host key checking on.
        sdir, last = rack.state_dir(tmp_path), nodes[-1]
        done = subprocess.run(["ssh", "-i", str(sdir / "id_ed25519"), "-o", "BatchMode=yes", "-o",
                               f"UserKnownHostsFile={sdir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
                               f"root@{last.address}", "python3", "/usr/lib/provision-sim/ibnetdiscover.py", "-C",
                               "mlx5_0", "-P", "1"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        plane = plane_from_ibnetdiscover(parse_tool("ibnetdiscover", done.stdout, "sim"), "sim",
                                         [n.name for n in nodes])
        leaves, spines = plane.leaves(), plane.spines()
        assert len(leaves) == 4 and len(spines) == 2
        assert [len(plane.hosts_on(leaf.guid)) for leaf in leaves] == [32] * 4
        assert {len(plane.uplinks(leaf.guid)) for leaf in leaves} == {32}
        assert sorted(h for leaf in leaves for h in plane.hosts_on(leaf.guid)) == sorted(n.name for n in nodes)
    finally:
        provision("sim", "down", "--inventory", str(tmp_path))
    assert not rack.load_nodes(tmp_path)
