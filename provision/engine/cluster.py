"""The cluster procedure: discover the fabric, run pair tests by schedule, localize what is slow.

Its checks are found by the role they declare (``provision.checks.base.Role``), never by id, so a
site's pair or group check (``PROVISION_CHECK_PATH``) with a role joins the schedule and the
localization like ours. For each group of hosts sharing a hardware profile with InfiniBand HCAs (two or more):
1. the fabric-discovery check (``fabric``: ibnetdiscover per rail on the group's first host) gives the planes;
2. pair-evidence checks (``ib_pairs``) on rounds of pairs by schedule (``provision.fabric.schedule``:
   quick or full), each round's pairs at once;
3. adaptive localization (``provision.fabric.localize``): rounds of group-evidence checks
   (``nccl_cluster``: mpirun) on groups, pair-evidence checks on pairs, and probes (the pair checks
   then the group checks on the same two hosts), until the localizer has its suspects;
4. one ``localize`` result naming each suspect (node, HCA or cable) with its evidence.
Tests of steps 2-3 are evidence: they blame no host themselves (``CheckResult.evidence``).
Ratios given to the localizer are measured / lower bound x ``localize.THRESHOLD``, so a test
passes for the localizer exactly when it passes its reference; with several checks of a role on
one test, the lowest ratio is the test's (per rail for pair checks).
The procedure reaches the engine only through ``provision.engine.procedure.Engine``.
"""
from __future__ import annotations

from collections.abc import Sequence

from provision.checks import Check, Role, faults, registry
from provision.checks.base import parse_outputs
from provision.engine.jobs import Job, by_name
from provision.engine.procedure import Engine
from provision.errors import ParseError, ProvisionError
from provision.fabric import discover, localize, schedule
from provision.fabric.model import Fabric, hca_names, width_speed_for
from provision.results.model import FABRIC, CheckResult, Finding, Outcome, Scope

LOCALIZE = "localize"  # the id of the procedure's verdict (not a registered check: it runs no tool)
THRESHOLD = 0.9  # what the localizer counts as passing; ratios are scaled so it equals each test's lower bound
# What a degraded width or speed in ibnetdiscover is worth as evidence for one cable: the port
# itself reports it (man ibnetdiscover), as sure as one isolating bandwidth test (localize.SINGLE).
DISCOVERY_WEIGHT = 0.95
SUSPECT_FAULTS = {"node": "SUSPECT_NODE", "hca": "SUSPECT_HCA", "cable": "SUSPECT_CABLE"}


def by_role(checks: Sequence[Check]) -> dict[Role, list[Check]]:
    """The procedure's checks among ``checks`` (every role, in the order given). Raises
    ProvisionError when two checks declare fabric discovery: a group has one fabric to route by."""
    out: dict[Role, list[Check]] = {role: [c for c in checks if c.data.role is role] for role in Role}
    if len(out[Role.FABRIC_DISCOVERY]) > 1:
        raise ProvisionError(f"checks {', '.join(c.id for c in out[Role.FABRIC_DISCOVERY])} all declare role "
                             f"{Role.FABRIC_DISCOVERY.value}: one fabric per group to route by")
    return out


def runs(checks: Sequence[Check]) -> bool:
    """Whether ``checks`` hold the whole procedure: a fabric discovery, pair and group evidence."""
    return all(by_role(checks).values())


def completed(selected: list[Check], registered: Sequence[Check]) -> list[Check]:
    """``selected`` plus, when it holds one of the procedure's checks, the registered checks of each
    role it lacks (asking for ``ib_pairs`` brings the fabric discovery and the group checks)."""
    roles = {c.data.role for c in selected if c.data.role is not None}
    if not roles:
        return selected
    return selected + [c for c in registered
                       if c.data.role is not None and c.data.role not in roles and c not in selected]


class Procedure:
    """The cluster procedure over ``engine``'s hosts, with the checks of ``checks`` that declare a
    role (None: every registered one); each result is recorded through the engine as it is kept."""

    def __init__(self, engine: Engine, schedule_name: str, node_results: list[CheckResult] | None = None,
                 checks: Sequence[Check] | None = None):
        self.engine, self.schedule_name = engine, schedule_name
        # A host a node-scope check failed or could not judge stays out: the multi-node tests would only
        # rediscover it, and every group it joined would be slow or broken (Azure and SuperBench test
        # across nodes only after the single-node checks pass).
        self.excluded = {r.hosts[0]: f"{r.check} {r.outcome.value}" for r in node_results or []
                         if r.scope is Scope.NODE and r.outcome in (Outcome.FAIL, Outcome.ERROR)}
        # So does every host of an NVLink domain its domain test failed or could not run (``Check.per_nvlink_domain``,
        # run before this procedure): NCCL carries traffic between trays of one domain over NVLink (MNNVL, on by
        # default where the fabric supports it: NCCL_MNNVL_ENABLE, NCCL's env documentation), so an InfiniBand test
        # over them would measure the degraded NVLink domain and blame an HCA or cable for it; which tray is at
        # fault the domain test cannot say, its failure names the domain. An error counts when its tools ran (NCCL
        # failed on the domain); one that never started them (no domain in the inventory) keeps the hosts in.
        per_domain = {c.id for c in registry().values() if c.placement.per_nvlink_domain}
        for r in node_results or []:
            if r.scope is Scope.GROUP and r.check in per_domain and (
                    r.outcome is Outcome.FAIL or (r.outcome is Outcome.ERROR and r.raw)):
                for h in r.hosts:
                    self.excluded.setdefault(h, f"{r.check} {r.outcome.value} on its NVLink domain")
        roles = by_role(list(registry().values()) if checks is None else checks)
        if not all(roles.values()):
            raise ProvisionError("the cluster procedure needs a check of each role: "
                                 + ", ".join(role.value for role, found in roles.items() if not found) + " missing")
        self.fabric_check = roles[Role.FABRIC_DISCOVERY][0]
        self.pair_checks, self.group_checks = roles[Role.PAIR_EVIDENCE], roles[Role.GROUP_EVIDENCE]
        self.checks = {c.id: c for found in roles.values() for c in found}
        self.results: list[CheckResult] = []
        self.groups: list[dict] = []

    def run(self) -> tuple[list[CheckResult], dict]:
        left_out: dict[str, str] = {}  # hosts of no group the procedure ran (report.json's cluster.left_out)
        for profile_name, hosts in self._groups().items():
            ready = [h for h in hosts if h not in self.excluded]
            if len(ready) >= 2 and not self.engine.stopped():
                self._group(profile_name, ready, {h: self.excluded[h] for h in hosts if h in self.excluded})
                continue
            for h in hosts:
                left_out[h] = (f"a node check did not pass ({self.excluded[h]})" if h in self.excluded else
                               "stopped before its group's tests" if len(ready) >= 2 else
                               f"alone: {len(ready)} host of profile {profile_name} ready in this run (or shard), "
                               "a pair test needs two")
        return self.results, {"groups": self.groups, **({"left_out": left_out} if left_out else {})}

    def _groups(self) -> dict[str, list[str]]:
        """Hosts by profile name, those whose profile the fabric discovery and some check of each
        evidence role apply to."""
        out: dict[str, list[str]] = {}
        for name in self.engine.hosts():
            profile = self.engine.profile(name)
            if profile is not None and _applies(self.fabric_check, profile) and all(self._for(profile)):
                out.setdefault(profile.name, []).append(name)
        return out

    def _for(self, profile) -> tuple[list[Check], list[Check]]:
        """The pair and the group checks that apply to ``profile``."""
        return ([c for c in self.pair_checks if _applies(c, profile)],
                [c for c in self.group_checks if _applies(c, profile)])

    def _keep(self, result: CheckResult) -> CheckResult:
        self.results.append(result)
        self.engine.record(result)
        return result

    def _round(self, jobs: list[Job]) -> list[CheckResult]:
        out = self.engine.run_round(jobs)
        for result in out:
            if result.check != self.fabric_check.id:
                result.evidence = True
            self._keep(result)
        return out

    def _group(self, profile_name: str, hosts: list[str], excluded: dict[str, str]) -> None:
        entry: dict = {"profile": profile_name, "hosts": hosts, "schedule": self.schedule_name, "rounds": [],
                       "suspects": [], "rounds_total": 0, "excluded": excluded}
        self.groups.append(entry)
        found = self._round([Job(self.fabric_check, tuple(hosts))])[0]
        fabric = self._fabric(found)
        if fabric is None:
            entry["error"] = f"no fabric to route by: {found.message}"
            return
        entry["fabric"] = fabric.to_dict()
        profile = self.engine.profile(hosts[0])
        rig = _Rig(*self._for(profile), hca_names(profile))
        pairs = schedule.full(fabric, hosts) if self.schedule_name == "full" else schedule.quick(fabric, hosts)
        phase = f"{'+'.join(c.id for c in rig.pair_checks)} {self.schedule_name}"
        for number, round_ in enumerate(pairs, 1):
            tests = [localize.Test("pair", pair, "schedule") for pair in round_]
            obs = self._run_tests(rig, tests, f"round{number}")
            entry["rounds"].append({"round": number, "phase": phase, "tests": [_test_row(o) for o in obs]})
        self._localize(entry, fabric, hosts, profile, rig)

    def _localize(self, entry: dict, fabric: Fabric, hosts: list[str], profile, rig: _Rig) -> None:
        finder = localize.Localizer(fabric, hosts, threshold=THRESHOLD, first_round=len(entry["rounds"]) + 1)
        while not self.engine.stopped() and (tests := finder.next_round()):
            obs = self._run_tests(rig, tests, f"round{len(entry['rounds']) + 1}")
            finder.observe(obs)
            entry["rounds"].append({"round": len(entry["rounds"]) + 1, "phase": "localize",
                                    "tests": [_test_row(o) for o in obs]})
        entry["rounds_total"] = len(entry["rounds"])
        suspects, unknown = settle_twins(finder.suspects(), fabric, profile), finder.unknown()
        entry["suspects"] = [_suspect_row(s) for s in suspects]
        entry["unknown"] = {"hosts": list(unknown["hosts"]),
                            "cables": [{"rail": r, "id": cid, "plane": fabric.planes[r].name}
                                       for r, cid in unknown["cables"]]}
        self._keep(_localize_result(tuple(hosts), suspects, entry["rounds_total"], self.engine.stopped(),
                                    entry["unknown"]))
        if not self.engine.stopped():
            for found in [_untested(tuple(hosts), entry["unknown"], entry["excluded"]),
                          *_unjudged(unknown, [(f"{s.host} " if s.host else "") + _describe(s) for s in suspects])]:
                if found is not None:
                    self._keep(found)

    def _run_tests(self, rig: _Rig, tests: list[localize.Test], tag: str) -> list[localize.Observation]:
        """One round: every test's jobs at once; an observation per test from its jobs' results."""
        jobs = [rig.jobs(t, tag) for t in tests]
        results = iter(self._round([job for js in jobs for job in js]))
        return [self._observe(t, [next(results) for _ in js], rig.devices) for t, js in zip(tests, jobs)]

    def _fabric(self, found: CheckResult) -> Fabric | None:
        if found.outcome is Outcome.ERROR or not found.raw:
            return None
        check = self.fabric_check
        try:
            texts = {raw.key: self.engine.read_raw(raw, check.id) for raw in found.raw}
            profile = self.engine.profile(found.hosts[0])
            parsed = parse_outputs(check, check.steps(profile, by_name(check, found.hosts)), texts)
            planes = discover.planes(parsed)
        except (ParseError, ProvisionError):
            return None
        return Fabric([planes[key] for key in parsed])

    def _observe(self, test: localize.Test, results: list[CheckResult], devices: list[str]) -> localize.Observation:
        """The test's ratios: a group check's measured metric (one its ``metrics`` declare) the
        collective's, a pair check's per rail (the finding's device names the HCA); the lowest where
        several checks measure one."""
        errors = [r.message for r in results if r.outcome is Outcome.ERROR]
        ratios: list[float] = []
        rails: dict[int, float] = {}
        for r in results:
            check = self.checks[r.check]
            for f in r.findings:
                if f.reference is None or f.metric not in check.data.metrics:
                    continue
                low = f.reference.bounds()[0] or f.reference.value
                value = float(f.value) / low * THRESHOLD if low else 0.0  # type: ignore[arg-type]
                if check.data.role is Role.GROUP_EVIDENCE:
                    ratios.append(value)
                elif f.device in devices:
                    rail = devices.index(f.device)
                    rails[rail] = min(value, rails.get(rail, value))
        return localize.Observation(test, min(ratios) if ratios else None, rails, "; ".join(errors))


class _Rig:
    """A group's evidence checks (those its profile has what they need for) and its rails (HCA names)."""

    def __init__(self, pair_checks: list[Check], group_checks: list[Check], devices: list[str]):
        self.pair_checks, self.group_checks, self.devices = pair_checks, group_checks, devices

    def jobs(self, test: localize.Test, tag: str) -> list[Job]:
        """A group: each group check; a pair: each pair check; a probe: the pair checks, then the group
        checks, on the same two hosts."""
        checks = {"group": self.group_checks, "pair": self.pair_checks}.get(test.kind,
                                                                            self.pair_checks + self.group_checks)
        return [Job(check, tuple(test.hosts), tag) for check in checks]


def _applies(check: Check, profile) -> bool:
    return all(profile.has(need) for need in check.placement.needs)


def settle_twins(suspects: list, fabric: Fabric, profile) -> list:
    """A cable suspect traffic cannot tell from its twins (``Suspect.alternatives``: on a two-leaf
    tree leaf A's j-th uplink and leaf B's j-th carry the same routes) is settled by the fabric
    discovery when exactly one of them runs below the expected width and speed: ibnetdiscover
    names it, and it becomes the suspect (its confidence combined with that evidence)."""
    try:
        expected = width_speed_for(float(profile.hca.rate_Gbps))
    except (TypeError, ValueError):
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
    """The procedure's verdict: fail naming each suspect (a cable suspect fails the run, not a node);
    error when stopped; else pass. What it could not test is ``_untested``'s, never a failure."""
    findings = [Finding(device=_describe(s), metric="suspect_confidence", value=round(float(s.confidence), 3),
                        ok=False, fault=SUSPECT_FAULTS[s.kind], action=_action(SUSPECT_FAULTS[s.kind]),
                        host=s.host or FABRIC, detail=_evidence_text(s)) for s in suspects]
    if stopped:
        return CheckResult(LOCALIZE, hosts, Outcome.ERROR, f"interrupted after {rounds} rounds",
                           scope=Scope.CLUSTER, findings=findings, run_error=True)
    named = "; ".join(f"{f.host} {f.device}" for f in findings) or "no suspect"
    return CheckResult(LOCALIZE, hosts, Outcome.FAIL if findings else Outcome.PASS,
                       f"{len(suspects)} suspects in {rounds} rounds: {named}", scope=Scope.CLUSTER, findings=findings)


UNTESTED_CABLE = "FABRIC_CABLE_UNTESTED"


def _untested(hosts: tuple[str, ...], unknown: dict, excluded: dict[str, str]) -> CheckResult | None:
    """A coverage gap (outcome untested, not a failure): each leaf-spine cable no test carried traffic over,
    with why (the hosts left out) and what closes it (the fault's action)."""
    if not unknown["cables"]:
        return None
    why = f"{len(excluded)} hosts left out ({', '.join(sorted(excluded))})" if excluded else "no route crossed them"
    findings = [Finding(device=f"cable {c['id']} (rail {c['rail']})", metric="carried_traffic", value=False,
                        ok=False, expected=True, fault=UNTESTED_CABLE, action=_action(UNTESTED_CABLE), host=FABRIC,
                        detail=why) for c in unknown["cables"]]
    return CheckResult(LOCALIZE, hosts, Outcome.UNTESTED, f"untested: {len(findings)} leaf-spine cables carried "
                       f"no traffic: {why}; close it: {_action(UNTESTED_CABLE)}", scope=Scope.CLUSTER,
                       findings=findings)


def _unjudged(unknown: dict, suspects: list[str]) -> list[CheckResult]:
    """The hosts localization could not judge, on them alone, saying why for each (``unknown`` is
    ``Localizer.unknown()``, ``suspects`` the named suspects' descriptions): an error for those whose tests
    kept failing to run or that no test told apart from a suspect; untested (a coverage gap) for those
    no test with a known-good partner ran for."""
    why = unknown.get("why", {})
    by: dict[str, list[str]] = {}
    for h in unknown["hosts"]:
        by.setdefault(why.get(h, "errors"), []).append(h)
    masked = f" ({'; '.join(suspects[:3])})" if suspects else ""
    texts = {"errors": "their cluster tests kept failing to run",
             "masked": f"their tests fell below reference, but no test told them apart from the suspects named"
                       f"{masked}: rerun once those are fixed",
             "untested": "no test with a known-good partner ran: rerun with more hosts passing their node checks"}
    out = []
    bad = [k for k in by if k != "untested"]
    if bad:
        out.append(CheckResult(LOCALIZE, tuple(h for k in bad for h in by[k]), Outcome.ERROR,
                               "not judged: " + "; ".join(f"{', '.join(by[k])}: {texts[k]}" for k in bad),
                               scope=Scope.CLUSTER, run_error=True))
    if "untested" in by:
        out.append(CheckResult(LOCALIZE, tuple(by["untested"]), Outcome.UNTESTED,
                               f"untested: {', '.join(by['untested'])}: {texts['untested']}", scope=Scope.CLUSTER))
    return out


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
