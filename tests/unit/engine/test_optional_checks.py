"""An optional check (``Check.optional``: dcgm_mndiag, an hour of stress over an NVLink domain) runs only where it is
named (``--checks`` or a set that has it), never in a burn-in of every check."""
from __future__ import annotations

from provision.checks import registry
from provision.engine import burnin


class _Engine:
    """Stands in for the engine: records the checks a burn-in would plan."""

    planned: list[str] = []

    def __init__(self, *args, **kwargs) -> None:
        self.cluster, self.power_actions = None, []

    def run(self, checks, *args):
        _Engine.planned = [c.id for c in checks]
        return []


def _planned(monkeypatch, only):
    monkeypatch.setattr(burnin, "Burnin", _Engine)
    burnin.run([], burnin.BurninRequest(only), None, burnin.Sink(None, {}))
    return _Engine.planned


def test_a_burnin_of_every_check_leaves_the_optional_ones_out(monkeypatch):
    optional = [c for c, check in registry().items() if check.optional]
    assert optional == ["dcgm_mndiag"]
    planned = _planned(monkeypatch, None)
    assert "dcgm_mndiag" not in planned and "gpu_health" in planned and "nccl_cluster" in planned


def test_an_optional_check_runs_where_it_is_named(monkeypatch):
    assert _planned(monkeypatch, ["dcgm_mndiag"]) == ["dcgm_mndiag"]


def test_dcgm_mndiag_runs_once_per_nvlink_domain_over_its_trays():
    from provision.engine.jobs import plan

    profiles_of = {f"t{i}": "gb200-nvl72" for i in range(1, 5)}
    domains = {"t1": "rack-a", "t2": "rack-b", "t3": "rack-a", "t4": "rack-b"}
    jobs = plan([registry()["dcgm_mndiag"]], profiles_of, domains)
    assert [j.hosts for j in jobs] == [("t1", "t3"), ("t2", "t4")]
