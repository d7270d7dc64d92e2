"""The self-drain's rules on Slurm's node states (``provision.health.selfdrain.decide``): pure."""
import pytest

from provision.health import selfdrain
from provision.health.selfdrain import Judged
from provision.slurm.scontrol import NodeState, SlurmError


def test_a_reason_whose_list_of_checks_was_cut_is_never_resumed():
    cut = ("provision-health: gpu_health,xid,ecc_counters,pcie_replays,stack,gpu_settings,host_settings,ib_ports,"
           "gpu_str...")
    assert selfdrain.named_checks(cut) == ()
    action, note = selfdrain.decide("node01", NodeState("node01", "IDLE+DRAIN", cut),
                                    Judged("pass", passed=frozenset({"gpu_health", "xid", "ib_ports"})))
    assert action == selfdrain.NOTHING and "its reason names no check" in note
    whole = "provision-health: xid,ib_ports PCI 0000:4c:00: xid = 79"
    assert selfdrain.named_checks(whole) == ("xid", "ib_ports")
    assert selfdrain.decide("node01", NodeState("node01", "IDLE+DRAIN", whole),
                            Judged("pass", passed=frozenset({"xid", "ib_ports"})))[0] == selfdrain.RESUME
    assert selfdrain.decide("node01", NodeState("node01", "IDLE+DRAIN", whole),
                            Judged("pass", passed=frozenset({"xid"})))[0] == selfdrain.NOTHING


def test_a_node_drained_again_keeps_its_reason_while_its_finding_is_seen_else_gets_this_calls():
    xid = "provision-health: xid GPU 00000000:1B:00.0 Xid 79 (fell off the bus)"
    other = "provision-health: xid GPU 00000000:2A:00.0 Xid 79 (fell off the bus)"
    held = NodeState("node01", "IDLE+DRAIN", xid, "2026-12-05T04:00:00")
    # the named finding still seen (beside another one): kept, with its stamp
    assert selfdrain.decide("node01", held, Judged("fail", other, present=frozenset({other, xid}))) \
        == (selfdrain.NOTHING, f"node01: already drained by this health check: {xid}")
    # the same fault with another figure (an ECC count grew), or worded anew: the same fault, kept
    ecc = NodeState("node01", "IDLE+DRAIN", "provision-health: ecc_counters GPU2 00000000:2A:00.0: "
                    "volatile_dbe = 5, expected 0")
    grew = "provision-health: ecc_counters,gpu_health GPU2 00000000:2A:00.0: volatile_dbe = 6, expected 0"
    assert selfdrain.decide("node01", ecc, Judged("fail", grew, present=frozenset({grew})))[0] == selfdrain.NOTHING
    # the named fault gone, the same check failing on another GPU: the reason follows the fault
    assert selfdrain.decide("node01", held, Judged("fail", other, present=frozenset({other})))[0] == selfdrain.REASON
    ib = "provision-health: ib_ports mlx5_0 port 1 Down"
    assert selfdrain.decide("node01", held, Judged("fail", ib, frozenset({"xid"}), frozenset({ib})))[0] \
        == selfdrain.REASON
    # a check the old reason names that did not run (an epilog's gpu_stress): kept, so no call resumes before it passed
    stress = NodeState("node01", "IDLE+DRAIN", "provision-health: gpu_stress GPU3 gflops = 41000")
    action, note = selfdrain.decide("node01", stress, Judged("fail", ib, frozenset({"xid"}), frozenset({ib})))
    assert action == selfdrain.NOTHING and "gpu_stress neither passed nor failed in this call" in note
    # someone else's drain keeps its reason, whatever fails now
    operator = NodeState("node01", "IDLE+DRAIN", "PSU swap (alice)")
    assert selfdrain.decide("node01", operator, Judged("fail", ib, present=frozenset({ib})))[0] == selfdrain.NOTHING


@pytest.mark.parametrize("state", ["IDLE+DRAIN+REBOOT_REQUESTED", "MIXED+DRAIN+REBOOT_REQUESTED", "REBOOT_ISSUED",
                                   "IDLE+POWERING_DOWN", "IDLE+POWERED_DOWN", "IDLE+POWERING_UP"])
def test_a_node_slurm_reboots_or_powers_is_left_alone(state):
    ours = NodeState("node01", state, "provision-health: xid GPU 00000000:1B:00.0 Xid 79")
    for call in (Judged("pass", passed=frozenset({"xid"})), Judged("fail", "provision-health: ib_ports x")):
        action, note = selfdrain.decide("node01", ours, call)
        assert action == selfdrain.NOTHING and "Slurm is rebooting or powering it" in note


class Flaky:
    """A Slurm whose third answer fails: read the node, read every node, drain; then the breaker's recount fails."""

    def __init__(self):
        self.calls, self.state = 0, NodeState("node01", "IDLE")

    def show(self, node=None):
        self.calls += 1
        if self.calls == 3:
            raise SlurmError("scontrol show node: Unable to contact slurm controller (connect failure)")
        return {"node01": self.state, "node02": NodeState("node02", "IDLE")}

    def drain(self, node, reason):
        self.state = NodeState(node, "IDLE+DRAIN", reason)

    def resume(self, node):
        raise AssertionError("never resumed")


def test_a_drain_done_is_said_done_when_the_breakers_recount_fails():
    slurm = Flaky()
    done = selfdrain.apply(slurm, "node01", Judged("fail", "provision-health: xid GPU 1B Xid 79"))
    assert done.action == selfdrain.DRAIN and slurm.state.words == {"IDLE", "DRAIN"}
    assert done.lines[0] == "node01: drained: provision-health: xid GPU 1B Xid 79"
    assert done.lines[1].startswith("warning: the breaker's count after draining node01 was not finished: ")
