"""A check in typed parts (issue 35 item 3): Placement, Budget and Data, each read by its own engine stage; the same
fields given flat (a site's check written before the parts) make the same declaration."""
import pytest

from provision import checks
from provision.checks.base import Budget, Check, Data, Placement, Role, Scope


def steps(profile, target):
    return []


def judge(ctx):
    return []


def probe(**fields):
    return Check(id="site_probe", tool="probe", steps=steps, judge=judge, order=95, **fields)


def test_flat_fields_go_to_their_parts():
    flat = probe(scope=Scope.PAIR, needs=("hca",), timeout_s=60, sets=("deep",), metrics={"bw_Gbps": "Gb/s"},
                 role=Role.PAIR_EVIDENCE)
    parts = probe(placement=Placement(scope=Scope.PAIR, needs=("hca",)), budget=Budget(timeout_s=60, sets=("deep",)),
                  data=Data(metrics={"bw_Gbps": "Gb/s"}, role=Role.PAIR_EVIDENCE))
    assert flat == parts
    assert (flat.scope, flat.timeout_s, flat.role) == (Scope.PAIR, 60, Role.PAIR_EVIDENCE)  # read flat too


@pytest.mark.parametrize("fields, message", [
    ({"speed": 1}, "no such field speed"),
    ({"placement": Placement(scope=Scope.PAIR, uses=("topology",))}, "uses needs scope node, not pair"),
    ({"data": Data(role=Role.PAIR_EVIDENCE)}, "role pair-evidence needs scope pair, not node"),
    ({"needs": ("gpus",)}, "unknown platform traits gpus"),
])
def test_a_declaration_that_contradicts_itself_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        probe(**fields)


def test_a_field_given_beside_its_part_changes_that_field():
    import dataclasses

    check = checks.registry()["ecc_counters"]
    shorter = dataclasses.replace(check, timeout_s=5)
    assert shorter.timeout_s == 5 and shorter.sets == check.sets and shorter.placement == check.placement
    assert probe(placement=Placement(needs=("gpu",)), scope=Scope.PAIR).placement == Placement(Scope.PAIR, ("gpu",))


def test_every_package_check_declares_its_parts():
    for check in checks.registry().values():
        assert isinstance(check.placement, Placement) and isinstance(check.budget, Budget)
        assert isinstance(check.data, Data) and check.data.metrics is check.metrics
