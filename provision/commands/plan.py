"""``provision plan``: the stack and the hardware design of an inventory checked before touching a node
(``provision.plan.planner``), or a cluster sized (``--gpus N --profile P``, ``provision.plan.sizing``)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from provision import arguments, profiles
from provision import inventory as inv
from provision.commands._common import say, warn
from provision.errors import ExitStatus, ProvisionError


@dataclass(frozen=True)
class SizingRequest:
    """``--gpus N --profile P`` and the sizing's options: ``radix`` switch ports, ``oversubscription`` down:up,
    ``pue`` (None: ``provision.plan.sizing.PUE``), ``node_W`` and ``switch_W`` power overrides (None: the profile's;
    a switch's unknown)."""

    gpus: int | None
    profile: str | None
    radix: int = 64
    oversubscription: str = "1:1"
    pue: float | None = None
    node_W: float | None = None
    switch_W: float | None = None


def main(args: argparse.Namespace) -> int:
    sizing = None
    if args.gpus is not None or args.profile is not None:
        sizing = SizingRequest(args.gpus, args.profile, args.switch_radix, args.oversubscription, args.pue,
                               args.node_power_W, args.switch_power_W)
    return plan(args.inventory, arguments.limit(args.limit), arguments.vault(args), sizing,
                accept_unknown=args.accept_unknown, out=say, err=warn)


def plan(inventory_args: str | list[str] | None, limit: list[str] | None = None, vault: inv.Vault = inv.Vault(),
         sizing: SizingRequest | None = None, accept_unknown: bool = False, out=print, err=print) -> ExitStatus:
    """With ``sizing``, the cluster sizing; else the plan of the inventory, touching no
    node. Exit 1 when it finds an error, 2 for bad input (a host the plan could not read is named on
    ``err``, the others still planned), 7 (``UNCHECKED``) when the tables do not cover part of the stack
    and ``accept_unknown`` is not given, else 0."""
    from provision.plan import planner

    if sizing is not None:
        return _sizing(sizing, out)
    if not inventory_args:
        raise ProvisionError("plan: give -i INVENTORY (check its stack and hardware) or --gpus N --profile P (size)")
    inventory = inv.read(inv.resolve_all(inventory_args), vault, limit)
    if not inventory.gpu_hosts and not inventory.problems:
        raise ProvisionError(f"{inventory.label}: no host has provision_profile: nothing to plan")
    found = planner.plan(inventory, vault, limit)
    problems = [*inventory.problems, *found.problems]
    for line in planner.render(found):
        out(line)
    if problems:
        out(f"plan: {len(problems)} hosts or fields could not be planned (errors below): fix them and plan again")
    for problem in problems:
        err(f"provision: error: {problem}")
    if problems:
        return ExitStatus.BAD_INPUT
    return _verdict(found, accept_unknown, out)


def _verdict(found, accept_unknown: bool, out) -> ExitStatus:
    """1 on an error; 7 (``UNCHECKED``) when something is unknown and not accepted; else 0."""
    if found.errors():
        return ExitStatus.NODE_FAILED
    unknowns = found.unknowns()
    if unknowns and accept_unknown:
        out(f"plan: {len(unknowns)} unknown accepted (--accept-unknown): exit 0, the unknown lines stay unchecked")
    elif unknowns:
        out(f"plan: {len(unknowns)} unknown: exit {int(ExitStatus.UNCHECKED)}; extend provision/plan/data/ with a "
            "sourced row, change the pins, or pass --accept-unknown to go ahead unchecked")
        return ExitStatus.UNCHECKED
    return ExitStatus.OK


def _sizing(request: SizingRequest, out) -> ExitStatus:
    """``provision plan --gpus N --profile P``: the sizing and the profile's hardware balance."""
    from provision.plan import hardware, sizing

    if request.gpus is None or request.profile is None:
        raise ProvisionError("plan: --gpus and --profile go together (the sizing of N GPUs of a profile)")
    chosen = profiles.load(request.profile)
    pue = sizing.PUE if request.pue is None else request.pue
    result = sizing.size(request.gpus, chosen, request.radix, request.oversubscription, pue, request.node_W,
                         request.switch_W)
    for line in result.lines():
        out(line)
    for finding in hardware.balance(chosen):
        out(f"  {finding.line()}")
    return ExitStatus.OK
