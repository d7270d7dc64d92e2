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
