"""plane_from_ibnetdiscover on real dumps: roles from cabling (unmanaged switches alike), SHARP aggregation
nodes left out, hosts and devices from CA descriptions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.fabric.discover import fabric_from_dumps, host_and_device, plane_from_ibnetdiscover
from provision.sim.synth import fat_tree, world
from provision.parsers import parse_tool

from tests.unit.fabric._sim import run_tool

DATA = Path(__file__).resolve().parents[2] / "data"
NDR = DATA / "ibnetdiscover" / "topograph_ndr_quantum2_40sw_582ca.txt"
EXPECTED = json.loads((DATA / "ibnetdiscover" / "expected.json").read_text())
UFM = DATA / "samples" / "ibnetdiscover_nvidia_kb_ufm_lab_mixed_speeds_selfloops_smp_error.txt"


def test_real_ndr_fabric_leaves_and_spines_with_aggregation_nodes_left_out() -> None:
    plane = fabric_from_dumps([(NDR.name, NDR.read_text())]).planes[0]
    want = EXPECTED[NDR.stem]
    assert len(plane.leaves()) == want["leaves"] and len(plane.spines()) == want["spines"]
    assert all("IBSPINE" in s.description for s in plane.spines())
    assert all("IBLEAF" in s.description for s in plane.leaves())
    assert not any("Aggregation Node" in h.description for h in plane.hcas)
    assert sum(h.host is None for h in plane.hcas) == want["unnamed_cas"]
    assert len(plane.links) == want["cables"] - want["aggregation_nodes"]


def test_unmanaged_fabric_roles_come_from_cabling_not_descriptions(tmp_path) -> None:
    hosts = [f"gpu{i}" for i in range(12)]
    fabric = fat_tree(hosts, leaves=3, spines=2, width_speed="4xHDR")
    assert len({s.description for s in fabric.planes[0].switches.values()}) == 1  # all "Quantum Mellanox ..."
    done = run_tool(world(fabric), tmp_path, "gpu0")
    plane = plane_from_ibnetdiscover(parse_tool("ibnetdiscover", done.stdout), "p", hosts)
    assert sorted(s.guid for s in plane.leaves()) == sorted(s.guid for s in fabric.planes[0].leaves())
    assert sorted(s.guid for s in plane.spines()) == sorted(s.guid for s in fabric.planes[0].spines())
    assert len(plane.spines()) == 2 and len(plane.leaves()) == 3


def test_hosts_filter_and_devices() -> None:
    parsed = parse_tool("ibnetdiscover", UFM.read_text())
    plane = plane_from_ibnetdiscover(parsed, "ufm", ["node03", "node05"])
    assert sorted((h.host, h.device) for h in plane.hcas if h.host) == [("node03", "HCA-1"), ("node03", "HCA-2"),
                                                                        ("node05", "HCA-1")]
    every = plane_from_ibnetdiscover(parsed, "ufm", None)
    assert sorted(h.host for h in every.hcas) == ["node01", "node02", "node03", "node03", "node04", "node05"]
    node05 = every.hca_of("node05")
    assert node05 is not None and node05.lid == 1 and node05.leaf == "S-f4521403005764b0" and node05.leaf_port == 8
    assert sum(lk.self_loop for lk in every.links) == 3


@pytest.mark.parametrize("description,hosts,want", [
    ("node07 mlx5_3", None, ("node07", "mlx5_3")),
    ("node07 mlx5_3", ["node07"], ("node07", "mlx5_3")),
    ("node07 mlx5_3", ["node08"], (None, None)),
    ("MT4129 ConnectX7   Mellanox Technologies", None, (None, None)),
    ("MT23108 InfiniHost Mellanox Technologies", None, (None, None)),
    ("lonely", None, ("lonely", None)),
])
def test_host_and_device(description, hosts, want) -> None:
    assert host_and_device(description, hosts) == want


def test_a_cable_no_end_could_name_is_an_error_naming_it() -> None:
    text = UFM.read_text().replace('lid 174 4xSDR', 'lid 174 ?????').replace('lid 1 4xSDR', 'lid 1 ?????')
    with pytest.raises(ParseError, match=r"^x\.txt: plane x\.txt: cable S-f4521403005764b0/8<->H-e41d2d03005cf1f8/1 "):
        fabric_from_dumps([("x.txt", text)])


def test_a_dump_without_cables_is_an_error() -> None:
    lone = DATA / "ibnetdiscover" / "topograph_gb200_lone_ca_no_links.txt"
    with pytest.raises(ParseError, match="found no cable"):
        fabric_from_dumps([(lone.name, lone.read_text())])
