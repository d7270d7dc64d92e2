"""The pcie_replays fault kind: it raises one GPU's replay counter in the hardware model, the simulated nvidia-smi
prints it in both layouts, and the pcie_replays check fails that GPU and only it."""
from __future__ import annotations

import nvidia_smi
import pytest

from provision import profiles
from provision.checks import registry
from provision.errors import ProvisionError
from provision.parsers import parse_tool
from provision.sim import faults

from tests.unit.checks import judge

CHECK = registry()["pcie_replays"]


def test_the_fault_raises_one_gpus_counter_and_the_check_names_it(sim):
    label = faults.KINDS["pcie_replays"].apply(sim.model, "3", None)
    sim.write()
    assert label == f"GPU3 {sim.model['gpus'][3]['bus_id']}"
    _, xml, _ = sim.run(nvidia_smi, ["-q", "-x"])
    _, text, _ = sim.run(nvidia_smi, ["-q"])
    for tool, out in (("nvidia-smi-qx", xml), ("nvidia-smi-q", text)):
        counts = [g["pcie_replays"] for g in parse_tool(tool, out)["gpus"]]
        assert counts == [0, 0, 0, faults.REPLAYS, 0, 0, 0, 0], tool
    result = judge("node07", CHECK, profiles.load("h100-sxm5-80g-ndr"),
                   {"smi": xml, "uptime": "/proc/uptime:31536000.00 0.00\n"})  # up a year
    failing = [f for f in result.findings if not f.ok]
    assert [(f.device, f.fault) for f in failing] == [(label, "PCIE_REPLAYS_HIGH")]


def test_the_models_rollovers_are_printed(sim):
    sim.model["gpus"][5]["pcie"]["replay_rollovers"] = 2
    sim.write()
    _, xml, _ = sim.run(nvidia_smi, ["-q", "-x"])
    assert [g["pcie_replay_rollovers"] for g in parse_tool("nvidia-smi-qx", xml)["gpus"]] == [0] * 5 + [2, 0, 0]


@pytest.mark.parametrize("value", ["-1", "many", str(1 << 32)])
def test_a_count_nvml_cannot_hold_is_refused(sim, value):
    with pytest.raises(ProvisionError, match="a replay count, 0 to 4294967295"):
        faults.KINDS["pcie_replays"].apply(sim.model, "0", value)
