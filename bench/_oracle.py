"""In-process oracle for the localization bench: observations computed from injected faults.

A hop src->dst on a rail runs at the slowest of the two HCAs on that rail and the leaf-spine cables of
its route (``Plane.route``, through the localizer's ``Routes`` memo, which a unit test checks against
``Plane.route`` for every pair). A collective (ring in host order, all rails) runs at the slowest hop
of any rail, and at the slowest node (a node factor slows collectives only, never ib_write_bw). A pair
gives per rail its client->server hop. Healthy results carry +-``noise`` uniform noise (2%: the bench's
assumption of run-to-run spread). A host in ``dead`` makes every test it is in an error.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from provision.fabric.localize import Observation, Routes, Test


@dataclass
class Faults:
    """Factors (measured/expected) of the slow parts: ``nodes`` host -> f, ``hcas`` (host, rail) -> f,
    ``cables`` (rail, link id) -> f; ``dead`` hosts whose tests cannot run."""

    nodes: dict[str, float] = field(default_factory=dict)
    hcas: dict[tuple[str, int], float] = field(default_factory=dict)
    cables: dict[tuple[int, str], float] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)

    def truth(self) -> set[tuple]:
        """The faults as localizer components."""
        return ({("node", h) for h in self.nodes} | {("hca", h, r) for h, r in self.hcas}
                | {("cable", r, c) for r, c in self.cables})


class Oracle:
    """Runs ``Test``s against ``faults`` on ``routes.fabric``; ``rails`` = the fabric's planes."""

    def __init__(self, routes: Routes, faults: Faults, noise: float = 0.02, seed: int = 0):
        self.routes, self.faults, self.noise = routes, faults, noise
        self.rails = range(len(routes.fabric.planes))
        self.rng = random.Random(seed)
        self._bad_hosts = set(faults.nodes) | {h for h, _ in faults.hcas}
        self._cable_users = {(leaf, dst, r) for r, cid in faults.cables for leaf, dst in routes.users(r, cid)}
        self.check = True  # run_round's contention check

    def _jitter(self) -> float:
        return 1 + self.rng.uniform(-self.noise, self.noise)

    def hop(self, rail: int, src: str, dst: str) -> float:
        f = self.faults
        worst = min(f.hcas.get((src, rail), 1.0), f.hcas.get((dst, rail), 1.0))
        if f.cables:
            for cid in self.routes.middle(rail, src, dst):
                worst = min(worst, f.cables.get((rail, cid), 1.0))
        return worst

    def collective(self, ring: tuple[str, ...]) -> float:
        worst = min(self.faults.nodes.get(h, 1.0) for h in ring)
        for i, a in enumerate(ring):
            b = ring[(i + 1) % len(ring)]
            if a != b:
                worst = min(worst, min(self.hop(r, a, b) for r in self.rails))
        return worst * self._jitter()

    def pair_fails(self, a: str, b: str) -> bool:
        """Whether a 2-host collective of a and b touches a fault: the same verdict as ``collective``
        whenever faults are at most 0.8 and noise under 10% of the threshold (the bench's), far cheaper."""
        f = self.faults
        if a in self._bad_hosts or b in self._bad_hosts:
            return True
        return any((self.routes.leaf(r, a), b, r) in self._cable_users
                   or (self.routes.leaf(r, b), a, r) in self._cable_users for r in self.rails) if f.cables else False

    def run(self, test: Test) -> Observation:
        if any(h in self.faults.dead for h in test.hosts):
            return Observation(test, None, {}, "host unreachable")
        ratio = self.collective(test.hosts) if test.kind in ("group", "probe") else None
        rails = {}
        if test.kind in ("pair", "probe"):
            server, client = test.hosts
            rails = {r: self.hop(r, client, server) * self._jitter() for r in self.rails}
        return Observation(test, ratio, rails)

    def run_round(self, tests: list[Test]) -> list[Observation]:
        """Observations of one round; AssertionError when two tests share a host or a directed cable
        (concurrent tests would then slow each other, which this oracle does not model). Tests the
        engine runs one after another may share hosts: a fan (a client of several pair tests, in no test of
        another kind and no test's server) and a probe's way back (the pair test on its two hosts)."""
        hosts: set[str] = set()
        clients: set[str] = set()
        probes = {frozenset(t.hosts) for t in tests if t.kind == "probe"}
        dirs: set[tuple] = set()
        for t in tests if self.check else []:
            if t.kind == "pair" and frozenset(t.hosts) in probes:
                continue  # its flow is one of the probe's ring, already counted
            fan = t.kind == "pair" and t.hosts[1] in clients
            assert not hosts & set(t.hosts[:1] if fan else t.hosts), f"host in two tests of one round: {t}"
            hosts.update(t.hosts)
            if t.kind == "pair":
                clients.add(t.hosts[1])
            for a, b in _flows(t):
                for r in self.rails:
                    keys = {(r, cid, i) for i, cid in enumerate(self.routes.middle(r, a, b))}
                    assert not keys & dirs, f"cable used twice in one direction: {t}"
                    dirs |= keys
        return [self.run(t) for t in tests]


def _flows(t: Test) -> list[tuple[str, str]]:
    """The directed host pairs a test sends over: ring hops, and a pair's client->server."""
    if t.kind == "pair":
        return [(t.hosts[1], t.hosts[0])]
    ring = t.hosts
    return [(a, ring[(i + 1) % len(ring)]) for i, a in enumerate(ring) if len(ring) > 1]
