"""What a run covered beyond its hosts, and its own verdict, read from the results model alone.

- ``components``: every leaf-spine cable of the cluster procedure's fabric and its two switch ports
  (each by switch GUID and port number, in its plane, the HCA rail it belongs to), with an outcome:
  fail when the fabric check found it below its width and speed (``FABRIC_CABLE_DEGRADED``) or the
  localization named it (``SUSPECT_CABLE``, its twins too: traffic cannot tell them apart); untested
  when no test of the procedure carried traffic over it (``FABRIC_CABLE_UNTESTED``); else pass (the
  fabric check judged its width and speed and, where the procedure ran, traffic crossed it). A switch
  port has its cable's outcome: a flapping port and a bad cable slow the same flows, so traffic names
  the cable and the fault's action says to check both ports. A cable failed only as a suspect's twin
  (``twin_of``: one of the ``alternatives`` of a suspect whose first cable is another) fails with it,
  so both are checked, but is one fault with it: ``tally`` counts it (and its two ports) ``twin``, not
  failed, and the run's reasons, the console's counts and Prometheus' counts read ``tally``.
- ``left_out``: the hosts the cluster procedure left out of its tests, with the reason.
- ``outcome``: the run's verdict (``RunOutcome``): fail (a host failed, a fabric component failed,
  or a fabric finding failed), else error (a host errored), else untested (a coverage gap: a result
  whose outcome is untested, an untested component, or a passing host the procedure could put in no
  group, alone in its profile or shard; not failed, not a full pass), else pass.
  The exit status (``provision.commands._common.status``), the console's closing lines, JUnit's
  fabric suite and Prometheus' run gauges all read these, so they cannot disagree.

Cables are read from report.json's ``cluster`` section (each group's ``fabric`` leaves and uplinks,
its ``suspects`` and ``unknown`` cables) and from the fabric check's findings about the fabric itself
(host ``fabric``, metric ``width_speed``, device ``<plane> <leaf>[<port>] <-> <spine>[<port>]`` as
``provision.checks.fabric`` writes it): a report written before this module reads the same.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from provision.results.outcome import FABRIC, Outcome

if TYPE_CHECKING:
    from provision.results.model import Run

DEGRADED, SUSPECT, UNTESTED = "FABRIC_CABLE_DEGRADED", "SUSPECT_CABLE", "FABRIC_CABLE_UNTESTED"
TWIN = "twin"  # how ``tally`` counts a component failed only as a twin of another failed cable
STATES = ("pass", "fail", TWIN, "untested")  # ``tally``'s keys, in the order the counts are told
CABLE_FAULTS = (DEGRADED, SUSPECT, UNTESTED)
_ENDS = re.compile(r"^(?P<plane>\S+) (?P<a>\S+)\[(?P<ap>\d+)\] <-> (?P<b>\S+)\[(?P<bp>\d+)\]$")
_RANK = {Outcome.FAIL: 0, Outcome.UNTESTED: 1, Outcome.PASS: 2}  # what a component is when sources differ


@dataclass(frozen=True)
class Component:
    """One fabric component: ``kind`` cable (``switch``/``port`` its leaf end, ``peer``/``peer_port``
    its spine end) or port (one switch port); ``plane`` the rail's plane name; ``outcome`` pass, fail
    or untested; ``faults`` the fault codes it carries; ``detail`` why (what found it, or why it was
    not tested and what would close the gap)."""

    kind: str
    plane: str
    switch: str
    port: int
    peer: str = ""
    peer_port: int = 0
    outcome: Outcome = Outcome.PASS
    faults: tuple[str, ...] = ()
    detail: str = ""
    action: str = ""  # what the operator should do: its faults' actions, from the findings that carry them
    twin_of: str = ""  # the cable (``name``) a suspect named first, when this failed only as its twin

    @property
    def state(self) -> str:
        """How ``tally`` counts it: ``twin`` when it failed only as another cable's twin, else its outcome."""
        return TWIN if self.outcome is Outcome.FAIL and self.twin_of else self.outcome.value

    @property
    def name(self) -> str:
        """``cable mlx5_5 S-leaf[7] <-> S-spine[2]`` or ``port mlx5_5 S-leaf[7]``."""
        if self.kind == "cable":
            return f"cable {self.plane} {self.switch}[{self.port}] <-> {self.peer}[{self.peer_port}]"
        return f"port {self.plane} {self.switch}[{self.port}]"


@dataclass(frozen=True)
class RunOutcome:
    """The run's verdict: ``outcome`` pass, fail, error or untested, and ``reasons`` (counts of what
    failed, errored or was not tested), each a phrase."""

    outcome: Outcome
    reasons: tuple[str, ...] = ()

    def line(self) -> str:
        """``run PASS``, ``run FAIL: 1 cable failed, 2 switch ports failed``, ``run UNTESTED (not
        failed, not a full pass): 48 cables untested``."""
        label = {Outcome.UNTESTED: "UNTESTED (not failed, not a full pass)"}.get(self.outcome,
                                                                               self.outcome.value.upper())
        return f"run {label}" + (f": {', '.join(self.reasons)}" if self.reasons else "")

    def to_dict(self) -> dict:
        """report.json's ``outcome`` (derived: a reader recomputes it from the results)."""
        return {"outcome": self.outcome.value, "reasons": list(self.reasons)}


@dataclass
class _Cable:
    plane: str
    leaf: str
    leaf_port: int
    spine: str
    spine_port: int
    outcome: Outcome = Outcome.PASS
    faults: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    twin_of: str = ""  # the suspect's first cable, while only that suspect's alternatives failed this one
    alone: bool = False  # failed on its own account (degraded, or a suspect's first cable)

    def judge(self, outcome: Outcome, fault: str = "", detail: str = "", twin_of: str = "") -> None:
        if _RANK[outcome] < _RANK[self.outcome]:
            self.outcome = outcome
        if outcome is Outcome.FAIL:
            self.alone = self.alone or not twin_of
            self.twin_of = self.twin_of or twin_of
        if fault and fault not in self.faults:
            self.faults.append(fault)
        if detail and detail not in self.details:
            self.details.append(detail)


def cable_id(a: str, a_port: int, b: str, b_port: int) -> str:
    """A cable's id as ``provision.fabric.model.Link.id`` spells it (ends sorted, ``S-a/1<->S-b/3``)."""
    return "<->".join(f"{n}/{p}" for n, p in sorted([(a, int(a_port)), (b, int(b_port))]))


def components(run: Run) -> list[Component]:
    """Every cable (sorted by plane, leaf, port) followed by its two switch ports (module doc)."""
    cables: dict[tuple[str, str], _Cable] = {}

    def cable(plane: str, leaf: str, leaf_port: int, spine: str, spine_port: int) -> _Cable:
        key = (plane, cable_id(leaf, leaf_port, spine, spine_port))
        return cables.setdefault(key, _Cable(plane, leaf, int(leaf_port), spine, int(spine_port)))

    for group in (run.cluster or {}).get("groups", []):
        _from_group(group, cable, cables)
    for r in run.results:
        for f in r.findings:
            found = _ENDS.match(f.device) if f.metric == "width_speed" and f.host == FABRIC else None
            if found is not None:
                c = cable(found["plane"], found["a"], int(found["ap"]), found["b"], int(found["bp"]))
                if f.ok:
                    c.judge(Outcome.PASS)
                else:
                    c.judge(Outcome.FAIL, f.fault or DEGRADED,
                            f"{r.check}: width_speed {f.value}, expected {f.expected}")
    actions = {f.fault: f.action for r in run.results for f in r.findings if f.fault in CABLE_FAULTS and f.action}
    out = []
    for _, c in sorted(cables.items()):
        action = " ".join(dict.fromkeys(actions[f] for f in c.faults if f in actions))
        whole = Component("cable", c.plane, c.leaf, c.leaf_port, c.spine, c.spine_port, c.outcome, tuple(c.faults),
                          "; ".join(c.details), action, "" if c.alone else c.twin_of)
        out += [whole, replace(whole, kind="port", peer="", peer_port=0),
                replace(whole, kind="port", switch=c.spine, port=c.spine_port, peer="", peer_port=0)]
    return out


def _from_group(group: dict, cable, cables: dict) -> None:
    """A cluster group's leaf-spine cables (its fabric's uplinks), its untested cables and its suspects."""
    fabric = group.get("fabric") or {}
    for leaf in fabric.get("leaves", []):
        for up in leaf.get("uplinks", []):
            cable(leaf["plane"], leaf["guid"], up["port"], up["to"], up["to_port"])
    planes = [p.get("name", "") for p in fabric.get("planes", [])]
    for row in (group.get("unknown") or {}).get("cables", []):
        rail = row.get("rail")
        plane = row.get("plane") or (planes[rail] if isinstance(rail, int) and 0 <= rail < len(planes) else "")
        found = cables.get((plane, row.get("id")))  # one look-up: 10,240 cables at 1,250 nodes
        if found is not None:
            found.judge(Outcome.UNTESTED, UNTESTED, "no test of the cluster procedure carried traffic over it "
                            f"(hosts tested: {len(group.get('hosts', []))}); close it: {_closer(group)}")
    for s in group.get("suspects", []):
        if s.get("kind") != "cable" or not s.get("cable"):
            continue
        twins = [s["cable"], *s.get("alternatives", [])]
        first = _name(s["cable"])
        for one in twins:
            c = cable(one["plane"], one["leaf"], one["leaf_port"], one["spine"], one["spine_port"])
            alone = "" if len(twins) == 1 else f" (one of {len(twins)} cables traffic cannot tell apart)"
            c.judge(Outcome.FAIL, SUSPECT, f"localize: suspect, confidence {s.get('confidence')}{alone}",
                    "" if one is s["cable"] else first)


def _name(row: dict) -> str:
    """A suspect's cable row as ``Component.name`` spells the cable."""
    return f"cable {row['plane']} {row['leaf']}[{row['leaf_port']}] <-> {row['spine']}[{row['spine_port']}]"


def tally(comps: list[Component], kind: str) -> Counter:
    """{state: count} of the components of ``kind`` (cable or port) by ``Component.state``: a twin set of
    cables is one failure (module doc)."""
    return Counter(c.state for c in comps if c.kind == kind)


def _closer(group: dict) -> str:
    left = group.get("excluded") or {}
    if left:
        return (f"fix or replace the {len(left)} hosts left out ({', '.join(sorted(left))}), then rerun "
                "`provision burnin --scope cluster --schedule full`")
    return "rerun `provision burnin --scope cluster --schedule full`"


def left_out(run: Run) -> dict[str, str]:
    """{host: why} over the cluster procedure's groups (``excluded``: a node check failed or errored)
    and the hosts it could not put in a group (``cluster.left_out``: alone in its group or shard)."""
    cluster = run.cluster or {}
    out: dict[str, str] = {}
    for group in cluster.get("groups", []):
        for host, why in (group.get("excluded") or {}).items():
            out[host] = f"a node check did not pass ({why})"
    out.update(cluster.get("left_out") or {})
    return dict(sorted(out.items()))


def outcome(run: Run) -> RunOutcome:
    """The run's verdict and its reasons (module doc)."""
    verdicts = list(run.verdicts().values())
    parts = [(Outcome.FAIL, _count(verdicts.count("fail"), "host") + " failed"),
             (Outcome.ERROR, _count(verdicts.count("error"), "host") + " errored")]
    comps = components(run)
    for kind, label in (("cable", "cable"), ("port", "switch port")):
        counts = tally(comps, kind)
        parts += [(Outcome.FAIL, f"{_count(counts['fail'], label)} failed"),
                  (Outcome.FAIL, _count(counts[TWIN], f"twin {label}")),
                  (Outcome.UNTESTED, f"{_count(counts['untested'], label)} untested")]
    other = [f for r in run.results if r.outcome is Outcome.FAIL and FABRIC in r.blamed()
             for f in r.findings if not f.ok and f.host == FABRIC and f.fault not in CABLE_FAULTS
             and not (f.metric == "width_speed" and _ENDS.match(f.device))]
    parts.append((Outcome.FAIL, f"{_count(len(other), 'fabric finding')} failed"))
    gaps = [r for r in run.results if r.outcome is Outcome.UNTESTED]
    passed = {h for h, v in run.verdicts().items() if v == "pass"}
    alone = set((run.cluster or {}).get("left_out") or {}) & passed  # asked for cluster tests, none could run
    hosts = sorted({h for r in gaps for f in r.findings if f.host and f.host != FABRIC for h in [f.host]}
                   | {h for r in gaps if not r.findings for h in r.hosts} | alone)
    parts.append((Outcome.UNTESTED, f"{_count(len(hosts), 'host')} untested"))
    found = [(o, text) for o, text in parts if not text.startswith("0 ")]
    for level in (Outcome.FAIL, Outcome.ERROR, Outcome.UNTESTED):
        if any(o is level for o, _ in found):
            return RunOutcome(level, tuple(text for _, text in found))
    return RunOutcome(Outcome.PASS)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
