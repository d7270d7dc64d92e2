"""The job's options, typed: built once from the command line (``JobOptions.from_args``) or by a caller."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields

from provision import arguments
from provision.errors import ProvisionError
from provision.inventory import Vault

PHASES = {"run": ("install", "burnin"), "install": ("install",), "burnin": ("burnin",)}  # by command


@dataclass(frozen=True)
class JobOptions:
    """What ``provision run``, ``install`` and ``burnin`` are given (their options, by the same names).

    ``phases``: install, burnin or both. ``inventory``: the ``-i`` sources, later ones win. ``checks``:
    the check ids of ``--checks`` (None: all). ``host`` and ``profile`` go with ``local`` (``burnin
    --local``). ``live`` redraws the progress lines (a terminal). ``forks``: the most hosts worked on at
    once (None: every host). ``wait``: seconds to wait for hosts another run holds (None: refuse at once).
    ``drain_max``, ``drain_share``, ``drain_window``: the drain's circuit breaker (``provision.slurm.breaker``;
    None: its defaults)."""

    phases: tuple[str, ...]
    inventory: tuple[str, ...] = ()
    limit: tuple[str, ...] | None = None
    vault: Vault = Vault()
    run_id: str | None = None
    tags: str | None = None
    retry_failed: str | None = None
    checks: tuple[str, ...] | None = None
    check_set: str | None = None
    scope: str = "all"
    schedule: str | None = None  # --schedule; None: the check set's (select.schedule), else quick
    history: str | None = None
    drain: str | None = None
    resume_passed: bool = False
    drain_max: int | None = None  # --drain-max: the count the operator names, past the breaker
    drain_share: float | None = None  # --drain-share: percent of the Slurm nodes one run may drain
    drain_window: float | None = None  # --drain-window: hours over which runs share that budget
    force: bool = False
    shard: str | None = None
    shard_by: str | None = None
    local: bool = False
    host: str | None = None
    profile: str | None = None
    verbose: bool = False
    live: bool = False
    forks: int | None = None
    wait: float | None = None
    resume: str | None = None  # --resume RUN: continue that killed run with its own options (``resume``)
    recover: bool = False  # --recover: power-cycle the nodes that hang, through their BMCs (engine.recovery)
    insecure_bmc: bool = False  # --insecure-bmc: the BMCs' TLS certificates are not verified (said in the run)
    method: str = "push"  # --method: push, local or image (provision.rollout.methods)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> JobOptions:
        """The options of a parsed ``run``, ``install`` or ``burnin`` (an option a command lacks keeps its
        default). Raises ProvisionError for a usage error: no -i without --local, --host or --profile
        without it, a --limit naming nothing, a bad --forks or --wait."""
        given = {f.name: vars(args)[f.name] for f in fields(cls) if f.name in vars(args)}
        local = bool(given.get("local"))
        if not local and not args.inventory and not given.get("resume"):
            other = "--local: the burn-in of this machine" if args.command == "burnin" else "--resume RUN"
            raise ProvisionError(f"{args.command}: -i/--inventory is required (or {other})")
        if not local and (given.get("host") or given.get("profile")):
            raise ProvisionError(f"{args.command}: --host and --profile go with --local")
        if local and (given.get("recover") or given.get("insecure_bmc")):
            raise ProvisionError(f"{args.command}: --recover and --insecure-bmc reach the nodes' BMCs from a "
                                 "controller; a burn-in of this machine itself (--local) reaches none")
        limit, checks = arguments.limit(args.limit), arguments.csv(given.get("checks"))
        return cls(**{**given, "phases": PHASES[args.command], "inventory": tuple(args.inventory or ()),
                      "limit": _tuple(limit), "checks": _tuple(checks), "vault": arguments.vault(args),
                      "live": sys.stdout.isatty(), "forks": arguments.forks(args.forks),
                      "wait": arguments.wait(args.wait)})


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)
