"""The named check sets (``burnin --check-set NAME``), as the checks and ``provision.checks.base.SETS`` declare
them: which checks a set runs, what it gives them over the profile (``Check.set_params``: test parameters and
timeouts, laid into a host's ``provision_reference_overrides`` and ``provision_check_timeouts`` so that the
run's report keeps them and a re-evaluation judges the same way), and how long it keeps a node.

Time per node (``time_per_node``): the node checks of the set that apply to the profile run one after another
on every node at once, so a node is held for the sum over them of the check's ``expected_s`` (a check whose
tools run for a set time: gpu_stress's gpu-burn duration and DCGM level 3) or, for the others, each step at its
timeout (the engine kills a step there): an upper figure, most checks end in seconds; a set with a budget
(``CheckSet.budget_s``: ``health``) at most that. The pair and group rounds
of the cluster procedure come after and depend on the fabric (``bench/localize.py`` counts its rounds).
README's sets table is ``markdown_table()``, on ``REFERENCE_PROFILE``.
"""
from __future__ import annotations

import types

import copy

from provision import profiles
from provision.checks.base import SETS, Check, CheckSet, Scope

REFERENCE_PROFILE = "h100-sxm5-80g-ndr"  # the embedded simulated rack's nodes: 8 GPUs, 8 HCAs
OVERRIDES, TIMEOUTS = "provision_reference_overrides", "provision_check_timeouts"


def declared(registry: dict[str, Check]) -> dict[str, CheckSet]:
    """Set name -> CheckSet: ``SETS``, then every other tag a check carries (a site's own set of that name)."""
    found = {s.name: s for s in SETS}
    for check in registry.values():
        for tag in check.sets:
            found.setdefault(tag, CheckSet(tag, f"the checks tagged {tag}"))
    return found


def members(name: str, registry: dict[str, Check]) -> list[str]:
    """The ids of the checks set ``name`` runs, in run order (none for an unknown name)."""
    chosen = declared(registry).get(name)
    return [c for c, check in registry.items() if chosen and set(check.sets) & set(chosen.tagged)]


def set_rows(name: str, variables: dict, profile: profiles.Profile, registry: dict[str, Check]) -> dict:
    """The reference overrides set ``name`` lays over ``profile`` (check -> metric -> {"params": ...}): each of its
    test parameters (``Check.set_params``) over the profile's row's ``params``, unless the site's overrides in
    ``variables`` give that row's ``params`` themselves (the site knows its hardware); {} for a set that tunes none."""
    site = variables.get(OVERRIDES) or {}
    rows: dict[str, dict] = {}
    for check in registry.values():
        tuned = check.set_params.get(name)
        for metric, params in (tuned.params if tuned else {}).items():
            row = profile.reference(check.id, metric)
            if "params" in site.get(check.id, {}).get(metric, {}) or row is None:
                continue
            rows.setdefault(check.id, {})[metric] = {"params": {**row.params, **params}}
    return rows


def host_vars(name: str, variables: dict, profile: profiles.Profile, registry: dict[str, Check]) -> dict:
    """A host's variables with set ``name``'s parameters (``set_rows``) laid into its
    ``provision_reference_overrides`` and its timeouts into ``provision_check_timeouts`` (each as the set's, or the
    site's when larger), so that the run's report keeps what the host was judged by."""
    overrides = copy.deepcopy(variables.get(OVERRIDES) or {})
    for check_id, metrics in set_rows(name, variables, profile, registry).items():
        for metric, row in metrics.items():
            overrides.setdefault(check_id, {})[metric] = {**overrides.get(check_id, {}).get(metric, {}), **row}
    timeouts = dict(variables.get(TIMEOUTS) or {})
    for check in registry.values():
        tuned = check.set_params.get(name)
        if tuned is not None and tuned.timeout_s is not None:
            timeouts[check.id] = max(float(timeouts.get(check.id, 0)), tuned.timeout_s)
    return {**variables, **({OVERRIDES: overrides} if overrides else {}), **({TIMEOUTS: timeouts} if timeouts else {})}


def time_per_node(name: str, registry: dict[str, Check], profile_name: str = REFERENCE_PROFILE) -> float:
    """Seconds set ``name`` keeps one node of ``profile_name`` (no site facts) busy with its node checks: each
    check's ``expected_s`` where it declares one, else each of its steps at its timeout (module docstring)."""
    variables = host_vars(name, {}, profiles.load(profile_name), registry)
    # a check's steps read a host's name and address only: a stand-in, so that the checks need not import the
    # inventory (which sits above them: it validates check ids)
    host = types.SimpleNamespace(name="node", address="127.0.0.1", profile=profile_name, vars=variables)
    profile = profiles.for_host(profile_name, variables, host.name)
    total = 0.0
    for check_id in members(name, registry):
        check = registry[check_id]
        if check.scope is not Scope.NODE or not all(profile.has(need) for need in check.needs):
            continue
        timeout = float(variables.get(TIMEOUTS, {}).get(check_id, check.timeout_s))
        total += check.expected_s(profile) if check.expected_s else len(check.steps(profile, host)) * timeout
    budget = declared(registry)[name].budget_s if name in declared(registry) else None
    return min(total, budget) if budget is not None else total


def minutes(seconds: float) -> str:
    """``16 min`` or ``1 h 21 min``, rounded up to the minute."""
    whole = -(-int(seconds) // 60)
    return f"{whole // 60} h {whole % 60} min" if whole >= 60 else f"{whole} min"


def markdown_table(registry: dict[str, Check]) -> str:
    """README's sets table: each set, what it is for, its checks, its IB pair schedule and its time per node."""
    rows = ["| set | for | checks | IB pairs | time per node |", "| --- | --- | --- | --- | --- |"]
    for name, chosen in declared(registry).items():
        ids = members(name, registry)
        shown = "every check" if ids == list(registry) else ", ".join(f"`{c}`" for c in ids)
        multi = any(registry[c].scope is not Scope.NODE for c in ids)
        rows.append(f"| `{name}` | {chosen.purpose} | {shown} | {chosen.schedule if multi else '-'} | "
                    f"{minutes(time_per_node(name, registry))} |")
    return "\n".join(rows) + "\n"
