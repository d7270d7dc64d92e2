"""The modes' budgets and exit statuses (``provision.health.modes``), and what the health set may hold."""
import pytest

from provision import checks
from provision.checks import sets
from provision.checks.base import LOADS, SETS, Budget
from provision.health import modes


@pytest.mark.parametrize("mode, verdict, cut, status", [
    ("periodic", "pass", False, 0), ("periodic", "fail", False, 1), ("periodic", "fail", True, 1),
    ("periodic", "error", False, 7), ("periodic", "error", True, 142), ("periodic", "pass", True, 142),
    ("prolog", "fail", False, 1), ("prolog", "error", True, 0), ("prolog", "error", False, 0),
    ("epilog", "fail", True, 1), ("epilog", "error", False, 0), ("epilog", "pass", False, 0),
])
def test_exit_status_as_nhc_and_never_a_prolog_failure_for_the_health_checks_own_error(mode, verdict, cut, status):
    assert modes.exit_status(modes.MODES[mode], verdict, cut) == status


def test_the_health_set_loads_nothing_and_its_budget_is_the_periodic_modes():
    registry = checks.registry()
    members = sets.members("health", registry)
    assert {"gpu_health", "xid", "ecc_counters", "ib_ports", "pcie_link", "stack"} <= set(members)
    assert all(registry[c].budget.loads == "" for c in members)
    assert {c for c, check in registry.items() if check.budget.loads == "gpu"} >= {
        "gpu_stress", "nccl_allreduce", "nvbandwidth", "gpudirect", "dcgm_mndiag"}
    assert next(s for s in SETS if s.name == "health").budget_s == modes.MODES["periodic"].budget_s
    assert modes.MODES["prolog"].budget_s < modes.MODES["periodic"].budget_s < 60  # slurmd kills it at 60 s
    assert sets.time_per_node("health", registry) <= modes.MODES["periodic"].budget_s


def test_a_load_is_one_of_the_known_kinds():
    with pytest.raises(ValueError, match="Budget.loads: 'network' is not one of"):
        Budget(loads="network")
    assert LOADS == ("", "gpu", "hca", "disk")
