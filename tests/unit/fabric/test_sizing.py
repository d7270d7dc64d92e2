"""The simulated fat-tree sized from the switch radix (provision.sim.synth.size): two leaves for small racks,
radix/2 hosts per leaf beyond, spines that take every leaf's uplinks evenly; the schedule copes with many leaves."""
import pytest

from provision import profiles
from provision.fabric import schedule
from provision.plan import sizing
from provision.sim import synth
from provision.sim import rack


@pytest.mark.parametrize("hosts,radix,leaves,spines,per_leaf,uplinks", [
    (4, 64, 2, 2, 2, 2),        # the README's rack: two leaves of two nodes
    (3, 64, 2, 2, 2, 2),
    (64, 64, 2, 2, 32, 32),     # the largest two-leaf rack of 64-port NDR switches
    (128, 64, 4, 2, 32, 32),    # 4 leaves x 32 uplinks = 128 cables on 2 spines of 64 ports
    (1024, 64, 32, 16, 32, 32),  # SuperPOD H100, 4 scalable units: 32 leaf and 16 spine switches
    (1250, 64, 40, 32, 32, 32),  # the mission: 40 leaves of 32 hosts (the last with 2), 40 cables per spine
    (2048, 64, 64, 32, 32, 32),  # radix^2/2: the most two levels reach
    (64, 40, 4, 2, 16, 20),     # 40-port HDR: 20 hosts per leaf at most, every leaf cabled as a full one
    (800, 40, 40, 20, 20, 20),
])
def test_the_fat_tree_is_sized_from_the_switch_radix(hosts, radix, leaves, spines, per_leaf, uplinks):
    shape = synth.size(hosts, radix)
    assert (shape.leaves, shape.spines, shape.per_leaf, shape.uplinks) == (leaves, spines, per_leaf, uplinks)
    assert shape.per_leaf + shape.uplinks <= radix and shape.leaves * shape.uplinks // shape.spines <= radix
    assert shape.uplinks % shape.spines == 0  # every leaf cabled alike to every spine


@pytest.mark.parametrize("hosts,radix", [(2049, 64), (801, 40)])
def test_more_hosts_than_two_levels_reach_is_refused(hosts, radix):
    with pytest.raises(ValueError, match=f"reach {radix * radix // 2} hosts; more needs a third level"):
        synth.size(hosts, radix)


def test_a_1250_node_plane_has_every_leaf_cabled_to_every_spine_within_its_ports():
    hosts = [f"gpu{i:04d}" for i in range(1250)]
    plane = synth.fat_tree(hosts, width_speed="4xNDR").planes[0]
    leaves, spines = plane.leaves(), plane.spines()
    assert len(leaves) == 40 and len(spines) == 32
    assert sorted({len(plane.hosts_on(leaf.guid)) for leaf in leaves}) == [2, 32]
    assert sum(len(plane.hosts_on(leaf.guid)) for leaf in leaves) == 1250
    for leaf in leaves:
        ups = plane.uplinks(leaf.guid)
        assert len(ups) == 32 and len({lk.b for lk in ups}) == 32  # one cable to each spine
    cables = [lk for lk in plane.links if lk.b in {s.guid for s in spines}]
    assert max(sum(lk.b == s.guid for lk in cables) for s in spines) == 40 <= 64


def test_the_quick_schedule_pairs_hosts_across_many_leaves():
    hosts = [f"gpu{i:04d}" for i in range(256)]
    fabric = synth.fat_tree(hosts, rails=2, width_speed="4xNDR")
    rounds = schedule.quick(fabric, hosts)
    plane = fabric.planes[0]
    leaf_of = {h.host: h.leaf for h in plane.hcas}
    assert len(plane.leaves()) == 8
    paired = [h for pair in rounds[0] for h in pair]
    assert sorted(paired) == hosts and all(leaf_of[a] != leaf_of[b] for a, b in rounds[0])


def test_the_rack_of_128_nodes_needs_no_scenario():
    names = [f"node{i + 1:02d}" for i in range(128)]
    world = rack.fabric_world(profiles.load("h100-sxm5-80g-ndr").data, names, {})
    assert world is not None and len(world["planes"]) == 8  # one plane per rail (HCA)
    cables = world["planes"][0]["cables"]
    switches = {s["id"] for s in world["planes"][0]["switches"]}
    leaves = {c["a"] for c in cables if c["b"] not in switches}
    assert len(leaves) == 4 and len(switches) == 6


@pytest.mark.parametrize("hosts,radix", [(128, 64), (1024, 64), (1250, 64), (2048, 64), (64, 40), (800, 40)])
def test_the_plans_sizing_cables_a_tree_as_the_simulated_rack_does(hosts, radix):
    # provision plan's tree (provision.plan.sizing.tree, issue 23: every leaf the same whole number of cables to
    # every spine) and the simulated fabric agree wherever both have a spine layer of more than two leaves
    shape = synth.size(hosts, radix)
    tree = sizing.tree(hosts, radix, radix // 2, radix // 2)
    assert (tree.zones, tree.leaves, tree.spines) == (1, shape.leaves, shape.spines)
    assert tree.per_pair == shape.uplinks // shape.spines
