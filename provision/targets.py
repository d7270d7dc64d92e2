"""A run's targets: each GPU node as the run judges it, resolved once.

A ``Target`` is built once per host per run (``build``) and is frozen. It holds:

- ``host``: the inventory's Host (its variables with the check set's parameters and timeouts laid in, so that
  the run's report keeps what the host was judged by: ``provision.checks.sets.host_vars``);
- ``profile``: the typed ``Profile`` the checks judge by: the profile the inventory names with the host's
  reference overrides and site facts (the view the inventory's validation built, ``Inventory.views``, never
  built again), the set's test parameters over it, and, once the engine has read the node's /etc/os-release,
  its OS (``with_os``: NVIDIA's repository folder, whose stack pins the stack check judges by);
- ``timeouts``: check id -> seconds, the site's ``provision_check_timeouts`` and the set's (the larger wins);
  a check not named runs under its own ``Check.timeout_s``;
- ``check_set``: the set the run runs (None: ``--checks``, or every check).

Every consumer of a run (the plan gate, the engine, the report) takes Targets; ``Host.profile``, the
profile's name, is what a report serializes. Errors: ``build`` raises ProfileError naming the host and the
field (``host <name>: field 'provision_profile': ...``) for a profile whose references do not fit the checks
that read them (``provision.checks.references.validate``), once per distinct view.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from provision import checks, profiles
from provision.checks import references, sets
from provision.errors import ProfileError
from provision.inventory import Host


@dataclass(frozen=True)
class Target:
    """One GPU node of a run, resolved once (module docstring)."""

    host: Host
    profile: profiles.Profile
    timeouts: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    check_set: str | None = None
    os_release: Mapping[str, str] | None = None

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def nvlink_domain(self) -> str | None:
        """The NVLink domain the inventory puts the host in (``Host.nvlink_domain``), or None."""
        return self.host.nvlink_domain

    def timeout_s(self, check) -> float:
        """Seconds ``check`` may run on this host: the site's or the set's (``timeouts``), else the check's own."""
        return float(self.timeouts.get(check.id, check.budget.timeout_s))

    def with_os(self, os_release: Mapping[str, str]) -> Target:
        """This target once its node's /etc/os-release fields are read: the profile for its NVIDIA repository folder
        (``profiles.target_of``; unchanged for a system NVIDIA has no folder for)."""
        folder = profiles.target_of(dict(os_release))
        return dataclasses.replace(self, profile=self.profile.for_target(folder),
                                   os_release=MappingProxyType(dict(os_release)))


def validate(hosts: Sequence[Host], views: Mapping[str, profiles.Profile]) -> None:
    """Raise ProfileError (``host <name>: field 'provision_profile': ...``) for the first host whose view's reference
    rows do not fit the checks that read them (``provision.checks.references.validate``), once per distinct view."""
    checked: dict[int, profiles.Profile] = {}  # kept, so that no other view can take a checked one's id
    for host in hosts:
        view = views[host.name]
        if id(view) in checked:  # hosts of one profile and the same overrides share a view: checked once
            continue
        try:
            references.validate(view)
        except ProfileError as exc:
            raise ProfileError(f"host {host.name}: field 'provision_profile': {exc}") from None
        checked[id(view)] = view


def build(hosts: Sequence[Host], check_set: str | None = None,
          views: Mapping[str, profiles.Profile] | None = None) -> list[Target]:
    """The targets of ``hosts`` (GPU nodes, in order), for a run of ``check_set`` (None: no set). ``views`` are the
    profiles the inventory built for its hosts (``Inventory.views``); a host with none (``burnin --local``, a
    test's Host) gets its view built and checked here (``profiles.for_host``, ``validate``). Raises ProfileError
    (module docstring)."""
    registry = checks.registry() if check_set is not None else {}
    out: list[Target] = []
    if views is None:  # views the inventory built were checked with it (validate); these are built here
        views = {h.name: profiles.for_host(str(h.profile), h.vars, h.name) for h in hosts}
        validate(hosts, views)
    tuned: dict[tuple[int, str], profiles.Profile] = {}  # (view, the set's rows) -> the view with them
    for host in hosts:
        view = views.get(host.name) or profiles.for_host(str(host.profile), host.vars, host.name)
        profile, variables = view, host.vars
        if check_set is not None:
            rows = sets.set_rows(check_set, host.vars, view, registry)
            key = (id(view), json.dumps(rows, sort_keys=True, default=str))
            if rows and key not in tuned:
                tuned[key] = view.with_overrides(rows, f"check set {check_set}")
            profile = tuned[key] if rows else view
            variables = sets.host_vars(check_set, host.vars, view, registry)
            host = dataclasses.replace(host, vars=variables)
        timeouts = {str(k): float(v) for k, v in (variables.get(sets.TIMEOUTS) or {}).items()}
        out.append(Target(host, profile, MappingProxyType(timeouts), check_set))
    return out
