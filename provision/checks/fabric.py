"""fabric: the InfiniBand fabric as ``ibnetdiscover`` reads it, one plane per HCA (rail).

Runs ``ibnetdiscover -C <hca> -P 1`` on the group's first host for each HCA of its profile
(infiniband-diags; parser ``provision.parsers.ibnetdiscover``; the plane model
``provision.fabric.discover``). Judges every cable (HCA-leaf and leaf-spine) against the
width and speed the profile's HCA rate implies (``hca.rate_Gbps``: 400 -> 4xNDR, IBTA lane
rates in provision/fabric/model.py), that every leaf has as many uplinks as the best-cabled
leaf of its plane (a missing uplink is a dead port or cable: the subnet manager routes around
it, so only discovery sees it), and that discovery read the whole subnet (no SMP errors, a
complete dump). The plane is what the cluster procedure routes pairs and groups by.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Role, Scope, Step
from provision.checks.rules import expect
from provision.errors import ProfileError
from provision.fabric.discover import planes
from provision.fabric.model import Plane, hca_names, width_speed_for
from provision.results.model import FABRIC


def steps(profile, group) -> list[Step]:
    return [Step(dev, ["ibnetdiscover", "-C", dev, "-P", "1"], parser="ibnetdiscover") for dev in hca_names(profile)]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    if profile.hca.rate_Gbps is None:  # the schema requires it with any HCA, and fabric needs HCAs
        raise ProfileError(f"profile {profile.name}: hca.rate_Gbps: missing; the fabric check judges cables by it")
    expected = width_speed_for(float(profile.hca.rate_Gbps))
    findings = []
    for dev, plane in planes(parsed).items():
        result = parsed[dev]
        findings.append(expect(dev, "complete", bool(result.get("complete")), True, "FABRIC_DISCOVERY_INCOMPLETE"))
        findings.append(expect(dev, "smp_errors", len(result.get("errors") or []), 0, "FABRIC_DISCOVERY_INCOMPLETE"))
        bad = {lk.id for lk in plane.degraded(expected)}
        for link in plane.links:
            if link.self_loop:
                continue
            findings.append(Finding(device=f"{dev} {_label(plane, link)}", metric="width_speed",
                                    value=link.width_speed, ok=link.id not in bad, expected=expected,
                                    fault="FABRIC_CABLE_DEGRADED", action=_action("FABRIC_CABLE_DEGRADED"),
                                    host=_host(plane, link)))
        findings += _uplinks(dev, plane)
    return findings


def _uplinks(dev: str, plane: Plane) -> list[Finding]:
    counts = {leaf.guid: len(plane.uplinks(leaf.guid)) for leaf in plane.leaves()}
    most = max(counts.values(), default=0)
    return [Finding(device=f"{dev} leaf {guid}", metric="uplinks", value=n, ok=n == most, expected=most,
                    fault="FABRIC_UPLINK_MISSING", action=faults.action("FABRIC_UPLINK_MISSING"), host=FABRIC)
            for guid, n in counts.items()]


def _label(plane: Plane, link) -> str:
    """A cable by its two ends, ``S-leaf[7] <-> S-spine[2]``, the leaf or HCA end first."""
    ends = sorted([(link.a, link.a_port), (link.b, link.b_port)],
                  key=lambda e: (plane.switches.get(e[0]) is not None and plane.switches[e[0]].role == "spine", e))
    return " <-> ".join(f"{n}[{p}]" for n, p in ends)


def _host(plane: Plane, link) -> str:
    """The host whose HCA cable this is; ``FABRIC`` for a cable between switches (it fails no node)."""
    hca = plane.hca_on(link)
    return (hca.host or "") if hca else FABRIC


def _action(code: str) -> str:
    return faults.action(code)


CHECK = Check(id="fabric", tool="ibnetdiscover", steps=steps, judge=judge, order=100,
              placement=Placement(scope=Scope.CLUSTER, needs=("hca",)),
              budget=Budget(timeout_s=120, sets=("deep",)),
              data=Data(metrics={}, role=Role.FABRIC_DISCOVERY))
