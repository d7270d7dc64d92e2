"""The job's first phases: its options checked, the GPU nodes selected (inventory, shard or this machine),
the plan gate before an install, the checks chosen. Nothing here touches a node."""
from __future__ import annotations

from provision import checks, embedded, paths, targets
from provision import inventory as inv
from provision.checks import sets
from provision.commands._job.options import JobOptions
from provision.errors import ProfileError, ProvisionError
from provision.results.model import Scope
from provision.results.store import RunStore
from provision.slurm.breaker import SHARE, WINDOW_S, Breaker


def known_checks(only_checks) -> None:
    """Raises ProvisionError (exit 2) when ``--checks`` names none or an unknown one."""
    known = checks.ids()
    if only_checks is not None and not only_checks:
        raise ProvisionError("--checks: name at least one check")
    unknown = sorted(set(only_checks or ()) - set(known))
    if unknown:
        raise ProvisionError(f"--checks: unknown check {', '.join(unknown)} (known: {', '.join(known)})")


def drain_options(drain: str | None, resume_passed: bool, most: int | None = None, share: float | None = None,
                  window: float | None = None) -> Breaker:
    """The drain's circuit breaker of ``--drain-max``, ``--drain-share`` (percent) and ``--drain-window``
    (hours). Raises ProvisionError for one of them or --resume-passed without --drain slurm, a count below 0,
    a share outside (0, 100] or a window not above 0 (before any rack starts)."""
    given = [name for name, value in (("--resume-passed", resume_passed), ("--drain-max", most is not None),
                                      ("--drain-share", share is not None), ("--drain-window", window is not None))
             if value]
    if given and drain != "slurm":
        raise ProvisionError(f"{given[0]} needs --drain slurm")
    if most is not None and most < 0:
        raise ProvisionError(f"--drain-max {most}: a number of nodes, 0 or more")
    if share is not None and not 0 < share <= 100:
        raise ProvisionError(f"--drain-share {share:g}: a percentage above 0, at most 100")
    if window is not None and not window > 0:
        raise ProvisionError(f"--drain-window {window:g}: hours, above 0")
    return Breaker(share=SHARE if share is None else share / 100,
                   window_s=WINDOW_S if window is None else window * 3600, most=most)


def recovery_budget(options, hosts: int) -> int:
    """How many hung nodes ``--recover`` may power-cycle in a run of ``hosts`` nodes (``provision.engine.recovery``):
    0 without --recover; else the drain breaker's budget for the run's nodes (``provision.slurm.breaker``): its
    ``--drain-max`` when given, else ``--drain-share`` (default 10 %) of the run's hosts, at least one."""
    if not options.recover:
        return 0
    if options.drain_max is not None:
        return options.drain_max
    share = SHARE if options.drain_share is None else options.drain_share / 100
    return max(1, int(share * hosts + 1e-9))


def failed_installs(run_arg: str, limit) -> list[str]:
    """The hosts of a saved run whose install failed or never reached them. Raises ProvisionError
    with ``limit`` given too, when the run installed nothing, or when every host installed ok."""
    saved = RunStore(paths.RUNS).open(run_arg).load()
    if not saved.install:
        raise ProvisionError(f"--retry-failed {run_arg}: that run installed nothing")
    if limit:
        raise ProvisionError("--retry-failed chooses the hosts itself: leave out --limit")
    failed = [h for h, i in saved.install.items() if i.status in ("failed", "unreachable")]
    if not failed:
        raise ProvisionError(f"--retry-failed {run_arg}: every host installed ok there")
    return failed


def gpu_inventory(inventory_args, limit, vault: inv.Vault, progress) -> inv.Inventory:
    """The inventory, with at least one GPU node selected; hosts without a profile are named and left out."""
    sources = inv.resolve_all(inventory_args)
    for path in sources:
        embedded.ensure_running(path, progress)
    inventory = inv.load(sources, vault, limit)
    others = [h.name for h in inventory.hosts if h.profile is None]
    if not inventory.gpu_hosts:
        raise ProvisionError(f"{inventory.label}: no GPU node to run on: no host{' in --limit' if limit else ''} "
                             "has provision_profile (see `provision inventory`)")
    for warning in inventory.warnings:
        progress(f"provision: warning: {warning}")
    if others:
        progress(f"{len(others)} hosts without provision_profile are not GPU nodes, left out: "
                 f"{', '.join(others[:8])}{' ...' if len(others) > 8 else ''}")
    return inventory


def selected(inventory: inv.Inventory, options: JobOptions, limit, progress) -> list[targets.Target]:
    """The targets of the GPU nodes the job runs on (its shard, when given; ``provision.targets``: each host's
    profile, timeouts and check set resolved once), after the plan gate when it installs."""
    phases, shard, shard_by = options.phases, options.shard, options.shard_by
    vault, force = options.vault, options.force
    hosts = list(inventory.gpu_hosts)
    if shard is None and shard_by is not None:
        raise ProvisionError(f"--shard-by {shard_by}: give --shard K/N too")
    if shard is not None:
        hosts = _shard(hosts, shard, shard_by or "hash", progress)
        limit = [h.name for h in hosts]
    chosen = targets.build(hosts, options.check_set, inventory.views)
    if "install" in phases and hosts:
        plan_gate(inventory, vault, limit, force, progress)
    return chosen


def _shard(hosts: list, shard: str, by: str, progress) -> list:
    """The GPU nodes of shard ``shard`` ("K/N", by hash or rack); none when the split gives this shard
    nothing (a Slurm array of more tasks than the cluster has nodes or racks), which is not an error."""
    from provision.inventory import shard as sharding

    mine = sharding.select(hosts, shard, by)
    progress(f"shard {shard} by {by}: {len(mine)} of {len(hosts)} GPU nodes")
    return mine


def plan_gate(inventory: inv.Inventory, vault: inv.Vault, limit, force: bool, progress) -> None:
    """``provision plan`` before an install: its errors stop the job (ProvisionError), unless ``force``; its
    unknowns are printed and do not (``provision plan`` itself exits 7 on them)."""
    from provision.plan import planner

    found = planner.plan(inventory, vault, limit)
    if found.problems:
        raise found.problems[0]
    errors = found.errors()
    for finding in errors + found.unknowns():  # what the tables cannot judge is said, though it stops nothing here
        progress(f"plan: {finding.line()}")
    if errors and not force:
        raise ProvisionError(f"plan: {len(errors)} errors in the stack or the design (above; `provision plan -i "
                             f"{inventory.label}` proposes the nearest consistent stack): not installing; "
                             "--force installs anyway")
    if errors:
        progress(f"plan: {len(errors)} errors, installing anyway (--force)")


def local(options: JobOptions, only_checks, limit, progress) -> tuple[str, list[targets.Target], list[str] | None,
                                                                      str]:
    """``burnin --local``: (label, [this machine's target], checks, scope). Node-scope checks only: a pair or
    cluster check needs several nodes, so one named in ``--checks`` (or ``--scope cluster``) is refused,
    and ``provision merge`` of the nodes' runs holds node results only. No history by default: every
    node would write one SQLite file at once, on a shared file system (give ``--history`` to have it).
    Raises ProvisionError (exit 2) for options that select other hosts (``refused``)."""
    from provision.inventory import local as local_host

    inventory_args, host_name, profile, vault = options.inventory, options.host, options.profile, options.vault
    scope, refused = options.scope, (limit, options.shard, options.retry_failed, options.phases)
    for value, option in zip(refused, ("--limit", "--shard", "--retry-failed")):
        if value:
            raise ProvisionError(f"burnin --local: {option} selects other hosts; --local burns in this machine only")
    if refused[3] != ("burnin",):
        raise ProvisionError("--local: burn-in only (install with `provision install` from a controller)")
    if scope == "cluster":
        raise ProvisionError("burnin --local: --scope cluster needs several nodes; run it from a controller over SSH")
    registry = checks.registry()
    others = [c for c in only_checks or () if registry[c].scope is not Scope.NODE]
    if others:
        raise ProvisionError(f"burnin --local: {', '.join(others)} need several nodes (pair or cluster checks); "
                             "run them from a controller over SSH")
    sources = inv.resolve_all(inventory_args) if inventory_args else ()
    label, host = local_host.this_host(host_name, profile, sources, vault)
    chosen = targets.build([host], options.check_set)
    progress(f"burnin --local: {host.name} from {label}; node checks only (pair and cluster checks need a "
             "controller: SSH)")
    return label, chosen, only_checks, "node"


def check_set(name: str, chosen: list[targets.Target], only_checks) -> list[str]:
    """The checks set ``name`` runs (``provision.checks.sets``: those tagged with its tags, ``Check.sets``) less
    those every one of the ``chosen`` targets' profiles excludes (``exclude_checks``; their union, in run order). Raises
    ProvisionError with --checks given too, for a set no check has, or naming the profile file of an exclusion
    of an unknown check."""
    if only_checks is not None:
        raise ProvisionError("--check-set and --checks: give one of them")
    registry = checks.registry()
    known = sorted(name for name in sets.declared(registry) if sets.members(name, registry))
    if name not in known:
        raise ProfileError(f"--check-set {name}: no such check set (known: {', '.join(known) or 'none'})")
    members = sets.members(name, registry)
    wanted: set[str] = set()
    for profile in {t.profile.path: t.profile for t in chosen}.values():
        unknown = sorted(set(profile.exclude_checks) - set(registry))
        if unknown:
            raise ProfileError(f"{profile.path}: exclude_checks: unknown check {', '.join(unknown)} "
                               f"(known: {', '.join(registry)})")
        wanted |= {c for c in members if c not in profile.exclude_checks}
    return [c for c in registry if c in wanted]


def schedule(name: str | None, given: str | None) -> str:
    """The IB pair schedule: ``--schedule`` when given, else set ``name``'s (full for acceptance), else quick."""
    if given is not None:
        return given
    chosen = sets.declared(checks.registry()).get(name) if name is not None else None
    return chosen.schedule if chosen else "quick"
