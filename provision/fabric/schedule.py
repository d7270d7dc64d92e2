"""IB pair schedules: rounds of disjoint (server, client) pairs chosen from the fabric.

``quick``: one round, every host paired with a partner on another leaf (hosts listed leaf by
leaf, the first half paired with the second), so every host's HCAs and a spread of
leaf-spine cables carry a flow. ``full``: a round of partners on the same leaf (HCAs and
leaf ports alone, no spine), then cross-leaf rounds chosen greedily until every leaf-spine
cable of every plane has carried a flow in some round (routes from ``Plane.route``), at most
``MAX_ROUNDS``. SuperBench's fixed round-robin needs N-1 rounds to meet every partner
(https://microsoft.github.io/superbenchmark/docs/user-tutorial/benchmarks/micro-benchmarks);
covering cables needs about (uplinks per leaf) / (hosts per leaf) rounds here.
"""
from __future__ import annotations

from provision.fabric.model import Fabric

MAX_ROUNDS = 16
Pair = tuple[str, str]  # (server, client): the client writes to the server


def by_leaf(fabric: Fabric, hosts: list[str]) -> list[list[str]]:
    """Hosts grouped by their leaf on the first plane, leaves in LID order; hosts off it last."""
    plane = fabric.planes[0]
    groups = [[h for h in plane.hosts_on(leaf.guid) if h in hosts]
              for leaf in sorted(plane.leaves(), key=lambda s: (s.lid or 0, s.guid))]
    placed = {h for g in groups for h in g}
    rest = [h for h in hosts if h not in placed]
    return [g for g in groups if g] + ([rest] if rest else [])


def quick(fabric: Fabric, hosts: list[str]) -> list[list[Pair]]:
    """One round: position p in leaf order meets p + N/2 (another leaf when no leaf has more than half)."""
    ordered = [h for g in by_leaf(fabric, hosts) for h in g]
    half = len(ordered) // 2
    return [[(ordered[half + i], ordered[i]) for i in range(half)]] if half else []


def full(fabric: Fabric, hosts: list[str]) -> list[list[Pair]]:
    """Same-leaf round, then cross-leaf rounds until every leaf-spine cable carried a flow."""
    rounds = []
    same = [(g[i + 1], g[i]) for g in by_leaf(fabric, hosts) for i in range(0, len(g) - 1, 2)]
    if same:
        rounds.append(same)
    uncovered = {lk.id for plane in fabric.planes for leaf in plane.leaves() for lk in plane.uplinks(leaf.guid)}
    while uncovered and len(rounds) < MAX_ROUNDS:
        round_ = _cover_round(fabric, hosts, uncovered)
        if not round_:
            break
        for server, client in round_:
            uncovered -= _cables(fabric, client, server)
        rounds.append(round_)
    return rounds


def _cables(fabric: Fabric, client: str, server: str) -> set[str]:
    """Leaf-spine cables the flow client -> server uses on every plane."""
    out: set[str] = set()
    for plane in fabric.planes:
        if plane.hca_of(client) and plane.hca_of(server):
            out |= {lk.id for lk in plane.route(client, server)[1:-1]}
    return out


def _cover_round(fabric: Fabric, hosts: list[str], uncovered: set[str]) -> list[Pair]:
    """Disjoint cross-leaf pairs, greedily the ones that cover most uncovered cables."""
    plane = fabric.planes[0]
    leaf = {h: getattr(plane.hca_of(h), "leaf", "") for h in hosts}
    candidates = []
    for client in hosts:
        for server in hosts:
            if client != server and leaf[client] != leaf[server]:
                gain = len(_cables(fabric, client, server) & uncovered)
                if gain:
                    candidates.append((gain, client, server))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    busy: set[str] = set()
    left = set(uncovered)
    round_: list[Pair] = []
    for _gain, client, server in candidates:
        cables = _cables(fabric, client, server) & left
        if client in busy or server in busy or not cables:
            continue
        round_.append((server, client))
        busy |= {client, server}
        left -= cables
    return round_
