"""The fabric model and the fat-tree builder: roles from cabling, routes, degraded cables, schedules."""
import math

import pytest

from provision.fabric import schedule
from provision.sim import synth
from provision.fabric.model import Link, split_width_speed, width_speed_for

HOSTS = [f"node{i:02d}" for i in range(1, 9)]


def test_width_speed_names_and_rates():
    assert split_width_speed("4xHDR") == ("4x", "HDR")
    assert Link("S-a", 1, "S-b", 2, "1x", "NDR").rate_Gbps == 100.0
    assert width_speed_for(400) == "4xNDR" and width_speed_for(200) == "4xHDR"
    with pytest.raises(ValueError):
        split_width_speed("4xFOO")


def test_a_fat_tree_has_leaves_with_hosts_and_spines_with_leaves_only():
    fabric = synth.fat_tree(HOSTS, rails=8, leaves=2, spines=2)
    assert len(fabric.planes) == 8
    plane = fabric.planes[0]
    leaves, spines = plane.leaves(), plane.spines()
    assert len(leaves) == 2 and len(spines) == 2
    assert [len(plane.hosts_on(leaf.guid)) for leaf in leaves] == [4, 4]
    assert all(len(plane.uplinks(leaf.guid)) == 4 and plane.oversubscription(leaf.guid) == 1.0 for leaf in leaves)
    assert all(len(plane.downlinks(s.guid)) == 4 for s in spines)  # two cables from each leaf
    assert {s.description for s in plane.switches.values()} == {"Quantum-2 Mellanox Technologies"}


def test_routes_stay_in_the_leaf_or_cross_one_spine_and_spread_over_uplinks():
    plane = synth.fat_tree(HOSTS, rails=1).planes[0]
    assert len(plane.route("node01", "node02")) == 2
    ups = set()
    for dst in HOSTS[4:]:
        route = plane.route("node01", dst)
        assert len(route) == 4
        up, down = route[1], route[2]
        spine = up.far_end(plane.hca_of("node01").leaf)[0]
        assert plane.switches[spine].role == "spine" and down.touches(spine)
        ups.add(up.id)
    assert len(ups) == 4  # D-mod-k: the four destinations of the other leaf use four uplinks


def test_degraded_cables_are_found_against_the_expected_width_and_speed():
    fabric = synth.fat_tree(HOSTS, rails=1)
    plane = fabric.planes[0]
    leaf = plane.leaves()[0].guid
    bad = plane.uplinks(leaf)[1]
    index = plane.links.index(bad)
    plane.links[index] = Link(bad.a, bad.a_port, bad.b, bad.b_port, "1x", "NDR")
    assert [lk.id for lk in plane.degraded("4xNDR")] == [bad.id]
    assert fabric.to_dict("4xNDR")["degraded_links"][0]["width_speed"] == "1xNDR"
    assert plane.degraded("4xHDR") == [plane.links[index]]  # 1xNDR (100) is below 4xHDR (200) too


def test_too_many_hosts_for_the_switch_radix_is_refused():
    with pytest.raises(ValueError, match="exceed a 40-port HDR switch"):
        synth.fat_tree([f"n{i}" for i in range(50)], leaves=2, width_speed="4xHDR")


def test_quick_schedule_pairs_every_host_across_leaves_in_one_round():
    fabric = synth.fat_tree(HOSTS, rails=8)
    [round_] = schedule.quick(fabric, HOSTS)
    plane = fabric.planes[0]
    assert sorted(h for pair in round_ for h in pair) == HOSTS
    assert all(plane.hca_of(a).leaf != plane.hca_of(b).leaf for a, b in round_)


@pytest.mark.parametrize("nodes,leaves", [(8, 2), (16, 2), (12, 3)])
def test_full_schedule_meets_own_leaf_partners_and_covers_every_leaf_spine_cable(nodes, leaves):
    hosts = [f"node{i:02d}" for i in range(1, nodes + 1)]
    fabric = synth.fat_tree(hosts, rails=2, leaves=leaves)
    rounds = schedule.full(fabric, hosts)
    for round_ in rounds:
        flat = [h for pair in round_ for h in pair]
        assert len(flat) == len(set(flat))  # disjoint pairs in a round
    plane = fabric.planes[0]
    assert all(plane.hca_of(a).leaf == plane.hca_of(b).leaf for a, b in rounds[0])
    covered = {lk.id for round_ in rounds for server, client in round_ for p in fabric.planes
               for lk in p.route(client, server)[1:-1]}
    every = {lk.id for p in fabric.planes for leaf in p.leaves() for lk in p.uplinks(leaf.guid)}
    assert covered == every
    assert len(rounds) <= 1 + math.ceil(len(plane.uplinks(plane.leaves()[0].guid)) / (nodes // leaves)) + 1
