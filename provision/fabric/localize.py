"""Adaptive fault localization for a cluster burn-in: which node, which HCA (rail), which leaf-spine cable.

Pure: plans tests and reads their ratios (measured / expected); running them is the caller's job.

Components and evidence. A test touches *components*: ``("node", host)``, ``("hca", host, rail)`` and
``("cable", rail, link_id)`` (leaf-spine cables only; HCA cables go with their HCA). Each test yields
*channels*, each a set of components with one ratio: a ``group`` (NCCL all-reduce, ring in the order
given, over all rails) touches its hosts' nodes, every rail's HCAs and the cables on each ring hop's
route; a ``pair`` (``ib_write_bw`` client ``hosts[1]`` -> server ``hosts[0]``) gives per rail that
rail's two HCAs and the cables of the client->server route (no node: a slow GPU does not slow RDMA);
a ``probe`` is both, the collective being a ring of the two hosts. A channel at or above ``threshold``
*clears* its components; below, it is a *failing set*. A component is *named* when it is the only
uncleared member of a failing set. Errors and missing values clear nothing: such hosts stay unknown.

Node phase. Round 1 screens leaf groups (hosts on the same leaf in every plane: a ring among them
touches no leaf-spine cable, so a failure is a node or an HCA). A failing group of more than
``PROBE_MAX`` hosts is halved and both halves run in the next round, every failing group's halves
together; a failing group of 2-3 hosts has each host probed with its own known-good partner (node
and every HCA cleared; same leaf first, so no cable is involved): collective low with every rail
passing names the node, a low rail names that HCA, all passing is a false alarm (the host is cleared).
A partner on another leaf (its own leaf has no healthy host free) puts cables on the collective's two
routes, so the probe then runs its way back too (a pair test partner -> host: both routes' cables and
the HCAs cleared, a low collective still names the node); a probe left ambiguous all the same (a cable
on its routes below the threshold) is run once more (``REPROBES``) with a partner whose routes carry no
suspect cable, its own leaf's first.
Bound: a leaf group of G hosts (G <= 32 on an NDR radix-64 leaf) holding faults is resolved in
ceil(log2 G) group rounds plus one probe round, so one bad node among N is named within
log2(N)+1 rounds; faults in other groups go in parallel and two faults within 2(log2(N)+1) (only a
probe waiting for a partner, when a leaf has no healthy host left, adds rounds).

Cable phase. From round 2, hosts already known good and idle fill the round with cross-leaf pair
tests chosen so that every leaf-spine cable of every plane carries traffic in some round (routes from
``Plane.route``, D-mod-k); a failing route's cables that no passing route cleared are then re-tested
one at a time on routes whose other cable is cleared. The tests of one round share no cable in the
same direction, so no test slows another. A leaf with fewer hosts than its uplinks need (the last,
part-filled leaf of 1,250 nodes: 2 hosts, 32 uplinks) makes its hosts *fans*: each the client of several
pair tests in one round, to distinct servers, which the engine runs one after another at line rate (a
host's jobs never overlap), so that every leaf's uplinks have carried traffic by round ``1 + COVER_ROUNDS``
and localization stays within log2(N)+1 rounds (the fan's pair tests cost wall time, not rounds: two
hosts can load only two uplinks at a time). Where no cable has a twin (three leaves or more), cover pairs of
known-good hosts run chained as rings (``RING`` pairs in one collective, the hops joining them covering
more cables): a ring below the threshold has only cables uncleared, re-tested by pairs in the next round
(routes through two suspects allowed when no clean one is left: a pass clears both). Left over at the
end, a cable shared by two or more unexplained failing routes is named by parsimony (one bad cable
explains both).

Confidence of a suspect: ``1 - prod(1 - s_e / m_e)`` over the failing channels e that contain it,
``m_e`` = the channel's components still uncleared (1 when it alone explains the failure), ``s_e`` =
``SINGLE * min(1, (threshold - ratio) / MARGIN)`` (a ratio just under the threshold says little).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from provision.fabric.model import Fabric, Link

# A failing ratio this far under the threshold is taken as a sure failure: 2.5x the +-2% run-to-run
# spread of a healthy bandwidth test that the bench assumes (bench/localize.py).
MARGIN = 0.05
# What one isolating measurement is worth at most: a single run can still be a transient (another job on
# the fabric, a throttling GPU), so a suspect needs two failing channels to pass 0.99.
SINGLE = 0.95
# A failing group this small is probed host by host rather than halved again (issue text: "2-3 hosts").
PROBE_MAX = 3
# Tests a cable may be planned in before it is given up as unknown (its tests kept erroring).
TRIES = 3
# Probe errors after which a host is given up as unknown (one retry with another partner).
PROBE_ERRORS = 2
# Probes again of a host whose probe left it ambiguous (a cross-leaf partner's route uncleared): one, with a
# partner whose routes carry no suspect cable, is enough when at most one cable is bad.
REPROBES = 1
# Candidate routes examined per target cable and round: bounds planning at O(cables x SCAN) route look-ups
# (the bench's 1,250 hosts: ~20k a round); the first route covering two new cables ends the scan anyway.
SCAN = 16
# Rounds in which the cable phase should have carried traffic over every leaf-spine cable: from round 2
# (round 1 screens) to round 5, inside the 6 rounds the node phase takes on a 32-host leaf (a radix-64
# NDR leaf: ceil(log2 32) - 1 halvings down to PROBE_MAX, a screen and a probe), leaving rounds for re-tests
# before log2(N)+1. A leaf with fewer hosts than this asks of them (the last, part-filled leaf of 1,250 nodes:
# 2 hosts, 32 uplinks) gets fans: one host the client of several pair tests in a round.
COVER_ROUNDS = 4
# Cover pairs chained into one ring (a collective of 2 x RING known-good hosts): 8 pairs carry 16 flows, up
# to 32 cable crossings a rail, in one test instead of 8; a low ring's cables are re-tested in the next
# round, all at once (distinct hosts), so a bad cable costs one round and a few more tests, not a ring per cable.
RING = 8

KINDS = ("group", "pair", "probe")



def expected_rounds(hosts: int, per_leaf: int, uplinks: int | None = None) -> int:
    """Rounds of screening and localization (``Localizer``, the cluster procedure's ``localize`` phase) on
    a fat-tree of ``hosts`` hosts filling leaves of ``per_leaf`` (the last leaf holds the rest) with
    ``uplinks`` leaf-spine cables per leaf (default ``per_leaf``: non-blocking), when each leaf group holds
    at most one faulty host: the node phase's screen, its halvings down to ``PROBE_MAX`` hosts and a probe
    round, or the cable phase's cover (by round ``1 + COVER_ROUNDS`` with fans, sooner where a leaf's hosts
    outnumber its uplinks) and a re-test round, whichever is longer. Two faults in one group add a round or
    two. Matches ``bench/localize.py``'s mean rounds (6 at 128 to 1,250 hosts on radix-64 leaves of 32;
    4 at 16 hosts, two leaves of 8). Raises ValueError on fewer than 2 hosts or a leaf of none."""
    if hosts < 2 or per_leaf < 1:
        raise ValueError(f"need 2 or more hosts on leaves of 1 or more, got {hosts} hosts, {per_leaf} per leaf")
    per_leaf = min(per_leaf, hosts)
    group, halvings = per_leaf, 0
    while group > PROBE_MAX:
        group, halvings = -(-group // 2), halvings + 1
    node = 2 + halvings
    if hosts <= per_leaf:  # one leaf: no leaf-spine cable to cover
        return node
    smallest = hosts % per_leaf or per_leaf
    cover = 1 + min(COVER_ROUNDS, -(-(uplinks if uplinks is not None else per_leaf) // smallest)) + 1
    return max(node, cover)

@dataclass(frozen=True)
class Test:
    """One job: ``kind`` group | pair | probe; ``hosts`` in ring order (pair/probe: server, client);
    ``purpose`` screen | bisect | confirm | cable."""

    kind: str
    hosts: tuple[str, ...]
    purpose: str


@dataclass(frozen=True)
class Observation:
    """What one ``Test`` gave: ``ratio`` the collective's busbw measured/expected (None: not measured),
    ``rail_ratios`` rail index -> ib_write_bw measured/expected; ``error`` non-empty when it could not run."""

    test: Test
    ratio: float | None
    rail_ratios: dict[int, float] = field(default_factory=dict)
    error: str = ""


@dataclass
class Suspect:
    """A named fault: ``kind`` node | hca | cable; ``evidence`` the failing channels that contain it
    (round, test, hosts, ratio, rail for a pair channel, shortfall_pct = 100 x (1 - ratio));
    ``confidence`` 0..1 (module docstring). ``alternatives``: cables (same dict shape as ``cable``) that
    carry exactly the routes ``cable`` carries, so that no traffic tells them apart (module docstring)."""

    kind: str
    host: str | None
    rail: int | None
    device: str | None
    cable: dict | None
    evidence: list[dict]
    confidence: float
    alternatives: list[dict] = field(default_factory=list)


@dataclass
class _Fail:
    comps: frozenset
    ev: dict


class Routes:
    """Leaf-spine cable ids of ``Plane.route`` (its HCA cables dropped), memoised per (rail, source leaf,
    destination): under D-mod-k the uplink depends only on the destination (model docstring), so every
    host of a leaf shares its routes. One instance may serve many Localizers of the same fabric."""

    def __init__(self, fabric: Fabric):
        self.fabric = fabric
        self._planes = fabric.planes  # each memoises its uplinks (provision.fabric.model.Plane)
        self._leaf = [{h.host: h.leaf for h in p.hcas if h.host} for p in fabric.planes]
        self._rep: list[dict[str, str]] = [{} for _ in fabric.planes]  # rail -> leaf -> a host on it
        for rail, leaves in enumerate(self._leaf):
            for host, leaf in leaves.items():
                self._rep[rail].setdefault(leaf, host)
        self._mid: dict[tuple, tuple[str, ...]] = {}
        self._users: dict[int, dict[str, list[tuple[str, str]]]] = {}
        self._cables = [{lk.id: lk for lk in p.links if not lk.self_loop and lk.a in p.switches
                         and lk.b in p.switches} for p in fabric.planes]

    def leaf(self, rail: int, host: str) -> str | None:
        return self._leaf[rail].get(host)

    def cables(self, rail: int) -> dict[str, Link]:
        """The plane's leaf-spine cables by ``Link.id``."""
        return self._cables[rail]

    def middle(self, rail: int, src: str, dst: str) -> tuple[str, ...]:
        """Cable ids of src->dst between the two HCA cables: () on one leaf, else (leaf->spine, spine->leaf).
        Raises KeyError for a host not on the plane."""
        key = (rail, self._leaf[rail][src], dst)
        mid = self._mid.get(key)
        if mid is None:
            mid = self._mid[key] = tuple(lk.id for lk in self._planes[rail].route(src, dst)[1:-1])
        return mid

    def users(self, rail: int, link_id: str) -> list[tuple[str, str]]:
        """(source leaf, destination host) of every route on ``rail`` through the cable; built for the
        whole plane on first use (leaves x hosts routes)."""
        if rail not in self._users:
            index: dict[str, list[tuple[str, str]]] = {}
            for leaf, rep in self._rep[rail].items():
                for dst, dst_leaf in self._leaf[rail].items():
                    if dst_leaf != leaf:
                        for cid in self.middle(rail, rep, dst):
                            index.setdefault(cid, []).append((leaf, dst))
            self._users[rail] = index
        return self._users[rail].get(link_id, [])


class Localizer:
    """Plans rounds of tests over ``hosts`` (each on every plane of ``fabric``) and names faults from
    their observations. ``threshold``: pass when measured/expected >= it. ``routes``: a shared ``Routes``
    (default: a new one). ``first_round``: the run's number for this localizer's first round (rounds of the
    pair schedule come before it), which the evidence quotes. Raises ValueError on a threshold outside
    (0, 1] or a host missing from a plane."""

    def __init__(self, fabric: Fabric, hosts: list[str], threshold: float = 0.9, routes: Routes | None = None,
                 first_round: int = 1):
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        for plane in fabric.planes:
            missing = [h for h in hosts if plane.hca_of(h) is None]
            if missing:
                raise ValueError(f"hosts without an HCA on plane {plane.name}: {', '.join(missing[:5])}")
        self.fabric, self.hosts, self.threshold = fabric, list(hosts), threshold
        self.routes = routes or Routes(fabric)
        self.rails = range(len(fabric.planes))
        self.rounds: list[list[Observation]] = []
        self._offset = first_round - 1  # added to this localizer's round numbers where the evidence quotes them
        self.node_phase_rounds = 0  # the last round that ran a group or a probe
        self._cleared: set[tuple] = set()
        self._fails: list[_Fail] = []
        self._good: set[str] = set()
        self._unknown: set[str] = set()
        self._flaky: set[str] = set()
        self._probe: list[str] = []
        self._probe_errors: dict[str, int] = {}
        self._probed: dict[str, int] = {}  # host -> probes planned for it
        self._covered: set[tuple] = set()
        self._tries: dict[tuple, int] = {}
        self._planned: list[Test] | None = None
        self._key = {h: tuple(self.routes.leaf(r, h) for r in self.rails) for h in self.hosts}
        self._on_leaf: dict[tuple, list[str]] = {}
        for h in self.hosts:
            for r in self.rails:
                self._on_leaf.setdefault((r, self.routes.leaf(r, h)), []).append(h)
        self._idle: dict[tuple, list[str]] = {}  # per round: (rail, leaf) -> idle known-good hosts
        self._fans: dict[str, int] = {}  # per round: client host -> further flows it may send (a fan)
        self._fan_size: dict[tuple, int] = {}  # per round: leaf group -> flows a client of it may send
        self._fan_on: dict[tuple, list[str]] = {}  # per round: (rail, leaf) -> clients with flows to spare
        self._groups = self._screen_groups()
        # Cover rings where a ring's cables can be told apart: on two leaves every cable has a twin carrying
        # the same routes, so a low ring would leave all of them suspect (``_rings``).
        self._ring_ok = all(len(p.leaves()) > 2 for p in fabric.planes)

    # -- planning -------------------------------------------------------------------------------
    def _screen_groups(self) -> list[Test]:
        by_key: dict[tuple, list[str]] = {}
        for h in self.hosts:
            by_key.setdefault(self._key[h], []).append(h)
        groups = [tuple(v) for v in by_key.values() if len(v) > 1]
        lone = [v[0] for v in by_key.values() if len(v) == 1]
        if len(lone) > 1:  # hosts alone on their leaf share one ring; its cables are then in play
            groups.append(tuple(lone))
        else:
            self._probe += lone
        return [Test("group", g, "screen") for g in groups]

    def next_round(self) -> list[Test]:
        """The tests of the next round (disjoint hosts, no cable used twice in one direction); the same
        list until ``observe``; [] when nothing is left to learn."""
        if self._planned is None:
            busy: set[str] = set()
            dirs: set[tuple] = set()
            tests, self._groups = self._groups, []
            for t in tests:
                busy.update(t.hosts)
            tests += self._plan_probes(busy, dirs)
            tests += self._plan_cables(busy, dirs)
            self._planned = tests
        return list(self._planned)

    def _plan_probes(self, busy: set[str], dirs: set[tuple]) -> list[Test]:
        tests, waiting = [], []
        named, open_sets = self._explain()
        suspect = {c for u in open_sets for c in u if c[0] == "cable"} | {c for c in named if c[0] == "cable"}
        for s in self._probe:
            g = self._partner(s, busy, dirs, suspect)
            if g is None:
                waiting.append(s)
                continue
            tests.append(Test("probe", (g, s), "confirm"))
            if self._cables_between(g, s):  # the way back too: cables cleared, a low collective names the node
                tests.append(Test("pair", (s, g), "confirm"))
            self._probed[s] = self._probed.get(s, 0) + 1
            busy.update((g, s))
            self._claim(dirs, g, s)
            self._claim(dirs, s, g)
        self._probe = waiting
        return tests

    def _partner(self, s: str, busy: set[str], dirs: set[tuple], suspect: set[tuple]) -> str | None:
        """A known-good idle host: on ``s``'s leaves if any, else one whose two routes are free this round,
        all their cables cleared if any is, else none suspect if any is, else any."""
        def ok(h: str) -> bool:
            return h != s and h in self._good and h not in busy and h not in self._flaky
        same = [h for h in self._on_leaf.get((0, self._key[s][0]), []) if self._key[h] == self._key[s]]
        for h in same:
            if ok(h):
                return h
        best, rank = None, 3
        for h in self.hosts:
            if ok(h) and not (self._keys(s, h) & dirs) and not (self._keys(h, s) & dirs):
                cables = self._cables_between(s, h)
                r = 0 if cables <= self._cleared else 1 if not cables & suspect else 2
                if r < rank:
                    best, rank = h, r
                    if r == 0:
                        break
        return best

    def _cables_between(self, a: str, b: str) -> set[tuple]:
        """The leaf-spine cables of a->b and b->a on every rail."""
        return {("cable", r, cid) for r in self.rails for x, y in ((a, b), (b, a))
                for cid in self.routes.middle(r, x, y)}

    def _keys(self, src: str, dst: str) -> set[tuple]:
        """Directed cable uses of src->dst on every rail: (rail, link id, 0 up | 1 down)."""
        return {(r, cid, i) for r in self.rails for i, cid in enumerate(self.routes.middle(r, src, dst))}

    def _claim(self, dirs: set[tuple], src: str, dst: str) -> None:
        dirs.update(self._keys(src, dst))

    def _plan_cables(self, busy: set[str], dirs: set[tuple]) -> list[Test]:
        named, open_sets = self._explain()
        pool = {h for h in self.hosts if (h in self._good or self._pair_usable(h, named))
                and h not in busy and h not in self._flaky}
        if len(pool) < 2:
            return []
        self._idle = {k: [h for h in reversed(v) if h in pool] for k, v in self._on_leaf.items()}
        self._fan_size = self._fan_sizes(pool)
        self._fans, self._fan_on = {}, {}
        suspect = {c for u in open_sets for c in u if c[0] == "cable"} | {c for c in named if c[0] == "cable"}
        retest = sorted(c for c in suspect - named if self._tries.get(c, 0) < TRIES)
        cover = [("cable", r, cid) for r in self.rails for cid in sorted(self.routes.cables(r))
                 if ("cable", r, cid) not in self._covered and self._tries.get(("cable", r, cid), 0) < TRIES]
        planned: set[tuple] = set()
        tests, ringable = [], []
        for target in retest + cover:
            if target in planned:
                continue
            best = self._best_pair(target, target in suspect, pool, dirs, suspect, planned)
            if best is None:
                continue
            client, server, cables = best
            tests.append(Test("pair", (server, client), "cable"))
            if target not in suspect and client in pool and client in self._good and server in self._good:
                ringable.append(tests[-1])
            self._take(client, server, pool)
            self._claim(dirs, client, server)
            planned.update(cables)
            for c in cables:
                self._tries[c] = self._tries.get(c, 0) + 1
        if not self._ring_ok:
            return tests
        return self._rings(tests, [t for t in ringable if self._fans.get(t.hosts[1], 0) == self._fan_size.get(
            self._key[t.hosts[1]], 1) - 1], dirs, suspect)

    def _take(self, client: str, server: str, pool: set[str]) -> None:
        """A cover pair's hosts leave the pool; the client, on its first flow, may take more as a fan."""
        pool.discard(server)
        if client in pool:
            pool.discard(client)
            self._fans[client] = self._fan_size.get(self._key[client], 1) - 1
            for r in self.rails:
                if self._fans[client]:
                    self._fan_on.setdefault((r, self._key[client][r]), []).append(client)
        else:
            self._fans[client] -= 1

    def _rings(self, tests: list[Test], ringable: list[Test], dirs: set[tuple], suspect: set[tuple]) -> list[Test]:
        """Cover pairs of known-good hosts (no re-test, no fan) chained into rings of up to ``RING`` pairs,
        client1 -> server1 -> client2 -> ... -> serverK -> client1: one collective carries K pairs' flows
        and the hops joining them (each free this round and clear of suspect cables); its hosts' nodes
        and HCAs cleared, a low ring puts only its cables in a failing set, which re-tests then split."""
        chains: list[list[Test]] = []
        joins: set[tuple] = set()
        for t in ringable:
            for ring in [c for c in chains if len(c) < RING][-4:]:  # the open rings, newest last
                first, last = ring[0].hosts[1], ring[-1].hosts[0]
                old_close = self._keys(last, first)
                hops = (self._keys(last, t.hosts[1]), self._keys(t.hosts[0], first))
                cables = self._cables_of(last, t.hosts[1]) | self._cables_of(t.hosts[0], first)
                if not (hops[0] | hops[1]) & (dirs | (joins - old_close)) and not hops[0] & hops[1] \
                        and not cables & suspect:
                    joins = (joins - old_close) | hops[0] | hops[1]
                    ring.append(t)
                    break
            else:
                close = self._keys(t.hosts[0], t.hosts[1])
                if not close & (dirs | joins) and not self._cables_of(t.hosts[0], t.hosts[1]) & suspect:
                    joins |= close
                    chains.append([t])  # else it stays a pair
        rings = [c for c in chains if len(c) > 1]
        dirs |= {k for c in rings for k in self._ring_keys(c)}
        ringed = {t for c in rings for t in c}
        return [t for t in tests if t not in ringed] + [
            Test("group", tuple(h for t in c for h in (t.hosts[1], t.hosts[0])), "cable") for c in rings]

    def _ring_keys(self, chain: list[Test]) -> set[tuple]:
        ring = [h for t in chain for h in (t.hosts[1], t.hosts[0])]
        return {k for i, a in enumerate(ring) for k in self._keys(a, ring[(i + 1) % len(ring)])}

    def _cables_of(self, src: str, dst: str) -> set[tuple]:
        return {("cable", r, cid) for r in self.rails for cid in self.routes.middle(r, src, dst)}

    def _fan_sizes(self, pool: set[str]) -> dict[tuple, int]:
        """Flows a client host of each leaf group may send this round, one after another: enough for the
        group's idle hosts to carry a flow over each of its leaves' uncovered uplinks by round
        ``1 + COVER_ROUNDS`` (at least 1). A flow leaves a leaf on one uplink per rail, so the busiest rail counts."""
        left = max(1, 1 + COVER_ROUNDS - len(self.rounds))
        idle: dict[tuple, int] = {}
        for h in pool:
            idle[self._key[h]] = idle.get(self._key[h], 0) + 1
        out = {}
        for key, n in idle.items():
            todo = max(sum(1 for lk in self.fabric.plane_of(r).uplinks(leaf)
                           if ("cable", r, lk.id) not in self._covered) for r, leaf in zip(self.rails, key))
            out[key] = max(1, -(-todo // (n * left)))
        return out

    def _pair_usable(self, h: str, named: set[tuple]) -> bool:
        """A host a pair test can use although it is a suspect: each of its HCAs cleared or itself named
        (a slow node does not slow RDMA; a named HCA explains its own rail's failure). Only pair tests
        then count on it; it is never a probe partner."""
        return h not in self._unknown and all(("hca", h, r) in self._cleared or ("hca", h, r) in named
                                              for r in self.rails)

    def _best_pair(self, target: tuple, retest: bool, pool: set[str], dirs: set[tuple], suspect: set[tuple],
                   planned: set[tuple]) -> tuple[str, str, list[tuple]] | None:
        """The idle known-good (client, server) whose route carries ``target`` and the most untested
        cables, none suspect but the target, no direction already used this round."""
        _, rail, cid = target
        users = self.routes.users(rail, cid)
        best, best_score, seen = None, 0.0, 0
        start = (len(self.rounds) * 7919) % max(1, len(users))  # another route each round (a prime stride)
        for k in range(len(users)):
            src_leaf, server = users[(start + k) % len(users)]
            client = self._idle_on(rail, src_leaf, pool, server) if server in pool else None
            if client is None:
                continue
            seen += 1
            scored = self._score(client, server, target, retest, dirs, suspect, planned)
            if scored is not None and scored[0] > best_score:
                best, best_score = (client, server, scored[1]), scored[0]
                if best_score >= 2 * len(self.rails) + (4 if retest else 0):
                    break
            if seen >= SCAN:
                break
        return best

    def _idle_on(self, rail: int, leaf: str, pool: set[str], other: str) -> str | None:
        """An idle host on ``leaf``, else a client of this round with flows to spare (a fan)."""
        idle = self._idle.get((rail, leaf), [])
        while idle and idle[-1] not in pool:  # drop hosts taken since (lists run in reverse leaf order)
            idle.pop()
        for h in reversed(idle[-2:]):
            if h in pool and h != other:
                return h
        for h in self._fan_on.get((rail, leaf), ()):
            if self._fans[h] > 0 and h != other:
                return h
        return None

    def _score(self, client: str, server: str, target: tuple, retest: bool, dirs: set[tuple],
               suspect: set[tuple], planned: set[tuple]) -> tuple[float, list[tuple]] | None:
        """(new cables carried, + 3 for a re-test whose other cables are all cleared; the cables), or None
        when the route is unusable. A re-test may carry other suspects (none planned this round) where no
        route is clean, scored below any clean one: every route through a low cover ring's cables may
        cross another of them, and a test of two suspects still halves what is left."""
        if self._keys(client, server) & dirs:
            return None
        cables = [("cable", r, cid) for r in self.rails for cid in self.routes.middle(r, client, server)]
        others = [c for c in cables if c in suspect and c != target]
        if target not in cables or (others and not (retest and self._ring_ok)) or any(c in planned for c in others):
            return None
        new = sum(1 for c in cables if c not in self._covered and c not in planned)
        clean = all(c == target or c in self._cleared for c in cables)
        return new + (3 if retest and clean else 0) + (1 / (1 + len(others)) if retest else 0), cables

    # -- observing ------------------------------------------------------------------------------
    def observe(self, observations: list[Observation]) -> None:
        """Record one round. A planned test missing from ``observations`` counts as an error."""
        rnd = len(self.rounds) + 1
        self.rounds.append(list(observations))
        seen = {o.test for o in observations}
        missing = [Observation(t, None, {}, "not observed") for t in self._planned or [] if t not in seen]
        self._planned = None
        failed = []
        for obs in list(observations) + missing:
            if obs.error or (obs.test.kind == "group" and obs.ratio is None):
                self._on_error(obs)
            elif self._record(obs, rnd) and obs.test.kind == "group" and obs.test.purpose != "cable":
                failed.append(obs.test)  # a cover ring's hosts are known good: its cables are re-tested
        for obs in observations:
            for h in obs.test.hosts:
                if self._host_cleared(h) and h not in self._unknown:
                    self._good.add(h)
        for t in failed:
            self._split(t)
        self._reprobe()
        if any(o.test.purpose != "cable" for o in observations):
            self.node_phase_rounds = rnd

    def _reprobe(self) -> None:
        """Probe again, once, a host whose probe failed with cables of its partner's routes uncleared and no
        named suspect explaining it (its partner was on another leaf): its partner next time is one whose
        routes carry no suspect cable."""
        named = self._explain()[0]
        for f in self._fails:
            if f.ev["test"] != "probe":
                continue
            host = f.ev["hosts"][1]
            unc = f.comps - self._cleared
            if len(unc) > 1 and not unc & named and self._probed.get(host, 0) < 1 + REPROBES \
                    and host not in self._probe and host not in self._unknown:
                self._probe.append(host)

    def _host_cleared(self, h: str) -> bool:
        return ("node", h) in self._cleared and all(("hca", h, r) in self._cleared for r in self.rails)

    def _split(self, t: Test) -> None:
        if len(t.hosts) <= PROBE_MAX:
            self._probe += [h for h in t.hosts if h not in self._probe]
        else:
            half = (len(t.hosts) + 1) // 2
            self._groups += [Test("group", t.hosts[:half], "bisect"), Test("group", t.hosts[half:], "bisect")]

    def _on_error(self, obs: Observation) -> None:
        """Nothing is cleared. A group is halved (bisection finds the host that cannot run); a probe's
        host is retried once with another partner, then left unknown; a pair's hosts leave the pool."""
        t = obs.test
        if t.kind == "group" and t.purpose == "cable":
            self._flaky.update(t.hosts)
        elif t.kind == "group":
            self._split(t)
        elif t.kind == "probe":
            partner, s = t.hosts
            self._flaky.add(partner)
            self._probe_errors[s] = self._probe_errors.get(s, 0) + 1
            if self._probe_errors[s] >= PROBE_ERRORS:
                self._unknown.add(s)
            elif s not in self._probe:
                self._probe.append(s)
        else:
            self._flaky.update(t.hosts)

    def _record(self, obs: Observation, rnd: int) -> bool:
        """Clear or fail each channel of a test that ran; True when one failed."""
        t, failed = obs.test, False
        if t.kind in ("group", "probe") and obs.ratio is not None:
            ev = {"round": rnd + self._offset, "test": t.kind, "hosts": list(t.hosts), "ratio": obs.ratio}
            comps = self._ring_comps(t.hosts)
            self._covered |= {c for c in comps if c[0] == "cable"}
            failed |= self._channel(comps, obs.ratio, ev)
        if t.kind in ("pair", "probe"):
            server, client = t.hosts
            for rail, ratio in sorted(obs.rail_ratios.items()):
                if rail not in self.rails or ratio is None:
                    continue
                cables: set[tuple] = {("cable", rail, cid) for cid in self.routes.middle(rail, client, server)}
                self._covered |= cables
                ev = {"round": rnd + self._offset, "test": t.kind, "hosts": list(t.hosts), "rail": rail,
                      "ratio": ratio}
                failed |= self._channel({("hca", server, rail), ("hca", client, rail)} | cables, ratio, ev)
        return failed

    def _ring_comps(self, ring: tuple[str, ...]) -> set[tuple]:
        comps: set[tuple] = {("node", h) for h in ring} | {("hca", h, r) for h in ring for r in self.rails}
        hops = [(a, ring[(i + 1) % len(ring)]) for i, a in enumerate(ring)] if len(ring) > 1 else []
        for a, b in hops:
            for r in self.rails:
                comps |= {("cable", r, cid) for cid in self.routes.middle(r, a, b)}
        return comps

    def _channel(self, comps: set[tuple], ratio: float, ev: dict) -> bool:
        if ratio >= self.threshold:
            self._cleared |= comps
            return False
        ev["shortfall_pct"] = round(100 * (1 - ratio), 1)
        self._fails.append(_Fail(frozenset(comps), ev))
        return True

    # -- conclusions ----------------------------------------------------------------------------
    def _explain(self) -> tuple[set[tuple], list[frozenset]]:
        """(components named as the sole uncleared member of a failing set, the failing sets' uncleared
        parts that no named component explains)."""
        named: set[tuple] = set()
        rest = []
        for f in self._fails:
            unc = f.comps - self._cleared
            if len(unc) == 1:
                named |= unc
            elif unc:
                rest.append(unc)
        return named, [u for u in rest if not u & named]

    def _parsimony(self, open_sets: list[frozenset]) -> set[tuple]:
        """Cables each shared by two or more distinct unexplained failing sets, greedily (most shared first)."""
        named: set[tuple] = set()
        distinct = set(open_sets)
        while True:
            counts: dict[tuple, int] = {}
            for u in distinct:
                if not u & named:
                    for c in u:
                        if c[0] == "cable":
                            counts[c] = counts.get(c, 0) + 1
            if not counts or max(counts.values()) < 2:
                return named
            named.add(max(sorted(counts), key=lambda c: counts[c]))

    def _equivalent(self, comps: frozenset) -> bool:
        """All cables, carrying the very same routes (a two-leaf fabric pairs leaf A's j-th cable to a
        spine with leaf B's j-th: every route through one runs through the other)."""
        if any(c[0] != "cable" for c in comps):
            return False
        users = {frozenset(self.routes.users(c[1], c[2])) for c in comps}
        return len(users) == 1 and len({c[1] for c in comps}) == 1

    def suspects(self) -> list[Suspect]:
        """Named faults, sorted by kind, host, rail, cable: sole explanations, cables named by parsimony,
        and one suspect per set of cables that traffic cannot tell apart (``alternatives``)."""
        named, open_sets = self._explain()
        named |= self._parsimony(open_sets)
        out = [self._suspect(c) for c in sorted(named, key=lambda c: tuple(map(str, c)))]
        for comps in sorted({u for u in open_sets if not u & named and self._equivalent(u)}, key=sorted):
            first, *rest = sorted(comps)
            s = self._suspect(first)
            s.alternatives = [self._cable(c[1], c[2]) for c in rest]
            out.append(s)
        return out

    def _suspect(self, comp: tuple) -> Suspect:
        evidence, miss = [], 1.0
        for f in self._fails:
            if comp in f.comps:
                evidence.append(dict(f.ev))
                s = SINGLE * min(1.0, max(0.0, (self.threshold - f.ev["ratio"]) / MARGIN))
                miss *= 1 - s / max(1, len(f.comps - self._cleared))
        conf = round(1 - miss, 4)
        if comp[0] == "node":
            return Suspect("node", comp[1], None, None, None, evidence, conf)
        if comp[0] == "hca":
            hca = self.fabric.plane_of(comp[2]).hca_of(comp[1])
            return Suspect("hca", comp[1], comp[2], hca.device if hca else None, None, evidence, conf)
        return Suspect("cable", None, comp[1], None, self._cable(comp[1], comp[2]), evidence, conf)

    def _cable(self, rail: int, link_id: str) -> dict:
        plane = self.fabric.plane_of(rail)
        lk = self.routes.cables(rail)[link_id]
        a_leaf = plane.switches[lk.a].role == "leaf"
        leaf, leaf_port, spine, spine_port = (lk.a, lk.a_port, lk.b, lk.b_port) if a_leaf else \
            (lk.b, lk.b_port, lk.a, lk.a_port)
        return {"plane": plane.name, "id": lk.id, "leaf": leaf, "leaf_port": leaf_port, "spine": spine,
                "spine_port": spine_port, "width_speed": lk.width_speed}

    def unknown(self) -> dict:
        """What the run could not judge: ``hosts`` neither cleared nor named, and why, as ``why``: {host:
        "errors" (its tests kept failing to run), "masked" (it ran tests below reference that a named
        suspect explains as well, so none tells them apart) or "untested" (no test with a known-good
        partner ran)}; ``cables`` leaf-spine cables that no route of a finished test carried, as (rail,
        link id)."""
        named = {c[1] for c in self._explain()[0] if c[0] != "cable"}
        hosts = [h for h in self.hosts if h not in named and (h in self._unknown or not self._host_cleared(h))]
        failed = {h for f in self._fails for h in f.ev.get("hosts", ())}
        why = {h: "errors" if h in self._unknown else "masked" if h in failed else "untested" for h in hosts}
        cables = [(r, cid) for r in self.rails for cid in sorted(self.routes.cables(r))
                  if ("cable", r, cid) not in self._covered]
        return {"hosts": hosts, "why": why, "cables": cables}
