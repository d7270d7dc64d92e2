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
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    with pytest.raises(ProvisionError) as info:
        scenario.load(path)
    said = str(info.value)
    assert "\n" not in said
    assert said.startswith(f"{path}: ") and message in said, said


def test_a_well_typed_scenario_loads(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text("nodes: 4\nprofile: h100-sxm5-80g-ndr\nos: [ubuntu2204, rocky9]\n" + GOOD_FAULT)
    assert scenario.load(path)["faults"]["node02"][0]["value"] == 200
