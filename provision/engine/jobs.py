"""Plan checks into jobs by scope: which hosts each job covers, and what its check sees of them."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from provision.checks import Check
from provision.checks.base import Group, Pair
from provision.inventory import Host
from provision.results.model import Scope


@dataclass(frozen=True)
class Job:
    """One check on ``hosts``; ``tag`` names the round of a job that may run again on the same
    hosts (the cluster procedure's), so its raw outputs get their own folder."""

    check: Check
    hosts: tuple[str, ...]
    tag: str = ""

    @property
    def label(self) -> str:
        return f"{'+'.join(self.hosts)} {self.check.id}"


def plan(checks: list[Check], profiles_of: dict[str, str],
         domains_of: dict[str, str | None] | None = None) -> list[Job]:
    """Jobs in run order: node checks one per host; pair checks disjoint pairs (``pairs``);
    group checks one per profile's hosts, or per NVLink domain of a profile's hosts for a check run
    ``per_nvlink_domain`` (``domains_of``: host -> its domain name or None; a profile's hosts of no domain make
    one job, which the engine skips where the profile has no domain and errors where it has one);
    cluster checks one over every host. ``profiles_of`` maps host -> profile name, in host order."""
    jobs: list[Job] = []
    names = list(profiles_of)
    for check in checks:
        if check.placement.scope is Scope.GROUP and check.placement.per_nvlink_domain:
            by_domain: dict[tuple, list[str]] = {}
            for host, profile in profiles_of.items():
                by_domain.setdefault((profile, (domains_of or {}).get(host)), []).append(host)
            jobs += [Job(check, tuple(hs)) for hs in by_domain.values()]
            continue
        if check.placement.scope is Scope.NODE:
            jobs += [Job(check, (h,)) for h in names]
        elif check.placement.scope is Scope.PAIR:
            jobs += [Job(check, p) for p in pairs(names)] if len(names) > 1 else [Job(check, (names[0],))]
        elif check.placement.scope is Scope.GROUP:
            by_profile: dict[str, list[str]] = {}
            for host, profile in profiles_of.items():
                by_profile.setdefault(profile, []).append(host)
            jobs += [Job(check, tuple(hs)) for hs in by_profile.values()]
        else:
            jobs.append(Job(check, tuple(names)))
    return jobs


def pairs(names: list[str]) -> list[tuple[str, str]]:
    """Disjoint neighbours (0,1), (2,3), ...; an odd last host pairs with the first, in a later round."""
    out = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
    if len(names) % 2:
        out.append((names[-1], names[0]))
    return out


def by_name(check: Check, names: tuple[str, ...], variables: Mapping[str, dict] | None = None):
    """The target of a job known only by its hosts' names (a saved result): stand-in hosts addressed by
    their names, with the variables the report kept of each (``variables``: name -> ``HostRecord.vars``, which
    decide some steps: a BMC's inventory), enough to build the check's steps again and learn each output's parser."""
    return target(check, tuple(Host(name, name, 22, "", None, None, None, vars=dict((variables or {}).get(name) or {}))
                               for name in names))


def target(check: Check, hosts: tuple):
    """What ``check.steps`` receives: the Host (node scope), a Pair, or a Group."""
    if check.placement.scope is Scope.NODE:
        return hosts[0]
    if check.placement.scope is Scope.PAIR and len(hosts) == 2:
        return Pair(*hosts)
    return Group(hosts)
