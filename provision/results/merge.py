"""Merge the runs of a sharded job (``--shard K/N`` on several controllers) into one Run.

``merge(shards, run_id)`` takes [(label, Run)] whose hosts are disjoint and returns the merged Run and,
per shard, how its raw output paths move in the merged run folder ({old: new}; a path two shards
both wrote moves under ``raw/shard-<i>/``). The merged run holds every host, install record and
result of every shard, in shard order; phases in the order first seen; ``started`` the earliest
and ``finished`` the latest; wall times the longest (the shards ran at once); the cluster
procedure's groups of every shard. Raises ProvisionError naming both runs when a host is in two,
and when the shards were judged against different report schema versions (never: ``reading``
upgrades them) or none is given.
"""
from __future__ import annotations

import dataclasses

from provision.errors import ProvisionError
from provision.results.model import CheckResult, RawOutput, Run


def merge(shards: list[tuple[str, Run]], run_id: str) -> tuple[Run, list[dict[str, str]]]:
    if not shards:
        raise ProvisionError("merge: name at least one run folder")
    owner: dict[str, str] = {}
    for label, run in shards:
        for host in run.hosts:
            if host in owner:
                raise ProvisionError(f"merge: host {host} is in both {owner[host]} and {label}: shards must be "
                                     "disjoint (the same --shard K/N twice, or two different inventories?)")
            owner[host] = label
    moves = _raw_moves([run for _, run in shards])
    merged = Run(run_id=run_id, inventory=" + ".join(dict.fromkeys(r.inventory for _, r in shards)),
                 phases=list(dict.fromkeys(p for _, r in shards for p in r.phases)),
                 started=min((r.started for _, r in shards if r.started), default=""),
                 finished=max((r.finished for _, r in shards if r.finished), default=""))
    groups: list = []
    for (_, run), move in zip(shards, moves):
        merged.hosts.update(run.hosts)
        merged.install.update(run.install)
        merged.results += [_moved(r, move) for r in run.results]
        groups += (run.cluster or {}).get("groups", [])
    merged.cluster = {"groups": groups} if groups else None
    merged.install_wall_s = _longest(r.install_wall_s for _, r in shards)
    merged.burnin_wall_s = _longest(r.burnin_wall_s for _, r in shards)
    return merged, moves


def _raw_moves(runs: list[Run]) -> list[dict[str, str]]:
    """Per run {path: path in the merged folder}: unchanged unless another shard wrote the same path."""
    paths = [set(_paths(run)) for run in runs]
    seen: dict[str, int] = {}
    for mine in paths:
        for path in mine:
            seen[path] = seen.get(path, 0) + 1
    taken = set(seen)
    moves = []
    for i, mine in enumerate(paths):
        move = {}
        for path in sorted(mine):
            if seen[path] == 1:
                move[path] = path
                continue
            new, n = f"raw/shard-{i + 1}/{path.removeprefix('raw/')}", 1
            while new in taken:  # never onto a path some shard wrote, or one moved here before
                n += 1
                new = f"raw/shard-{i + 1}-{n}/{path.removeprefix('raw/')}"
            taken.add(new)
            move[path] = new
        moves.append(move)
    return moves


def _paths(run: Run) -> list[str]:
    """Every file a run's results name: outputs, their standard errors, perftest servers' outputs."""
    return [p for r in run.results for raw in r.raw for p in (raw.path, raw.stderr, raw.server) if p]


def _moved(result: CheckResult, move: dict[str, str]) -> CheckResult:
    def to(path: str) -> str:
        return move.get(path, path) if path else path

    return dataclasses.replace(result, raw=[RawOutput(raw.key, raw.host, to(raw.path), to(raw.stderr),
                                                      to(raw.server)) for raw in result.raw])


def _longest(values) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None
