"""Baseline for the localization bench: NVIDIA Cluster Readiness Engine's adaptive fault isolation.

As its documentation describes the ``testScale: diagnose`` mode
(https://docs.nvidia.com/cluster-readiness-engine/how-to-guides/adaptive-fault-isolation): screening, then
the failing pool split in half and each half re-run, the failing half bisected again until a single node
or a domain boundary is isolated (at most log2(N) further runs), a confirmation, and cross-boundary
probing of node pairs that span the boundary when a fault sits between two halves that each pass. Its
figure for the scheme, a design estimate of about 55 tests in 7 rounds at 232 nodes, is the issue's
(issue 23); the page gives the stages, not that count.

Mapped onto the bench's fat-tree, every test an NCCL all-reduce (ring in the order given):
  screen     round 1 a collective per leaf (intra-screening: no spine on any hop), round 2 rings of the
             j-th host of every leaf (inter-screening: every hop crosses a spine);
  bisect     each failing group's halves in the next round (every failing group's together); a failing
             group of two goes to confirmation, host by host (a one-host half would run no network);
  boundary   when both halves pass, the two hops that joined them (last of one half -> first of the
             other, both ways) as 2-node collectives; each host of a failing pair goes to confirmation;
  confirm    a 2-node collective with a known-good partner (a host of a passing test; its own leaf first):
             low names the host.
Collectives cannot tell a node from its HCA or from a cable on its route, so it names nodes only; a
cable is never named. Tests of one round share no host (a test waits for the next round otherwise).
"""
from __future__ import annotations

THRESHOLD = 0.9


class Nvcre:
    """One run of the scheme against ``oracle`` (``_oracle.Oracle``) over ``leaves`` (hosts per leaf, in
    leaf order)."""

    def __init__(self, oracle, leaves: list[list[str]]):
        self.oracle, self.leaves = oracle, [list(v) for v in leaves if v]
        self.leaf_of = {h: i for i, v in enumerate(self.leaves) for h in v}
        self.good: set[str] = set()
        self.rounds: list[list[tuple[str, ...]]] = []
        self.named: set[tuple] = set()

    def _round(self, tests: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...], bool]]:
        """Run (stage, ring) tests at once; (stage, ring, failed) each; passing rings' hosts become good."""
        self.rounds.append([ring for _, ring in tests])
        out = []
        for stage, ring in tests:
            failed = self.oracle.collective(ring) < THRESHOLD
            if not failed:
                self.good.update(ring)
            out.append((stage, ring, failed))
        return out

    def run(self) -> tuple[int, int, set[tuple], list[list[tuple[str, ...]]]]:
        """(rounds, tests, named nodes, the rings of each round)."""
        intra = [("bisect", tuple(v)) for v in self.leaves if len(v) > 1]
        depth = max(len(v) for v in self.leaves)
        inter = [("bisect", tuple(v[j] for v in self.leaves if j < len(v))) for j in range(depth)]
        inter = [t for t in inter if len(t[1]) > 1]
        pending = [t for t in self._round(intra) if t[2]]
        pending += [t for t in self._round(inter) if t[2]]
        todo = [(stage, ring) for stage, ring, _ in pending]
        while todo:
            todo = self._step(todo)
        tests = sum(len(r) for r in self.rounds)
        return len(self.rounds), tests, self.named, self.rounds

    def _step(self, todo: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...]]]:
        """One round of bisections, boundary pairs and confirmations; what is left for the next."""
        tests, later, halves = self._plan(todo)
        if not tests:  # only confirmations without a partner left: they stay unnamed
            return []
        results = self._round(tests)
        failed_halves = {ring for stage, ring, f in results if stage == "half" and f}
        for stage, ring, failed in results:
            if stage == "half" and failed:
                later.append(("bisect", ring))
            elif stage == "half" and ring < halves[ring] and halves[ring] not in failed_halves:
                other = halves[ring]  # both halves passed: the fault sits on a hop that joined them
                later += [("boundary", (ring[-1], other[0])), ("boundary", (other[-1], ring[0]))]
            elif stage == "boundary" and failed:
                later += [("confirm", (h,)) for h in ring]
            elif stage == "confirm" and failed:
                self.named.add(("node", ring[1]))
        return _unique(later)

    def _plan(self, todo):
        """(this round's (stage, ring) tests, what waits, each half -> its other half)."""
        busy: set[str] = set()
        tests, later, halves = [], [], {}
        todo = [(s, r) for stage, ring in todo  # a group of two: confirm each (a one-host half runs no network)
                for s, r in ([("confirm", (h,)) for h in ring] if stage == "bisect" and len(ring) <= 2
                             else [(stage, ring)])]
        for stage, ring in todo:
            if stage == "confirm" and ("node", ring[0]) in self.named:
                continue
            partner = self._partner(ring[0], busy) if stage == "confirm" and ring[0] not in busy else None
            if busy & set(ring) or (stage == "confirm" and partner is None):
                later.append((stage, ring))
            elif stage == "confirm":
                tests.append(("confirm", (partner, ring[0])))
                busy.update((partner, ring[0]))
            elif stage == "boundary":
                tests.append(("boundary", ring))
                busy.update(ring)
            else:
                half = (len(ring) + 1) // 2
                a, b = ring[:half], ring[half:]
                halves[a], halves[b] = b, a
                tests += [("half", a), ("half", b)]
                busy.update(ring)
        return tests, later, halves

    def _partner(self, host: str, busy: set[str]) -> str | None:
        same = [h for h in self.leaves[self.leaf_of[host]] if h in self.good and h not in busy and h != host]
        if same:
            return same[0]
        return next((h for v in self.leaves for h in v if h in self.good and h not in busy and h != host), None)


def _unique(items: list) -> list:
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
