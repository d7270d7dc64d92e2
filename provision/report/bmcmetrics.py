"""The out-of-band part of a run's Prometheus textfile (``provision.report.prometheus``): whether each node's BMC
answered the ``bmc`` check, and the power actions the run took through the BMCs (``burnin --recover``)."""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from provision.results.model import Outcome, Run


def families(run: Run, prefix: str) -> Iterator[Metric]:
    """``{prefix}bmc_reachable{host}`` (1: the BMC answered, its check was judged; 0: it errored) per host the
    ``bmc`` check ran for (a host with no BMC in the inventory, skipped, has none), and
    ``{prefix}power_action{host,action,outcome}`` 1 per power action of ``run.power_actions``."""
    reachable = {r.host: 0.0 if r.outcome is Outcome.ERROR else 1.0 for r in run.results
                 if r.check == "bmc" and r.outcome is not Outcome.SKIPPED}
    if reachable:
        family = GaugeMetricFamily(prefix + "bmc_reachable", "1 when the node's BMC answered the bmc check, 0 when "
                                   "it did not (Redfish or IPMI, from the controller).", labels=["host"])
        for host, value in sorted(reachable.items()):
            family.add_metric([host], value)
        yield family
    if run.power_actions:
        actions = GaugeMetricFamily(prefix + "power_action", "A power action the run took through a node's BMC "
                                    "(burnin --recover), by its outcome: done means a new boot id was read over SSH.",
                                    labels=["host", "action", "outcome"])
        for row in run.power_actions:
            actions.add_metric([str(row.get("host")), str(row.get("action")), str(row.get("outcome"))], 1.0)
        yield actions
