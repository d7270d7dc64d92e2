"""Runs built in process for the one-truth tests (issue 23): four H100 hosts on one rail's fabric of two
leaves and two spines (four leaf-spine cables, eight switch ports), judged three ways:
- ``cable_run``: every host passes its node checks; the fabric check finds a leaf-spine cable at 1x and the
  localization names it: the run fails by the cable alone;
- ``flap_and_slow_hca_run``: n2's HCA mlx5_0 is slow (ib_write_bw fails: it is left out of the cluster tests),
  a flapping switch port on S-spine2[2] makes the localization name its cable;
- ``untested_run``: everything tested passes, but two cables carried no traffic and n5 was alone in its
  group: a coverage gap, not a failure;
- ``twin_run``: a flapping cable S-leaf1[33] <-> S-spine1[1] at full width, which traffic cannot tell from its
  twin S-leaf2[33] <-> S-spine1[2] (on two leaves they carry the same routes): one suspect, both cables failed
  (both are to be checked), one fault counted once.
"""
from __future__ import annotations

import dataclasses

from provision.results.model import FABRIC, CheckResult, Finding, HostRecord, Outcome, Reference, Run, Scope

PROFILE = "h100-sxm5-80g-ndr"
PLANE = "mlx5_0"
HOSTS = ("n1", "n2", "n3", "n4")
# (leaf, leaf port, spine, spine port)
CABLES = [("S-leaf1", 33, "S-spine1", 1), ("S-leaf1", 34, "S-spine2", 1),
          ("S-leaf2", 33, "S-spine1", 2), ("S-leaf2", 34, "S-spine2", 2)]
IB_REF = Reference(392.0, -0.1, None, "Gb/s", "figures")


def cable_id(leaf, leaf_port, spine, spine_port) -> str:
    return "<->".join(f"{n}/{p}" for n, p in sorted([(leaf, leaf_port), (spine, spine_port)]))


def fabric() -> dict:
    leaves = []
    for leaf in ("S-leaf1", "S-leaf2"):
        ups = [{"port": lp, "to": s, "to_port": sp, "width_speed": "4xNDR"} for lf, lp, s, sp in CABLES if lf == leaf]
        leaves.append({"plane": PLANE, "guid": leaf, "description": leaf, "lid": 1, "hosts": [], "uplinks": ups,
                       "oversubscription": 1.0})
    return {"planes": [{"name": PLANE, "switches": 4, "hcas": 4, "cables": 8, "self_loops": 0}], "leaves": leaves,
            "spines": [], "degraded_links": []}


def _node(check: str, host: str, ok: bool = True, duration: float = 10.41) -> CheckResult:
    value = 392.3 if ok else 231.0
    f = Finding(PLANE, "bw_avg_Gbps", value, ok, "Gb/s", IB_REF, fault="" if ok else "IB_BW_LOW",
                action="" if ok else "reseat the HCA")
    return CheckResult(check, (host,), Outcome.PASS if ok else Outcome.FAIL, "ok" if ok else f.describe(),
                       duration_s=duration, findings=[f])


def _fabric_result(hosts, degraded=None) -> CheckResult:
    findings = [Finding(f"{PLANE} {lf}[{lp}] <-> {s}[{sp}]", "width_speed",
                        "1xNDR" if (lf, lp, s, sp) == degraded else "4xNDR", (lf, lp, s, sp) != degraded,
                        expected="4xNDR", fault="FABRIC_CABLE_DEGRADED", action="Reseat or replace the cable",
                        host=FABRIC) for lf, lp, s, sp in CABLES]
    bad = [f for f in findings if not f.ok]
    return CheckResult("fabric", tuple(hosts), Outcome.FAIL if bad else Outcome.PASS,
                       "; ".join(f.describe() for f in bad) or "ok", scope=Scope.CLUSTER, duration_s=2.2,
                       findings=findings)


def _cable_suspect(cable) -> tuple[dict, Finding]:
    lf, lp, s, sp = cable
    row = {"kind": "cable", "host": None, "rail": 0, "device": None,
           "cable": {"plane": PLANE, "id": cable_id(*cable), "leaf": lf, "leaf_port": lp, "spine": s,
                     "spine_port": sp, "width_speed": "4xNDR"},
           "alternatives": [], "evidence": [{"round": 2, "test": "pair", "hosts": ["n1", "n3"], "rail": 0,
                                             "shortfall_pct": 40}], "confidence": 0.93}
    finding = Finding(f"cable {lf}[{lp}] <-> {s}[{sp}] ({PLANE})", "suspect_confidence", 0.93, False,
                      fault="SUSPECT_CABLE", action="Replace the cable between the two switch ports named",
                      host=FABRIC, detail="round 2 pair n1+n3 rail 0 -40%")
    return row, finding


def _group(hosts, suspects=(), excluded=None, unknown_cables=()) -> dict:
    return {"profile": PROFILE, "hosts": list(hosts), "schedule": "quick", "rounds_total": 2,
            "rounds": [{"round": 1, "phase": "ib_pairs quick", "tests": [
                {"kind": "pair", "purpose": "cross-leaf", "hosts": list(hosts[:2]), "ratio": None,
                 "rail_ratios": {"0": 1.0}}]}],
            "suspects": list(suspects), "excluded": dict(excluded or {}), "fabric": fabric(),
            "unknown": {"hosts": [], "cables": [{"rail": 0, "id": cable_id(*c)} for c in unknown_cables]}}


def _localize(hosts, findings) -> CheckResult:
    named = "; ".join(f"{f.host} {f.device}" for f in findings) or "no suspect"
    return CheckResult("localize", tuple(hosts), Outcome.FAIL if findings else Outcome.PASS,
                       f"{len(findings)} suspects in 2 rounds: {named}", scope=Scope.CLUSTER, findings=list(findings))


def _run(run_id, hosts, results, cluster) -> Run:
    return Run(run_id=run_id, inventory="sim", phases=["burnin"], started="2026-12-02T10:00:00+00:00",
               finished="2026-12-02T10:30:00+00:00", hosts={h: HostRecord(PROFILE) for h in hosts},
               results=results, cluster=cluster)


def cable_run() -> Run:
    """Every node passes; the cable S-leaf2[33] <-> S-spine1[2] is degraded and named."""
    bad = CABLES[2]
    row, finding = _cable_suspect(bad)
    results = [_node("ib_write_bw", h, duration=d) for h, d in zip(HOSTS, (10.41, 10.41, 10.41, 11.0))]
    results += [_fabric_result(HOSTS, degraded=bad), _localize(HOSTS, [finding])]
    return _run("r-cable", HOSTS, results, {"groups": [_group(HOSTS, [row])]})


def flap_and_slow_hca_run() -> Run:
    """n2's mlx5_0 is slow (a node failure: left out of the cluster tests); a flapping port on
    S-spine2[2] makes its cable S-leaf2[34] <-> S-spine2[2] the localization's suspect."""
    flapping = CABLES[3]
    row, finding = _cable_suspect(flapping)
    ready = ("n1", "n3", "n4")
    results = [_node("ib_write_bw", h, ok=h != "n2") for h in HOSTS]
    results += [_fabric_result(ready), _localize(ready, [finding])]
    return _run("r-flap", HOSTS, results, {"groups": [_group(ready, [row], {"n2": "ib_write_bw fail"})]})


def untested_run() -> Run:
    """Every test that ran passed; two cables carried no traffic and n5 was alone: untested, not failed."""
    hosts = (*HOSTS, "n5")
    gap = [CABLES[1], CABLES[3]]
    untested = CheckResult("localize", HOSTS, Outcome.UNTESTED, "untested: 2 leaf-spine cables carried no traffic",
                           scope=Scope.CLUSTER, findings=[
                               Finding(f"cable {cable_id(*c)} (rail 0)", "carried_traffic", False, False, expected=True,
                                       fault="FABRIC_CABLE_UNTESTED", action="rerun with --schedule full", host=FABRIC)
                               for c in gap])
    results = [_node("ib_write_bw", h) for h in hosts] + [_fabric_result(HOSTS), _localize(HOSTS, []), untested]
    cluster = {"groups": [_group(HOSTS, unknown_cables=gap)],
               "left_out": {"n5": "alone: 1 host of profile h100-sxm5-80g-ndr ready in this run (or shard), "
                                  "a pair test needs two"}}
    return _run("r-untested", hosts, results, cluster)


def twin_run() -> Run:
    """Every node passes; one suspect names S-leaf1[33] <-> S-spine1[1] or its twin S-leaf2[33] <-> S-spine1[2]."""
    row, finding = _cable_suspect(CABLES[0])
    lf, lp, s, sp = CABLES[2]
    row["alternatives"] = [{"plane": PLANE, "id": cable_id(*CABLES[2]), "leaf": lf, "leaf_port": lp, "spine": s,
                            "spine_port": sp, "width_speed": "4xNDR"}]
    finding = dataclasses.replace(finding, device=f"{finding.device} or cable {lf}[{lp}] <-> {s}[{sp}] ({PLANE})")
    results = [_node("ib_write_bw", h) for h in HOSTS] + [_fabric_result(HOSTS), _localize(HOSTS, [finding])]
    return _run("r-twin", HOSTS, results, {"groups": [_group(HOSTS, [row])]})
