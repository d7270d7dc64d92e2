"""Bench: adaptive localization (provision.fabric.localize) against NVIDIA's adaptive scheme and three
pairwise schemes.

Prints figures, never passes or fails. Fabric: ``synth.fat_tree``, NDR radix 64, one plane (faults on
rail 0; a pair test covers every plane at once, so more planes change costs, not rounds), ceil(N / 32)
leaves (16 and 32 hosts: two leaves of N/2) filled in host order at ceil(N / leaves) hosts a leaf, the
last holding the rest, with as many uplinks, spines the fewest that divide 32 and fit 64 ports: 232 = 8
leaves of 29; 1,250 = 39 leaves of 32 and a part-filled one of 2 hosts with all 32 uplinks cabled (as a
scalable unit's leaf is before its racks arrive). Faults placed at random per trial: bad nodes (factor
U(0.5, 0.8): a throttled GPU, PCIe at half width), a bad HCA (0.5: link trained at 2x or HDR), one bad
leaf-spine cable (0.25 or 0.5: trained at 1x or 2x, which ibnetdiscover reads too).

Schemes:
  localize     ours, as the cluster procedure runs it: the localizer's suspects, a cable that traffic cannot
               tell from its twin (two-leaf fabrics: leaf A's j-th uplink and leaf B's carry the same
               routes under D-mod-k) settled by the fabric discovery's width (``settle_twins``).
  nvcre-diag   NVIDIA Cluster Readiness Engine's diagnose mode (screen, bisect, confirm, probe the
               boundary between two passing halves; bench/_nvcre.py), all-reduce tests, names nodes.
Every test of the three pairwise baselines a 2-node all-reduce (a slow node, HCA or cable on either
direction's route fails it; they cannot tell node from HCA, so they name nodes only):
  round-robin  SuperBench's pair-wise pattern, every pair once in N-1 rounds (circle method;
               https://github.com/microsoft/superbenchmark, superbench/common/utils/gen_traffic_pattern_config.py);
               a node is named when more than half its pairs fail.
  imbue-15     random re-pairing for 15 rounds (https://imbue.com/research/70b-infrastructure/);
               named when it failed in more than half its rounds.
  chs-2pass    random pairs, then each node of a failed pair re-paired with a node of a passed pair
               (Cluster Health Scanner's NCCL check, https://github.com/GoogleCloudPlatform/cluster-health-scanner);
               named when it fails both passes.
Healthy tests never fail here (noise 2% < 1 - threshold), so round-robin is counted from the tests that
touch a fault only (its N(N-1)/2 tests would not fit the run time), which gives the same verdicts.

Wall time: the sum over rounds of the round's longest chain of tests (tests sharing a host run one
after another, as the engine's scheduler runs them: a fan's pair tests, a probe and its way back). A
collective over n hosts: ``--launch-s`` (mpirun start and NCCL init: an assumption, measure on site)
plus (iters + warmup) x the sweep's bytes x 2(n-1)/n / busbw, busbw = the profile's HCAs x rate (the
all_reduce_perf sweep of the profile's nccl_allreduce row; small sizes' latency, well under a second,
left out). A pair: per HCA, one after another as the ib_write_bw check's steps run
(provision/engine/burnin.py), the profile's duration_s plus ``--setup-s`` (perftest connection set-up;
an assumption). A probe: a pair plus a 2-host collective. Precision and recall count exact components
(kind, host, rail, cable); a cable suspect with alternatives left counts each alternative as named.
``R_host``: faulty hosts named under any kind.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _nvcre import Nvcre  # noqa: E402
from _oracle import Faults, Oracle  # noqa: E402
from provision import profiles  # noqa: E402
from provision.engine.cluster import settle_twins  # noqa: E402
from provision.fabric.localize import Localizer, Routes, expected_rounds  # noqa: E402
from provision.profiles import Profile  # noqa: E402
from provision.sim.synth import fat_tree  # noqa: E402

SIZES = (16, 32, 64, 128, 232, 256, 512, 1024, 1250)
CONFIGS = {"1n+1c": (1, 0), "2n+1c": (2, 0), "3n+1c": (3, 0), "1h+1c": (0, 1)}  # (bad nodes, bad HCAs)
PER_LEAF, RADIX = 32, 64  # NDR QM9700: 64 ports, half down, half up (non-blocking)
IMBUE_ROUNDS = 15  # the figure for Imbue's random re-pairing
THRESHOLD = 0.9
CHECKED = 20  # trials per cell whose rounds are checked for shared hosts and cables (the check costs ~15%)


def build(n: int):
    per_leaf = PER_LEAF if n >= 2 * PER_LEAF else n // 2
    leaves = math.ceil(n / per_leaf)
    ups = per_leaf
    spines = next(d for d in range(2, ups + 1) if ups % d == 0 and leaves * ups // d <= RADIX)
    hosts = [f"n{i:04d}" for i in range(n)]
    return hosts, fat_tree(hosts, leaves=leaves, spines=spines, width_speed="4xNDR")


class Durations:
    """Seconds per test from the profile (module docstring)."""

    def __init__(self, profile: Profile, launch_s: float, setup_s: float):
        p = profile.required_reference("nccl_allreduce", "busbw_GBps").params
        sizes, b = [], p["min_bytes"]
        while b <= p["max_bytes"]:
            sizes.append(b)
            b *= p["step_factor"]
        self.sweep_bytes = sum(sizes) * (p["iters"] + p["warmup_iters"])
        self.busbw_Bps = profile.hca.count * (profile.hca.rate_Gbps or 0) * 1e9 / 8
        ib = profile.required_reference("ib_write_bw", "bw_avg_Gbps").params
        self.pair_s = profile.hca.count * (ib["duration_s"] + setup_s)
        self.launch_s = launch_s
        self.profile = profile

    def group(self, n: int) -> float:
        return self.launch_s + self.sweep_bytes * 2 * (n - 1) / n / self.busbw_Bps

    def round(self, tests) -> float:
        """A round's seconds: its longest chain, a fan's pair tests running one after another (the
        engine's scheduler runs jobs sharing a host in series)."""
        busy: dict[str, float] = {}
        for t in tests:
            for h in t.hosts:
                busy[h] = busy.get(h, 0.0) + self.test(t)
        return max(busy.values(), default=0.0)

    def test(self, t) -> float:
        if t.kind == "pair":
            return self.pair_s
        return self.group(len(t.hosts)) + (self.pair_s if t.kind == "probe" else 0)


def place(hosts, routes, rng, nodes: int, hcas: int) -> Faults:
    bad = rng.sample(hosts, nodes + hcas)
    cable = rng.choice(sorted(routes.cables(0)))
    return Faults(nodes={h: rng.uniform(0.5, 0.8) for h in bad[:nodes]},
                  hcas={(h, 0): 0.5 for h in bad[nodes:]}, cables={(0, cable): rng.choice((0.25, 0.5))})


def ours(fabric, hosts, routes, faults, seed, dur):
    loc = Localizer(fabric, hosts, THRESHOLD, routes=routes)
    oracle = Oracle(routes, faults, seed=seed)
    oracle.check = seed < CHECKED
    wall = tests = 0.0
    while tests_ := loc.next_round():
        loc.observe(oracle.run_round(tests_))
        wall += dur.round(tests_)
        tests += len(tests_)
    named = set()
    for s in discovered(loc.suspects(), fabric, faults, dur.profile):
        if s.kind == "cable":
            named |= {("cable", s.rail, c["id"]) for c in [s.cable, *s.alternatives]}
        else:
            named.add(("node", s.host) if s.kind == "node" else ("hca", s.host, s.rail))
    return len(loc.rounds), loc.node_phase_rounds, tests, wall, named


def discovered(suspects, fabric, faults, profile):
    """The suspects as the cluster procedure reports them: a cable that traffic cannot tell from its twins
    is settled by the fabric discovery (``settle_twins``), which reads each faulty cable at the width its
    factor implies (0.25: 1x, 0.5: 2x), as ibnetdiscover would."""
    if not any(s.alternatives for s in suspects):
        return suspects
    saved = []
    for (rail, cid), factor in faults.cables.items():
        links = fabric.plane_of(rail).links
        i = next(i for i, lk in enumerate(links) if lk.id == cid)
        saved.append((links, i, links[i]))
        links[i] = dataclasses.replace(links[i], width=f"{max(1, round(4 * factor))}x")
    try:
        return settle_twins(suspects, fabric, profile)
    finally:
        for links, i, lk in saved:
            links[i] = lk


def pair_fails(oracle, a, b) -> bool:
    return oracle.pair_fails(a, b)


def random_pairs(rng, hosts):
    order = rng.sample(hosts, len(hosts))
    return [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]


def imbue(hosts, oracle, rng):
    fails = dict.fromkeys(hosts, 0)
    for _ in range(IMBUE_ROUNDS):
        for a, b in random_pairs(rng, hosts):
            if pair_fails(oracle, a, b):
                fails[a] += 1
                fails[b] += 1
    rounds_in = IMBUE_ROUNDS * (len(hosts) // 2 * 2) / len(hosts)
    return IMBUE_ROUNDS, IMBUE_ROUNDS * (len(hosts) // 2), {("node", h) for h, f in fails.items() if f > rounds_in / 2}


def chs(hosts, oracle, rng):
    first = random_pairs(rng, hosts)
    failed = [h for a, b in first if pair_fails(oracle, a, b) for h in (a, b)]
    passed = [h for a, b in first if not pair_fails(oracle, a, b) for h in (a, b)]
    rng.shuffle(passed)
    named = set()
    for i, h in enumerate(failed):
        partner = passed[i] if i < len(passed) else failed[(i + 1) % len(failed)]
        if pair_fails(oracle, h, partner):
            named.add(("node", h))
    return 2, len(first) + len(failed), named


def round_robin(hosts, routes, faults, oracle, by_leaf):
    """Failing pairs only (module docstring): pairs with a faulty host, pairs whose routes cross the cable.
    ``by_leaf``: (rail, leaf) -> hosts."""
    bad_hosts = set(faults.nodes) | {h for h, _ in faults.hcas}
    failing = {frozenset((b, x)) for b in bad_hosts for x in hosts if x != b}
    for rail, cid in faults.cables:
        for src_leaf, dst in routes.users(rail, cid):
            for a in by_leaf[(rail, src_leaf)]:
                if a != dst and pair_fails(oracle, a, dst):
                    failing.add(frozenset((a, dst)))
    count = dict.fromkeys(hosts, 0)
    for p in failing:
        for h in p:
            count[h] += 1
    n = len(hosts)
    return n - 1 + n % 2, n * (n - 1) // 2, {("node", h) for h, c in count.items() if c > (n - 1) / 2}


def score(named: set, truth: set) -> tuple[int, int, int, int, int]:
    truth_hosts = {c[1] for c in truth if c[0] != "cable"}
    named_hosts = {c[1] for c in named if c[0] != "cable"}
    return len(named & truth), len(named), len(truth), len(truth_hosts & named_hosts), len(truth_hosts)


SCHEMES = ("localize", "nvcre-diag", "round-robin", "imbue-15", "chs-2pass")


def cell(n, config, trials, dur, fabric_cache):
    hosts, fabric, routes, by_leaf = fabric_cache
    leaves = list(by_leaf.values())  # rail 0's leaves, in host order (hosts fill leaves in order)
    nodes, hcas = CONFIGS[config]
    stats = {s: {"rounds": [], "node": [], "tests": [], "wall": [], "score": [0] * 5} for s in SCHEMES}
    for trial in range(trials):
        rng = random.Random(f"{n}/{config}/{trial}")
        faults = place(hosts, routes, rng, nodes, hcas)
        truth = faults.truth()
        oracle = Oracle(routes, faults, seed=trial)
        rounds, node_rounds, tests, wall, named = ours(fabric, hosts, routes, faults, trial, dur)
        _add(stats["localize"], rounds, tests, wall, score(named, truth), node_rounds)
        pair_s = dur.group(2)
        for name, (r, t, nm) in (("round-robin", round_robin(hosts, routes, faults, oracle, by_leaf)),
                                 ("imbue-15", imbue(hosts, oracle, rng)), ("chs-2pass", chs(hosts, oracle, rng))):
            _add(stats[name], r, t, r * pair_s, score(nm, truth))
        r, t, nm, rings = Nvcre(oracle, leaves).run()
        _add(stats["nvcre-diag"], r, t, sum(max(dur.group(len(x)) for x in rnd) for rnd in rings), score(nm, truth))
    return stats


def _add(st, rounds, tests, wall, sc, node_rounds=None):
    st["rounds"].append(rounds)
    st["tests"].append(tests)
    st["wall"].append(wall)
    if node_rounds is not None:
        st["node"].append(node_rounds)
    st["score"] = [a + b for a, b in zip(st["score"], sc)]


def row(n, config, scheme, st) -> str:
    tp, named, truth, host_tp, host_truth = st["score"]
    prec = tp / named if named else 1.0
    node = f"{max(st['node']):>4}" if st["node"] else "   -"
    return (f"{n:>5} {config:>6} {scheme:<11} {statistics.mean(st['rounds']):>7.1f} {max(st['rounds']):>5} {node} "
            f"{statistics.mean(st['tests']):>9.0f} {statistics.mean(st['wall']) / 3600:>7.2f} {prec:>6.3f} "
            f"{tp / truth:>6.3f} {host_tp / max(1, host_truth):>6.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--trials", type=int, default=200, help="trials per cell (default 200)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 10 trials, N up to 256")
    ap.add_argument("--profile", default="h100-sxm5-80g-ndr", help="profile whose test params time the tests")
    ap.add_argument("--launch-s", type=float, default=20.0, help="collective start-up seconds (assumption)")
    ap.add_argument("--setup-s", type=float, default=2.0, help="ib_write_bw set-up seconds per HCA (assumption)")
    args = ap.parse_args(argv)
    dur = Durations(profiles.load(args.profile), args.launch_s, args.setup_s)
    sizes, trials = (SIZES[:6], 10) if args.quick else (SIZES, args.trials)
    print(f"# profile {args.profile}: group(32) {dur.group(32):.0f} s, 2-host collective {dur.group(2):.0f} s, "
          f"pair {dur.pair_s:.0f} s ({dur.pair_s / 8:.0f} s x 8 HCAs); threshold {THRESHOLD}; {trials} trials/cell")
    print(f"{'N':>5} {'faults':>6} {'scheme':<11} {'rounds':>7} {'max':>5} {'node':>4} {'tests':>9} {'wall_h':>7} "
          f"{'P':>6} {'R':>6} {'R_host':>6}")
    start = time.time()
    for n in sizes:
        hosts, fabric = build(n)
        routes = Routes(fabric)
        routes.users(0, next(iter(routes.cables(0))))  # the whole plane's routes, once per fabric
        by_leaf: dict = {}
        for h in hosts:
            by_leaf.setdefault((0, routes.leaf(0, h)), []).append(h)
        sizes_ = sorted({len(v) for v in by_leaf.values()}, reverse=True)
        per_leaf = sizes_[0]
        print(f"# N={n}: {len(by_leaf)} leaves of {'/'.join(map(str, sizes_))} hosts, "
              f"{len(fabric.plane_of(0).spines())} spines; bound log2(N)+1 = {math.log2(n) + 1:.1f}; "
              f"expected_rounds {expected_rounds(n, per_leaf)}", flush=True)
        for config in CONFIGS:
            stats = cell(n, config, trials, dur, (hosts, fabric, routes, by_leaf))
            for scheme in SCHEMES:
                print(row(n, config, scheme, stats[scheme]), flush=True)
        print(f"# N={n} done at {time.time() - start:.0f} s; bound log2(N)+1 = {math.log2(n) + 1:.1f}",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
