"""The cluster procedure: discover the fabric, run IB pairs by schedule, localize what is slow.

For each group of hosts sharing a hardware profile with InfiniBand HCAs (two or more):
1. ``fabric`` (ibnetdiscover per rail on the group's first host) gives the planes;
2. ``ib_pairs`` rounds by schedule (``provision.fabric.schedule``: quick or full), each round's
   pairs at once;
3. adaptive localization (``provision.fabric.localize``): rounds of ``nccl_cluster`` groups
   (mpirun), ``ib_pairs`` pairs and probes (a pair test then a 2-node all-reduce on the same
   hosts), until the localizer has its suspects;
4. one ``localize`` result naming each suspect (node, HCA or cable) with its evidence.
Tests of steps 2-3 are evidence: they blame no host themselves (``CheckResult.evidence``).
Ratios given to the localizer are measured / lower bound x ``localize.THRESHOLD``, so a test
passes for the localizer exactly when it passes its reference.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable

from provision.checks import faults, registry
from provision.checks.base import Scope
from provision.checks.fabric import planes as fabric_planes
from provision.checks.ib_write_bw import hca_names
from provision.engine.jobs import Job
from provision.engine.scheduler import Scheduler
from provision.errors import ParseError, ProvisionError
from provision.fabric import localize, schedule
from provision.fabric.model import Fabric, width_speed_for
from provision.results.events import Planned
from provision.results.model import FABRIC, CheckResult, Finding, Outcome

PROCEDURE = ("fabric", "ib_pairs", "nccl_cluster")  # checks this procedure runs (never planned statically)
LOCALIZE = "localize"  # the id of the procedure's verdict (not a registered check: it runs no tool)
THRESHOLD = 0.9  # what the localizer counts as passing; ratios are scaled so it equals each test's lower bound
# What a degraded width or speed in ibnetdiscover is worth as evidence for one cable: the port
# itself reports it (man ibnetdiscover), as sure as one isolating bandwidth test (localize.SINGLE).
DISCOVERY_WEIGHT = 0.95
SUSPECT_FAULTS = {"node": "SUSPECT_NODE", "hca": "SUSPECT_HCA", "cable": "SUSPECT_CABLE"}


class Procedure:
    """The cluster procedure over ``burnin``'s hosts; ``record`` sees each result as it ends."""

    def __init__(self, burnin, schedule_name: str, record: Callable[[CheckResult], None] | None,
                 node_results: list[CheckResult] | None = None):
        self.burnin, self.schedule_name, self.record = burnin, schedule_name, record
        # A host a node-scope check failed or could not judge stays out: the multi-node tests would only
        # rediscover it, and every group it joined would be slow or broken (Azure and SuperBench test
        # across nodes only after the single-node checks pass).
        self.excluded = {r.hosts[0]: f"{r.check} {r.outcome.value}" for r in node_results or []
                         if r.scope is Scope.NODE and r.outcome in (Outcome.FAIL, Outcome.ERROR)}
        checks = registry()
        self.fabric_check, self.pair_check, self.group_check = (checks[c] for c in PROCEDURE)
        self.results: list[CheckResult] = []
        self.groups: list[dict] = []

    def run(self) -> tuple[list[CheckResult], dict]:
        for profile_name, hosts in self._groups().items():
            ready = [h for h in hosts if h not in self.excluded]
            if len(ready) >= 2 and not self.burnin.control.stop.is_set():
                self._group(profile_name, ready, {h: self.excluded[h] for h in hosts if h in self.excluded})
        return self.results, {"groups": self.groups}

    def _groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, state in self.burnin.states.items():
            if state.profile is not None and state.profile.has("hca") and state.profile.has("gpu"):
                out.setdefault(state.profile.name, []).append(name)
        return out

    def _keep(self, result: CheckResult) -> CheckResult:
        self.results.append(result)
        if self.record:
            self.record(result)
        return result

    def _round(self, jobs: list[Job]) -> list[CheckResult]:
        self.burnin.control.emit(Planned(dict(Counter(job.check.id for job in jobs))))  # the console's totals
        out = Scheduler(self.burnin.execute, lambda job: job.hosts, self.burnin.workers).run(
            jobs, stop=self.burnin.control.stop, not_run=self.burnin._not_run)
        for result in out:
            if result.check != "fabric":
                result.evidence = True
            self._keep(result)
        return out

    def _group(self, profile_name: str, hosts: list[str], excluded: dict[str, str]) -> None:
        entry: dict = {"profile": profile_name, "hosts": hosts, "schedule": self.schedule_name, "rounds": [],
                       "suspects": [], "rounds_total": 0, "excluded": excluded}
        self.groups.append(entry)
        found = self._round([Job(self.fabric_check, tuple(hosts))])[0]
        fabric = self._fabric(found, hosts)
        if fabric is None:
            entry["error"] = f"no fabric to route by: {found.message}"
            return
        entry["fabric"] = fabric.to_dict()
        profile = self.burnin.states[hosts[0]].judged_by
        devices = hca_names(profile)
        pairs = schedule.full(fabric, hosts) if self.schedule_name == "full" else schedule.quick(fabric, hosts)
        for number, round_ in enumerate(pairs, 1):
            results = self._round([Job(self.pair_check, pair, f"round{number}") for pair in round_])
            tests = [localize.Test("pair", pair, "schedule") for pair in round_]
            obs = [self._observe(t, [r], profile, devices) for t, r in zip(tests, results)]
            entry["rounds"].append({"round": number, "phase": f"ib_pairs {self.schedule_name}",
                                    "tests": [_test_row(o) for o in obs]})
        self._localize(entry, fabric, hosts, profile, devices)

    def _localize(self, entry: dict, fabric: Fabric, hosts: list[str], profile, devices: list[str]) -> None:
        finder = localize.Localizer(fabric, hosts, threshold=THRESHOLD, first_round=len(entry["rounds"]) + 1)
        while not self.burnin.control.stop.is_set() and (tests := finder.next_round()):
            tag = f"round{len(entry['rounds']) + 1}"
            jobs = [job for t in tests for job in self._jobs(t, tag)]
            results = iter(self._round(jobs))
            obs = [self._observe(t, [next(results) for _ in self._jobs(t, tag)], profile, devices) for t in tests]
            finder.observe(obs)
            entry["rounds"].append({"round": len(entry["rounds"]) + 1, "phase": "localize",
                                    "tests": [_test_row(o) for o in obs]})
        entry["rounds_total"] = len(entry["rounds"])
        suspects, unknown = settle_twins(finder.suspects(), fabric, profile), finder.unknown()
        entry["suspects"] = [_suspect_row(s) for s in suspects]
        entry["unknown"] = {"hosts": list(unknown["hosts"]),
                            "cables": [{"rail": r, "id": cid} for r, cid in unknown["cables"]]}
        self._keep(_localize_result(tuple(hosts), suspects, entry["rounds_total"], self.burnin.control.stop.is_set(),
                                    entry["unknown"]))
        unjudged = _unjudged(unknown, [(f"{s.host} " if s.host else "") + _describe(s) for s in suspects])
        if unjudged is not None and not self.burnin.control.stop.is_set():
            self._keep(unjudged)

    def _jobs(self, test, tag: str) -> list[Job]:
        """A group: one all-reduce; a pair: one ib_pairs job; a probe: the pair, then a 2-node all-reduce."""
        hosts = tuple(test.hosts)
        if test.kind == "group":
            return [Job(self.group_check, hosts, tag)]
        if test.kind == "pair":
            return [Job(self.pair_check, hosts, tag)]
        return [Job(self.pair_check, hosts, tag), Job(self.group_check, hosts, tag)]

    def _fabric(self, found: CheckResult, hosts: list[str]) -> Fabric | None:
        if found.outcome is Outcome.ERROR or not found.raw:
            return None
        try:
            parsed = {raw.key: self.fabric_check.parse(self.burnin.rundir.read(raw.path, "fabric"))
                      for raw in found.raw}
            planes = fabric_planes(parsed)
        except (ParseError, ProvisionError):
            return None
        return Fabric([planes[key] for key in parsed])

    def _observe(self, test, results: list[CheckResult], profile, devices: list[str]):
        errors = [r.message for r in results if r.outcome is Outcome.ERROR]
        ratio, rails = None, {}
        for r in results:
            for f in r.findings:
                if f.reference is None or f.metric not in ("busbw_GBps", "bw_avg_Gbps"):
                    continue
                low = f.reference.bounds()[0] or f.reference.value
                value = float(f.value) / low * THRESHOLD if low else 0.0  # type: ignore[arg-type]
                if f.metric == "busbw_GBps":
                    ratio = value
                elif f.device in devices:
                    rails[devices.index(f.device)] = value
        return localize.Observation(test, ratio, rails, "; ".join(errors))


def settle_twins(suspects: list, fabric: Fabric, profile) -> list:
    """A cable suspect traffic cannot tell from its twins (``Suspect.alternatives``: on a two-leaf
    tree leaf A's j-th uplink and leaf B's j-th carry the same routes) is settled by the fabric
    discovery when exactly one of them runs below the expected width and speed: ibnetdiscover
    names it, and it becomes the suspect (its confidence combined with that evidence)."""
    try:
        expected = width_speed_for(float(profile["hca"]["rate_Gbps"]))
    except (KeyError, TypeError, ValueError):
        return suspects
    degraded = {(p.name, lk.id): lk.width_speed for p in fabric.planes for lk in p.degraded(expected)}
    for s in suspects:
        if s.kind != "cable" or not s.alternatives or not s.cable:
            continue
        seen = [c for c in [s.cable, *s.alternatives] if (c["plane"], c["id"]) in degraded]
        if len(seen) == 1:
            s.cable, s.alternatives = seen[0], []
            s.evidence = [*s.evidence, {"test": "ibnetdiscover", "width_speed": degraded[(seen[0]["plane"],
                                                                                       seen[0]["id"])],
                                        "expected": expected}]
            s.confidence = 1 - (1 - s.confidence) * (1 - DISCOVERY_WEIGHT)
    return suspects


def _test_row(obs) -> dict:
    row = {"kind": obs.test.kind, "purpose": obs.test.purpose, "hosts": list(obs.test.hosts), "ratio": obs.ratio,
           "rail_ratios": {str(k): round(v, 4) for k, v in obs.rail_ratios.items()}}
    if obs.ratio is not None:
        row["ratio"] = round(obs.ratio, 4)
    if obs.error:
        row["error"] = obs.error
    return row


def _suspect_row(s) -> dict:
    return {"kind": s.kind, "host": s.host, "rail": s.rail, "device": s.device, "cable": s.cable,
            "alternatives": list(getattr(s, "alternatives", [])), "evidence": list(s.evidence),
            "confidence": round(float(s.confidence), 3)}


def _describe(s) -> str:
    if s.kind == "cable" and s.cable:
        text = " or ".join(f"cable {c.get('leaf')}[{c.get('leaf_port')}] <-> {c.get('spine')}[{c.get('spine_port')}] "
                           f"({c.get('plane')})" for c in [s.cable, *getattr(s, "alternatives", [])])
        return text
    if s.kind == "hca":
        return f"{s.device} (rail {s.rail})"
    return "node"


def _localize_result(hosts: tuple[str, ...], suspects, rounds: int, stopped: bool, unknown: dict) -> CheckResult:
    """The procedure's verdict: fail naming each suspect, and each leaf-spine cable that carried no
    traffic (a fabric finding: it fails the run, not a node); error when stopped."""
    findings = [Finding(device=_describe(s), metric="suspect_confidence", value=round(float(s.confidence), 3),
                        ok=False, fault=SUSPECT_FAULTS[s.kind], action=_action(SUSPECT_FAULTS[s.kind]),
                        host=s.host or FABRIC, detail=_evidence_text(s)) for s in suspects]
    if stopped:
        return CheckResult(LOCALIZE, hosts, Outcome.ERROR, f"interrupted after {rounds} rounds",
                           scope=Scope.CLUSTER, findings=findings, run_error=True)
    untested = "FABRIC_CABLE_UNTESTED"
    findings += [Finding(device=f"cable {c['id']} (rail {c['rail']})", metric="carried_traffic", value=False,
                         ok=False, expected=True, fault=untested, action=_action(untested), host=FABRIC)
                 for c in unknown["cables"]]
    named = "; ".join(f"{f.host} {f.device}" for f in findings if f.fault != untested) or "no suspect"
    message = f"{len(suspects)} suspects in {rounds} rounds: {named}"
    if unknown["cables"]:
        message += f"; {len(unknown['cables'])} leaf-spine cables carried no traffic"
    return CheckResult(LOCALIZE, hosts, Outcome.FAIL if findings else Outcome.PASS, message, scope=Scope.CLUSTER,
                       findings=findings)


def _unjudged(unknown: dict, suspects: list[str]) -> CheckResult | None:
    """An error on the hosts localization could not judge, on them alone, saying why for each:
    ``unknown`` is ``Localizer.unknown()``, ``suspects`` the named suspects' descriptions."""
    if not unknown["hosts"]:
        return None
    why = unknown.get("why", {})
    by: dict[str, list[str]] = {}
    for h in unknown["hosts"]:
        by.setdefault(why.get(h, "errors"), []).append(h)
    masked = f" ({'; '.join(suspects[:3])})" if suspects else ""
    texts = {"errors": "their cluster tests kept failing to run",
             "masked": f"their tests fell below reference, but no test told them apart from the suspects named"
                       f"{masked}: rerun once those are fixed",
             "untested": "no test with a known-good partner ran"}
    message = "not judged: " + "; ".join(f"{', '.join(hs)}: {texts[k]}" for k, hs in by.items())
    return CheckResult(LOCALIZE, tuple(unknown["hosts"]), Outcome.ERROR, message, scope=Scope.CLUSTER,
                       run_error=True)


def _evidence_text(s) -> str:
    parts = []
    for e in list(s.evidence)[:4] + [e for e in s.evidence[4:] if e.get("test") == "ibnetdiscover"]:
        if e.get("test") == "ibnetdiscover":
            parts.append(f"ibnetdiscover: {e['width_speed']}, expected {e['expected']}")
            continue
        short = e.get("shortfall_pct")
        rail = f" rail {e['rail']}" if e.get("rail") is not None else ""
        parts.append(f"round {e.get('round')} {e.get('test')} {'+'.join(e.get('hosts') or [])}{rail}"
                     + (f" -{short}%" if short is not None else ""))
    return "; ".join(parts)


def _action(code: str) -> str:
    return faults.action(code)
