"""The self-drain's rules on Slurm's node states (``provision.health.selfdrain.decide``): pure."""
from provision.health import selfdrain
from provision.slurm.scontrol import NodeState


def test_a_reason_whose_list_of_checks_was_cut_is_never_resumed():
    cut = ("provision-health: gpu_health,xid,ecc_counters,pcie_replays,stack,gpu_settings,host_settings,ib_ports,"
           "gpu_str...")
    assert selfdrain.named_checks(cut) == ()
    action, note = selfdrain.decide("node01", "pass", NodeState("node01", "IDLE+DRAIN", cut),
                                    frozenset({"gpu_health", "xid", "ib_ports"}))
    assert action == selfdrain.NOTHING and "its reason names no check" in note
    whole = "provision-health: xid,ib_ports PCI 0000:4c:00: xid = 79"
    assert selfdrain.named_checks(whole) == ("xid", "ib_ports")
    assert selfdrain.decide("node01", "pass", NodeState("node01", "IDLE+DRAIN", whole),
                            frozenset({"xid", "ib_ports"}))[0] == selfdrain.RESUME
    assert selfdrain.decide("node01", "pass", NodeState("node01", "IDLE+DRAIN", whole), frozenset({"xid"}))[0] \
        == selfdrain.NOTHING


def test_a_node_drained_for_other_checks_gets_this_calls_reason_and_the_same_checks_keep_the_first():
    xid = "provision-health: xid GPU 00000000:1B:00.0 Xid 79 (fell off the bus)"
    held = NodeState("node01", "IDLE+DRAIN", xid, "2026-12-05T04:00:00")
    assert selfdrain.decide("node01", "fail", held, wanted="provision-health: xid GPU 00000000:2A:00.0 Xid 79") \
        == (selfdrain.NOTHING, f"node01: already drained by this health check: {xid}")
    ib = "provision-health: ib_ports mlx5_0 port 1 Down"
    assert selfdrain.decide("node01", "fail", held, wanted=ib) == (selfdrain.REASON, "")
    # someone else's drain keeps its reason, whatever fails now
    operator = NodeState("node01", "IDLE+DRAIN", "PSU swap (alice)")
    assert selfdrain.decide("node01", "fail", operator, wanted=ib)[0] == selfdrain.NOTHING
