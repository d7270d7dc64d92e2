"""``provision plan -i INV``: every GPU node's stack and hardware, grouped where they are the same.

``plan(inventory, vault, limit)`` reads the stack the roles will install (``manifest``), checks each
distinct stack (``stack.check``) and proposes the nearest consistent one when it has an error, or the
nearest one the tables check fully when it has only unknowns (``proposal.nearest``: the proposal is
checked again before it is printed, and what that check leaves is printed with it); checks each
distinct hardware profile with its site facts (``hardware``); and warns where an inventory sets a
stack variable that the playbook's own group_vars/all.yml outranks (inventory group_vars/all is below
playbook group_vars/all in Ansible's precedence, so the roles would install the other value).
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from provision import inventory as inv
from provision import profiles
from provision.inventory import Problem
from provision.plan import ERROR, UNKNOWN, WARNING, Finding, hardware, manifest
from provision.plan.proposal import Proposal, nearest
from provision.plan.stack import Stack, check, wheel_kernels

PRECEDENCE_SOURCE = "https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_variables.html"
OUTRANKED = ("nvidia_driver_version", "cuda_toolkit_version", "cudnn_version", "nccl_version", "nccl_cuda_version")


@dataclass
class StackPlan:
    stack: Stack
    hosts: list[str]
    findings: list[Finding]
    proposal: Proposal | None = None


@dataclass
class HardwarePlan:
    profile: str
    hosts: list[str]
    findings: list[Finding]


@dataclass
class Plan:
    stacks: list[StackPlan] = field(default_factory=list)
    hardware: list[HardwarePlan] = field(default_factory=list)
    inventory: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return ([f for s in self.stacks for f in s.findings] + [f for h in self.hardware for f in h.findings]
                + self.inventory)

    def errors(self) -> list[Finding]:
        return [f for f in self.findings() if f.severity == ERROR]

    def unknowns(self) -> list[Finding]:
        """What the tables do not cover: the plan cannot say it works (``provision plan`` exits 7)."""
        return [f for f in self.findings() if f.severity == UNKNOWN]


def plan(inventory: inv.Inventory, vault: inv.Vault = inv.Vault(), limit: list[str] | None = None) -> Plan:
    """The plan of ``inventory``'s GPU nodes. Raises InventoryError when the inventory cannot be read."""
    result = Plan()
    per_host, result.problems = manifest.stacks(inventory.sources or (inventory.path,), vault, limit,
                                                inventory.session)
    grouped: dict[Stack, list[str]] = defaultdict(list)
    for host, stacks in per_host.items():
        for s in stacks:
            grouped[s].append(host)
    for s, hosts in grouped.items():
        findings = check(s)
        result.stacks.append(StackPlan(s, hosts, findings, _proposal(s, findings)))
    result.hardware = _hardware(inventory)
    result.inventory = _outranked(inventory, per_host)
    return result


def _proposal(s: Stack, findings: list[Finding]) -> Proposal | None:
    """The nearest stack without errors when ``s`` has one; when ``s`` has only unknowns, the nearest
    that the tables check fully, if there is one (else nothing: the unknowns speak for themselves)."""
    if any(f.severity == ERROR for f in findings):
        return nearest(s)
    if any(f.severity == UNKNOWN for f in findings):
        found = nearest(s)
        return found if found is not None and found.changes and not found.unknowns else None
    return None


def _hardware(inventory: inv.Inventory) -> list[HardwarePlan]:
    grouped: dict[str, tuple[list[str], profiles.Profile, dict]] = {}
    for host in inventory.gpu_hosts:
        site = {k: host.vars.get(k) for k in ("provision_storage", "provision_plan") if host.vars.get(k) is not None}
        key = json.dumps([host.profile, site], sort_keys=True, default=str)
        if key not in grouped:
            grouped[key] = ([], inventory.views[host.name], site)  # as the inventory's validation built it
        grouped[key][0].append(host.name)
    return [HardwarePlan(str(profile.name), hosts, hardware.balance(profile, site))
            for hosts, profile, site in grouped.values()]


def _outranked(inventory: inv.Inventory, per_host: dict[str, list[Stack]]) -> list[Finding]:
    """A stack variable the inventory sets to one value while the roles get another."""
    from provision.inventory._ansible import origin

    found: dict[tuple, list[str]] = defaultdict(list)
    names = {"nvidia_driver_version": "driver", "cuda_toolkit_version": "cuda", "cudnn_version": "cudnn",
             "nccl_version": "nccl", "nccl_cuda_version": "nccl_cuda"}
    for host in inventory.gpu_hosts:
        for var in OUTRANKED:
            if var not in host.vars or host.name not in per_host:
                continue
            got = {getattr(s, names[var]) for s in per_host[host.name]}
            given = str(host.vars[var])
            if "{{" not in given and got != {given}:
                found[(var, given, origin(host.vars[var]) or "the inventory", ", ".join(sorted(got)))].append(host.name)
    return [Finding(WARNING, f"{var} {given}", f"set in {where} for {_hosts(hosts)}, but playbooks/group_vars/all.yml "
                    f"outranks the inventory's group all: the roles install {got}; set it in another group's "
                    "group_vars or in host_vars", PRECEDENCE_SOURCE)
            for (var, given, where, got), hosts in found.items()]


def _hosts(hosts: list[str]) -> str:
    return ", ".join(hosts) if len(hosts) <= 4 else f"{', '.join(hosts[:3])} and {len(hosts) - 3} more"


def _full(var: str, version: str) -> str:
    """The roles pin cuDNN by its full package version; the tables name releases (X.Y.Z)."""
    if var == "cudnn_version" and version.count(".") < 3:
        return f" (the package's full version {version}.N in NVIDIA's repository)"
    return ""


def describe(s: Stack) -> str:
    envs = "; ".join(f"env {e.name}: {', '.join(p.spec for p in e.packages)}" for e in s.envs)
    python = f"{s.interpreter} (Python {s.python})" if s.python else s.interpreter
    return (f"driver {s.driver}, CUDA {s.cuda}, cuDNN {s.cudnn}, NCCL {s.nccl}+cuda{s.nccl_cuda}, {python}"
            + (f"; {envs}" if envs else ""))


def render(p: Plan) -> list[str]:
    """The plan as text lines: each stack with its hosts and findings (and proposal), each hardware group."""
    lines = []
    for sp in p.stacks:
        lines.append(f"stack for {sp.stack.target} on {sp.stack.gpu} ({_hosts(sp.hosts)}): {describe(sp.stack)}")
        lines += [f"  {f.line()}" for f in sp.findings] or ["  ok: every rule holds"]
        lines += [f"  kernels: {line}" for line in wheel_kernels(sp.stack)]
        if sp.proposal is not None:
            lines += _proposal_lines(sp)
        elif any(f.severity == ERROR for f in sp.findings):
            lines.append("  no consistent stack within the compatibility tables")
    for hp in p.hardware:
        lines.append(f"hardware {hp.profile} ({_hosts(hp.hosts)}):")
        lines += [f"  {f.line()}" for f in hp.findings] or ["  no HCA and no site targets: nothing to balance"]
    if p.inventory:
        lines.append("inventory:")
        lines += [f"  {f.line()}" for f in p.inventory]
    errors, warnings, unknowns = len(p.errors()), sum(f.severity == WARNING for f in p.findings()), len(p.unknowns())
    if errors:
        verdict = "the stack or the design cannot work"
    elif unknowns:
        verdict = "not known to work: the tables do not cover what the unknown lines name"
    else:
        verdict = "consistent"
    counts = f"{errors} errors, {warnings} warnings" + (f", {unknowns} unknown" if unknowns else "")
    lines.append(f"plan: {counts}: {verdict}")
    return lines


def _proposal_lines(sp: StackPlan) -> list[str]:
    """The proposal's variables, then what its own check (run again on the whole proposed stack) leaves."""
    proposal = sp.proposal
    assert proposal is not None
    if any(f.severity == ERROR for f in sp.findings):
        head = "nearest consistent stack" if not proposal.unknowns else "nearest stack without a known error"
    else:
        head = "nearest stack the tables check fully"
    lines = [f"  {head} (set these variables):"]
    lines += [f"    {var}: {now} -> {then}{_full(var, then)}" for var, now, then in proposal.changes]
    lines.append(f"    planned again with these: 0 errors, {len(proposal.warnings)} warnings, "
                 f"{len(proposal.unknowns)} unknown")
    lines += [f"    it keeps: {f.line()}" for f in (*proposal.unknowns, *proposal.warnings)]
    lines += [f"    kernels: {line}" for line in wheel_kernels(proposal.stack)]
    return lines
