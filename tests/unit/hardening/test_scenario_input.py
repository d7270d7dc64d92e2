"""Scenario files (provision/sim/scenario.py) are type-checked before a rack starts: each
mistake is one line naming the file and the field."""
from __future__ import annotations

import pytest

from provision.errors import ProvisionError
from provision.sim import scenario

GOOD_FAULT = "faults:\n  node02:\n    - {kind: ib_rate, device: mlx5_3, value: 200}\n"


@pytest.mark.parametrize("text,message", [
    ("nodes: 2\nnoeds: 4\n", "noeds: unknown field (known: nodes, profile, os, fabric, faults)"),
    ("nodes: true\n", "field 'nodes' must be a positive integer, got True"),
    ("nodes: 2.5\n", "field 'nodes' must be a positive integer, got 2.5"),
    ("nodes: -1\n", "field 'nodes' must be a positive integer, got -1"),
    ("nodes: 2\nprofile: 123\n", "field 'profile' must be a profile name, got 123"),
    ("nodes: 2\nprofile: h999\n", "field 'profile': "),
    ("nodes: 2\nos: [1, 2]\n", "field 'os' must be an OS name or a list of them"),
    ("nodes: 2\nos: {a: b}\n", "field 'os' must be an OS name or a list of them"),
    ("nodes: 2\nfaults: [node01]\n", "field 'faults' must map node names to lists of faults"),
    ("nodes: 2\nfaults:\n  node01: xid79\n", "faults.node01: must be a list of faults"),
    ("nodes: 2\nfaults:\n  node01: [{kind: 5}]\n", "faults.node01[0].kind: unknown fault 5"),
    ("nodes: 2\nfaults:\n  node01: [{kind: ib_rate, value: .nan}]\n",
     "faults.node01[0].value: must be a number or a string, got nan"),
    ("nodes: 2\nfaults:\n  node01: [{kind: ib_rate, value: .inf}]\n",
     "faults.node01[0].value: must be a number or a string, got inf"),
    ("nodes: 2\nfaults:\n  node01: [{kind: ib_rate, value: true}]\n",
     "faults.node01[0].value: must be a number or a string, got True"),
    ("nodes: 2\nfaults:\n  node01: [{kind: xid79, device: [1, 2]}]\n",
     "faults.node01[0].device: must be a number or a string, got [1, 2]"),
    ("nodes: 2\nfaults:\n  node01: [{kind: xid79, device: {a: 1}}]\n",
     "faults.node01[0].device: must be a number or a string, got {'a': 1}"),
])
def test_a_mistyped_scenario_field_is_one_line_naming_file_and_field(tmp_path, text, message):
    assert_refused(tmp_path, text, message)


def test_a_well_typed_scenario_loads(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text("nodes: 4\nprofile: h100-sxm5-80g-ndr\nos: [ubuntu2204, rocky9]\n" + GOOD_FAULT)
    assert scenario.load(path)["faults"]["node02"][0]["value"] == 200


@pytest.mark.parametrize("text,message", [
    ("nodes: 4\nfabric: [1, 2]\n", "fabric: must be a mapping of leaves, spines, oversubscription"),
    ("nodes: 4\nfabric: {leaves: 0}\n", "fabric.leaves: must be a positive integer, got 0"),
    ("nodes: 4\nfabric: {leaves: '2'}\n", "fabric.leaves: must be a positive integer, got '2'"),
    ("nodes: 4\nfabric: {leaves: true}\n", "fabric.leaves: must be a positive integer, got True"),
    ("nodes: 4\nfabric: {spines: 1.5}\n", "fabric.spines: must be a positive integer, got 1.5"),
    ("nodes: 4\nfabric: {spines: 0}\n", "fabric.spines: must be a positive integer, got 0"),
    ("nodes: 4\nfabric: {racks: 2}\n", "fabric.racks: unknown field (known: leaves, spines, oversubscription)"),
    ("nodes: 4\nfabric: {oversubscription: -1}\n", "fabric.oversubscription: must be a positive finite number"),
    ("nodes: 4\nfabric: {oversubscription: .inf}\n", "fabric.oversubscription: must be a positive finite number"),
    ("nodes: 4\nfabric: {oversubscription: 5.0e-324}\n", "uplinks per leaf exceed a 64-port NDR switch"),
    ("nodes: 4\nfabric: {leaves: 8}\n", "fabric.leaves: 8 leaves for 4 nodes"),
    ("nodes: 4\nfabric: {spines: 100000000000000000000}\n", "fabric.spines: 100000000000000000000 spines but"),
    ("nodes: 4\nfabric: {leaves: 1, spines: 2}\n", "fabric.spines: a fabric of one leaf has no spines"),
    ("nodes: 200\nfabric: {leaves: 2}\n", "fabric: 100 nodes and over 64 uplinks per leaf exceed a 64-port NDR"),
    ("nodes: 3000\n", "fabric: 3000 nodes need more than two levels of 64-port NDR switches (they reach 2048"),
    ("nodes: 256\nfabric: {leaves: 8, spines: 1}\n", "fabric.spines: 256 leaf cables on a spine exceed"),
    ("nodes: 4\nfaults:\n  node01: [{kind: port_dead}]\n", "faults.node01[0].device: port_dead needs a device"),
    ("nodes: 4\nfaults:\n  node01: [{kind: port_dead, device: 'mlx5_0:up99'}]\n",
     "faults.node01[0].device: --device 'mlx5_0:up99': 'up99' is not an uplink"),
    ("nodes: 4\nfaults:\n  node01: [{kind: port_flapping, device: 'mlx5_0:up\u00b2'}]\n", "is not an uplink"),
    ("nodes: 4\nfaults:\n  node01: [{kind: port_flapping, device: 'mlx5_9'}]\n", "node01 has no HCA 'mlx5_9'"),
    ("nodes: 4\nfaults:\n  node01: [{kind: cable_degraded, device: 'mlx5_0:', value: 1x}]\n",
     "faults.node01[0].device: --device 'mlx5_0:': name an HCA's cable"),
    ("nodes: 4\nfaults:\n  node01: [{kind: cable_degraded, device: mlx5_0, value: 3x}]\n",
     "faults.node01[0].value: --value '3x': not an InfiniBand width"),
    ("nodes: 4\nfaults:\n  node01: [{kind: slow_node, value: -1}]\n", "faults.node01[0].value: a slow node's factor"),
    ("nodes: 4\nfaults:\n  node01: [{kind: slow_node, value: fast}]\n", "faults.node01[0].value: a slow node's factor"),
])
def test_a_bad_fabric_or_fabric_fault_is_one_line_naming_file_and_field(tmp_path, text, message):
    assert_refused(tmp_path, text, message)


def test_a_scenario_with_a_fabric_shape_and_fabric_faults_loads(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text("nodes: 8\nfabric: {leaves: 2, spines: 2, oversubscription: 2}\nfaults:\n"
                    "  node03:\n    - {kind: cable_degraded, device: 'mlx5_5:up1', value: HDR}\n"
                    "    - {kind: port_flapping, device: mlx5_2}\n  node06:\n    - {kind: slow_node, value: '0.5'}\n")
    assert scenario.load(path)["fabric"]["oversubscription"] == 2


def assert_refused(tmp_path, text, message):
    """``text`` as a scenario file is refused in one line naming the file and containing ``message``."""
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    with pytest.raises(ProvisionError) as info:
        scenario.load(path)
    said = str(info.value)
    assert "\n" not in said
    assert said.startswith(f"{path}: ") and message in said, said
