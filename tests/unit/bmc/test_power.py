"""power_batches: batches and stagger, every outcome from the node's boot id over SSH, never the BMC's word."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from provision.bmc import power
from provision.errors import BmcError


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    monkeypatch.setattr(power, "POLL_S", 0.01)
    monkeypatch.setattr(power.time, "sleep", lambda s: None if s > 0.05 else threading.Event().wait(s))


class Node:
    """A node and its BMC: ``obeys`` false is a BMC that accepts the action and does nothing (yet says it did)."""

    def __init__(self, name: str, up: bool = True, obeys: bool = True, answers: bool = True, hung: bool = False):
        self.host = SimpleNamespace(name=name)
        self.up, self.obeys, self.answers, self.hung = up, obeys, answers, hung
        self.boots, self.config = 1, SimpleNamespace(address=f"bmc-{name}")
        self.actions: list[str] = []

    def boot_id(self):
        return f"boot-{self.boots}" if self.up and not self.hung else None

    # the Bmc
    def status(self):
        if not self.answers:
            raise BmcError(f"{self.host.name}: BMC bmc-{self.host.name}: GET /redfish/v1/: no answer within 5 s")
        return {"power_state": "On" if self.up else "Off"}

    def power(self, action):
        self.actions.append(action)
        if not self.obeys:
            return
        if action == "off":
            self.up = False
        else:
            self.up, self.hung, self.boots = True, False, self.boots + 1

    def close(self):
        pass


def run(nodes, action, batch=2, timeout=0.2, said=None):
    by = {n.host.name: n for n in nodes}
    return power.power_batches([n.host for n in nodes], action, batch, 0, lambda h: by[h.name],
                               lambda h: by[h.name].boot_id(), timeout, ([] if said is None else said).append)


def test_cycle_done_by_a_new_boot_id():
    [out] = run([Node("a")], "cycle")
    assert (out["outcome"], out["before_boot_id"], out["after_boot_id"], out["bmc"]) == ("done", "boot-1", "boot-2",
                                                                                         "bmc-a")


def test_the_bmcs_word_alone_is_not_done():
    """bmc_power_ignored: the BMC accepts, does nothing, and says the state asked for."""
    [out] = run([Node("a", obeys=False)], "cycle")
    assert out["outcome"] == "not_carried_out" and "same boot id boot-1" in out["detail"]
    [off] = run([Node("b", obeys=False)], "off")
    assert off["outcome"] == "not_carried_out" and "still answers SSH" in off["detail"]


def test_off_done_when_ssh_stops_answering():
    [out] = run([Node("a")], "off")
    assert out["outcome"] == "done" and out["after_boot_id"] is None


def test_a_bmc_that_does_not_answer_is_never_actioned():
    node = Node("a", answers=False)
    [out] = run([node], "cycle")
    assert out["outcome"] == "failed" and node.actions == [] and "no answer within 5 s" in out["detail"]


def test_a_hung_node_is_cycled_and_said_so():
    [out] = run([Node("a", hung=True)], "cycle")
    assert out["outcome"] == "done" and out["before_boot_id"] is None
    assert "could not be read before" in out["detail"]


def test_skips():
    assert run([Node("a")], "on")[0]["outcome"] == "skipped"
    assert run([Node("a", up=False)], "off")[0]["outcome"] == "skipped"


def test_batches_never_overlap():
    nodes = [Node(n) for n in "abcde"]
    said: list[str] = []
    outcomes = run(nodes, "cycle", batch=2, said=said)
    assert [o["outcome"] for o in outcomes] == ["done"] * 5
    batches = [line for line in said if line.startswith("bmc power cycle: ") and "waiting" not in line]
    assert batches == ["bmc power cycle: a, b", "bmc power cycle: c, d", "bmc power cycle: e"]
    starts = [o["started"] for o in outcomes]
    assert starts == sorted(starts)


def test_defaults_from_budget_and_node_power():
    assert power.defaults(10200.0, 40.0) == (1, power.DEFAULT_STAGGER_S)  # a DGX H100 (10.2 kW) in a 40 kW rack
    assert power.defaults(1000.0, 40.0) == (10, power.DEFAULT_STAGGER_S)
    assert power.defaults(None, 40.0) == (power.DEFAULT_BATCH, power.DEFAULT_STAGGER_S)


def test_a_config_is_connected_and_none_is_skipped(monkeypatch):
    out = power.power_batches([SimpleNamespace(name="a")], "cycle", 1, 0, lambda h: None, lambda h: "boot-1", 0.1,
                              lambda line: None)
    assert out[0]["outcome"] == "skipped"


def test_batch_defaults_from_the_profile_and_the_plan():
    """A DGX H100 (the profile's power.node_max_W, 10.2 kW) in a 120 kW rack: a quarter of it fits 2 at a time."""
    host = SimpleNamespace(name="n1", profile="h100-sxm5-80g-ndr",
                           vars={"provision_plan": {"rack": {"budget_kW": 120, "nodes": 8}}})
    assert power.batch_defaults([host]) == (2, power.DEFAULT_STAGGER_S)
    bare = SimpleNamespace(name="n2", profile=None, vars={})
    assert power.batch_defaults([bare]) == (power.DEFAULT_BATCH, power.DEFAULT_STAGGER_S)
