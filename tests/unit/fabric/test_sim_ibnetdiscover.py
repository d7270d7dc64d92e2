"""synth fat_tree -> world -> the simulated ibnetdiscover -> the parser -> plane_from_ibnetdiscover gives back
the same leaves, spines, uplinks and routes; degraded and dead cables come through as they should."""
from __future__ import annotations

import copy

import pytest

from provision.fabric.discover import plane_from_ibnetdiscover
from provision.fabric.model import Fabric, Plane
from provision.sim.synth import fat_tree, world
from provision.parsers import parse_tool

from tests.unit.fabric._sim import run_tool

HOSTS = [f"node{i:02d}" for i in range(1, 9)]


def discovered(world_dict: dict, tmp_path, host: str = "node03", *args: str) -> tuple[dict, Plane]:
    done = run_tool(world_dict, tmp_path, host, *args)
    assert done.returncode == 0, done.stderr
    parsed = parse_tool("ibnetdiscover", done.stdout, "sim")
    return parsed, plane_from_ibnetdiscover(parsed, "sim", HOSTS)


def _shape(plane: Plane) -> dict:
    return {"leaves": sorted(s.guid for s in plane.leaves()), "spines": sorted(s.guid for s in plane.spines()),
            "uplinks": {s.guid: [(lk.port_on(s.guid), *lk.far_end(s.guid), lk.width_speed)
                                 for lk in plane.uplinks(s.guid)] for s in plane.leaves()},
            "hosts": {s.guid: plane.hosts_on(s.guid) for s in plane.leaves()},
            "routes": {(a, b): [lk.id for lk in plane.route(a, b)] for a in HOSTS for b in HOSTS if a != b}}


@pytest.mark.parametrize("rail,args", [(0, ()), (0, ("-C", "mlx5_0", "-P", "1")), (1, ("--Ca", "mlx5_1"))])
def test_round_trip_gives_the_same_plane(tmp_path, rail, args) -> None:
    fabric = fat_tree(HOSTS, rails=2, leaves=2, spines=2, width_speed="4xNDR", oversubscription=2.0)
    parsed, plane = discovered(world(fabric), tmp_path, "node03", *args)
    assert parsed["complete"] and parsed["errors"] == []
    assert _shape(plane) == _shape(fabric.plane_of(rail))
    assert len(plane.links) == len(fabric.plane_of(rail).links)
    assert {h.host: (h.device, h.lid) for h in plane.hcas} == {h.host: (h.device, h.lid)
                                                               for h in fabric.plane_of(rail).hcas}


def test_a_degraded_cable_round_trips_into_degraded_links(tmp_path) -> None:
    fabric = fat_tree(HOSTS, leaves=2, spines=2, width_speed="4xHDR")
    w = world(fabric)
    uplink = next(c for c in w["planes"][0]["cables"] if c["b"] in {s["id"] for s in w["planes"][0]["switches"]})
    uplink.update(width="1x", a_width_speed="1xHDR", b_width_speed="4xHDR")
    host_cable = next(c for c in w["planes"][0]["cables"] if c["b"].startswith("H-"))
    host_cable.update(speed="EDR")
    _parsed, plane = discovered(w, tmp_path)
    bad = Fabric([plane]).to_dict("4xHDR")["degraded_links"]
    got = {(d["a"], d["a_port"], d["b"], d["b_port"]): (d["width_speed"], d["mismatch"]) for d in bad}
    assert got == {(uplink["a"], uplink["a_port"], uplink["b"], uplink["b_port"]): ("1xHDR", True),
                   (host_cable["a"], host_cable["a_port"], host_cable["b"], host_cable["b_port"]): ("4xEDR", False)}


def test_a_down_cable_is_not_printed(tmp_path) -> None:
    fabric = fat_tree(HOSTS, leaves=2, spines=2)
    w = world(fabric)
    dead = copy.deepcopy(w)
    cable = next(c for c in dead["planes"][0]["cables"] if c["b"].startswith("S-"))
    cable["state"] = "down"
    parsed, plane = discovered(dead, tmp_path)
    assert len(plane.links) == len(fabric.planes[0].links) - 1
    assert parsed["complete"]
    assert not any({(lk["a"], lk["a_port"]), (lk["b"], lk["b_port"])} ==
                   {(cable["a"], cable["a_port"]), (cable["b"], cable["b_port"])} for lk in parsed["links"])


def test_the_host_s_own_dead_cable_prints_its_ca_alone(tmp_path) -> None:
    w = world(fat_tree(HOSTS, leaves=2, spines=2))
    mine = next(c for c in w["planes"][0]["cas"] if c["host"] == "node03")
    next(c for c in w["planes"][0]["cables"] if c["b"] == mine["id"])["state"] = "down"
    done = run_tool(w, tmp_path, "node03")
    parsed = parse_tool("ibnetdiscover", done.stdout, "sim")
    assert parsed["links"] == [] and parsed["complete"] and [c["guid"] for c in parsed["cas"]] == [mine["id"]]


def test_a_self_loop_prints_twice_and_parses_once(tmp_path) -> None:
    w = world(fat_tree(HOSTS, leaves=2, spines=2))
    spine = w["planes"][0]["switches"][-1]["id"]
    w["planes"][0]["cables"].append({"a": spine, "a_port": 30, "b": spine, "b_port": 31, "width": "4x",
                                     "speed": "NDR", "width_speed": "4xNDR", "mismatch": False})
    done = run_tool(w, tmp_path, "node03")
    assert done.stdout.count(f'"{spine}"[31]') == 1 and done.stdout.count(f'"{spine}"[30]') == 1
    parsed = parse_tool("ibnetdiscover", done.stdout, "sim")
    assert sum(lk["self_loop"] for lk in parsed["links"]) == 1


def test_an_unknown_ca_fails_as_the_real_tool_does(tmp_path) -> None:
    done = run_tool(world(fat_tree(HOSTS)), tmp_path, "node03", "-C", "mlx5_7")
    assert done.returncode == 255 and "iberror: failed: discover failed" in done.stdout
    done = run_tool(world(fat_tree(HOSTS)), tmp_path, "elsewhere")
    assert done.returncode == 255
