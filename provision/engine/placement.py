"""The placement stage of a job: whether its check can run on its hosts at all, decided from the check's placement
(``Check.placement``: scope, the platform traits it needs, a run per NVLink domain) and the hosts' targets
(``provision.targets``), before anything is run or connected.

- a pair check given one host: SKIPPED ("a pair check needs two hosts");
- a platform that lacks a trait the check needs: SKIPPED, naming the trait and what the profile says instead
  (``provision.engine.verdict.not_applicable``): not a pass and not a failure;
- a check run per NVLink domain on a host the inventory puts in no domain: ERROR, never guessed (a test over the
  wrong trays would pass or fail the wrong domain);
- a check run per NVLink domain with one tray of its domain in the run: UNTESTED (a coverage gap, not a fault).
"""
from __future__ import annotations

from collections.abc import Sequence

from provision.checks import Check
from provision.engine.verdict import not_applicable
from provision.inventory import NVLINK_DOMAIN_VAR
from provision.results.model import CheckResult, Outcome, Scope
from provision.targets import Target


def refusal(check: Check, hosts: tuple[str, ...], targets: Sequence[Target]) -> CheckResult | None:
    """The result of a job of ``check`` over ``hosts`` (their ``targets``, in order) that cannot run there (module
    docstring); None when it can."""
    scope = check.placement.scope
    if scope is Scope.PAIR and len(targets) != 2:
        return CheckResult(check.id, hosts, Outcome.SKIPPED, "a pair check needs two hosts", scope=scope)
    skipped = next((r for t in targets if (r := not_applicable(check, hosts, scope, t.profile))), None)
    if skipped is not None:
        return skipped
    if not check.placement.per_nvlink_domain:
        return None
    undomained = [t.name for t in targets if t.nvlink_domain is None]
    if undomained:
        return CheckResult(check.id, hosts, Outcome.ERROR, f"{', '.join(undomained)}: no NVLink domain in the "
                           f"inventory (set {NVLINK_DOMAIN_VAR} to the rack's domain name; the trays whose GPUs share "
                           "a fabric clusterUuid in nvidia-smi -q are one domain)", scope=scope, run_error=True)
    if len(targets) < 2:
        return CheckResult(check.id, hosts, Outcome.UNTESTED, f"untested: NVLink domain {targets[0].nvlink_domain} "
                           "has one tray in this run (or shard); a multi-node NVLink test needs two", scope=scope)
    return None


def gathered_refusal(check: Check, hosts: tuple[str, ...], targets: Sequence[Target]) -> CheckResult | None:
    """``refusal`` for a check that gathers another's outputs (``Check.gathers``): it runs nothing on the hosts, so it
    is judged on whatever trays gave outputs, one included; a host of no NVLink domain is still an error."""
    scope = check.placement.scope
    skipped = not_applicable(check, hosts, scope, targets[0].profile)
    if skipped is not None:
        return skipped
    undomained = [t.name for t in targets if check.placement.per_nvlink_domain and t.nvlink_domain is None]
    if undomained:  # never guessed: the trays compared must be one domain's
        return CheckResult(check.id, hosts, Outcome.ERROR, f"{', '.join(undomained)}: no NVLink domain in the "
                           f"inventory (set {NVLINK_DOMAIN_VAR} to the rack's domain name)", scope=scope,
                           run_error=True)
    return None
