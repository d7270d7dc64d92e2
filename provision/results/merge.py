"""Merge the runs of a sharded job (``--shard K/N`` on several controllers) into one Run.

``merge(shards, run_id)`` takes [(label, Run)] whose hosts are disjoint and returns the merged Run and,
per shard, how its raw output paths move in the merged run folder ({old: new}; a path two shards
both wrote moves under ``raw/shard-<i>/``). The merged run holds every host, install record and
result of every shard, in shard order; phases in the order first seen; ``started`` the earliest
and ``finished`` the latest; wall times the longest (the shards ran at once); the cluster
procedure's groups of every shard. Raises ProvisionError naming both runs when a host is in two,
and when the shards were judged against different report schema versions (never: ``reading``
upgrades them) or none is given; naming the shard and the path when a raw path is not a plain path
under its ``raw/`` (absolute, ``..``, ``.``, an empty part: a crafted report, or one from no run store).

``copy_raw`` copies the files, 0600 as the shards' own: one that is not a regular file inside its
shard's run folder (a symlink out of it, a FIFO, a device) or cannot be read is a warning line and left
out, never followed.
"""
from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable

from provision.errors import ProvisionError
from provision.results.model import CheckResult, RawOutput, Run
from provision.results.store import RAW, RunDir, write_all


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
        for path in _paths(run):
            _plain(path, label)
    moves = _raw_moves([run for _, run in shards])
    merged = Run(run_id=run_id, inventory=" + ".join(dict.fromkeys(r.inventory for _, r in shards)),
                 phases=list(dict.fromkeys(p for _, r in shards for p in r.phases)),
                 started=min((r.started for _, r in shards if r.started), default=""),
                 finished=max((r.finished for _, r in shards if r.finished), default=""))
    groups: list = []
    left_out: dict = {}  # hosts alone in their shard's group (coverage.left_out)
    for (_, run), move in zip(shards, moves):
        merged.hosts.update(run.hosts)
        merged.install.update(run.install)
        merged.results += [_moved(r, move) for r in run.results]
        groups += (run.cluster or {}).get("groups", [])
        left_out.update((run.cluster or {}).get("left_out") or {})
    actions = [a for _, run in shards for a in run.power_actions or ()]
    merged.power_actions = actions or None
    merged.cluster = {"groups": groups, **({"left_out": left_out} if left_out else {})} if groups or left_out else None
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
            new, n = f"{RAW}/shard-{i + 1}/{path.removeprefix(RAW + '/')}", 1
            while new in taken:  # never onto a path some shard wrote, or one moved here before
                n += 1
                new = f"{RAW}/shard-{i + 1}-{n}/{path.removeprefix(RAW + '/')}"
            taken.add(new)
            move[path] = new
        moves.append(move)
    return moves


def _paths(run: Run) -> list[str]:
    """Every file a run's results name: outputs, their standard errors, perftest servers' outputs."""
    return [p for r in run.results for raw in r.raw for p in (raw.path, raw.stderr, raw.server) if p]


def _plain(path: str, label: str) -> None:
    """Raises ProvisionError unless ``path`` is ``raw/`` and plain names below it."""
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != RAW or any(p in ("", ".", "..") for p in parts) or "\0" in path:
        shown = path if len(path) <= 200 else f"{path[:200]}..."
        raise ProvisionError(f"merge: {label}: raw output path {shown!r} is not a file under the run's raw/ "
                             "(absolute, '..' or an empty part): refused, nothing merged")


def copy_raw(source: RunDir, target: RunDir, move: dict[str, str], warn: Callable[[str], None]) -> None:
    """Copy ``source``'s raw files into ``target`` as ``move`` says ({old: new}, paths ``_plain``), each 0600
    in folders 0700. A file that is missing, unreadable, or not a regular file inside ``source`` (after its
    symlinks) is one ``warn`` line and not copied. Raises OSError when ``target`` cannot be written."""
    for old, new in move.items():
        fd = _opened(source, old, warn)
        if fd is None:
            continue
        into = target.path / new
        try:
            for folder in reversed(into.relative_to(target.path).parents[:-1]):
                (target.path / folder).mkdir(mode=0o700, exist_ok=True)
            out = os.open(into, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                while chunk := os.read(fd, 1 << 20):
                    write_all(out, chunk)
            finally:
                os.close(out)
        except OSError as exc:
            exc.filename = exc.filename or str(into)  # write(2) on a descriptor names no file
            raise
        finally:
            os.close(fd)


def _opened(source: RunDir, rel: str, warn: Callable[[str], None]) -> int | None:
    """A descriptor of ``source``'s file ``rel`` when it is a regular file inside the run folder, else None
    and a ``warn`` line. O_NONBLOCK: a FIFO put there is refused by fstat, never waited on."""
    where = f"merge: warning: {source.report}: {rel}"
    real = os.path.realpath(source.path / rel)
    if not real.startswith(f"{source.path}{os.sep}"):
        warn(f"{where}: a symlink out of its run folder (to {real[:200]}): not copied")
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        warn(f"{where}: {exc.strerror or exc}: not copied")
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        warn(f"{where}: not a regular file: not copied")
        return None
    os.set_blocking(fd, True)
    return fd


def _moved(result: CheckResult, move: dict[str, str]) -> CheckResult:
    def to(path: str) -> str:
        return move.get(path, path) if path else path

    return dataclasses.replace(result, raw=[RawOutput(raw.key, raw.host, to(raw.path), to(raw.stderr),
                                                      to(raw.server)) for raw in result.raw])


def _longest(values) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None
