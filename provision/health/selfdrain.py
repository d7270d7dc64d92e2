"""``provision health --drain self``: this node drained and resumed in Slurm with NHC's semantics.

LBNL NHC's ``node-mark-offline`` and ``node-mark-online`` (https://github.com/mej/nhc, helpers/) drain a node with a
reason starting ``NHC:`` and resume it only when its reason starts with ``NHC:``; a node drained with another reason
keeps that reason, and a DOWN node is never drained. They are this module's oracle: tests/integration/
test_nhc_oracle.py runs them against a real slurmctld beside these rules, case by case. Where the rules differ from
NHC's, on purpose: a DOWN node with NHC's reason is resumed by ``node-mark-online``, never here (the issue's rule:
Slurm or an operator brings a DOWN node back); NHC rewrites its reason on every failing call (it names the call's
first finding), here only when the fault it names is gone (below). Here, with this node's state read by
``scontrol show node -o <node>``:

- DOWN (whoever's reason, this health check's too: slurmctld keeps a node's reason when it marks it down, and
  slurmd runs the health check before it registers), being rebooted or powered up or down by Slurm (``TRANSITION``),
  or held (DRAIN, FAIL) with a reason not starting with ``PREFIX``: left alone, whatever the checks say (said in one
  line);
- fail, not held: drained, ``Reason=<PREFIX> <failing checks> <first failing finding>`` (one line of printable ASCII,
  at most ``provision.slurm.drain.REASON_MAX`` characters); already drained by this health check: left as it is
  while the fault its reason names (device and metric: ``fault_of``) is among this call's (its ``[user@time]``
  stamp, which the breaker counts from, kept), else its reason replaced by this call's (the first fault healed,
  another one failing: NHC's ``node-mark-offline`` rewrites its own reason on every failing call), unless a check
  the old reason names neither passed nor failed in this call (an epilog's gpu_stress drain seen by a periodic call)
  or its list of checks was cut: then it is kept, so that no call resumes the node before that check passed;
- pass, drained by this health check: resumed (``State=RESUME``) only when every check its reason names passed in
  this call (an epilog's ``--checks gpu_stress`` drain is not resumed by a periodic call that does not run it); a
  node the burn-in drained (``burnin:``) is not this health check's to resume;
- error (a check could not run, the budget ran out): nothing; the health check's own failure never drains a node.

The breaker, node-local: a shared cause (a driver upgrade, a file system, a wrong reference) fails most nodes at
once, and each node judges only itself. The one state all nodes share is slurmctld's, so the breaker reads it there:
before draining, ``scontrol show node -o`` lists every node; if this health check's drains set within ``WINDOW_S``
(Slurm's own ``[user@time]`` stamps, ``provision.slurm.breaker``) still drained already reach ``SHARE`` of the nodes
(at least one), this node is not drained and says so. Two nodes failing in the same second both see room; so after
draining a node reads the states again and, when the drains of the window are over the cap, resumes itself unless it
is among the first ``cap`` of them by (stamp, name): every node computes the same order from the same state, so the
drains converge to the cap. The race left: a node reading the state before another's drain is recorded and after its
post-check (milliseconds). ``HealthCheckNodeState=CYCLE`` (the role's default) spreads the nodes' runs over the
interval, which makes even that rare."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from provision.slurm import breaker as slurm_breaker
from provision.slurm import drain as slurm_drain
from provision.slurm.scontrol import NodeState, Scontrol, SlurmError

PREFIX = "provision-health:"  # every reason this health check gives starts with it (as NHC's "NHC:")
# The burn-in breaker's figures (provision.slurm.breaker: NVSentinel's circuit breaker counts cordons in a sliding
# window): 10 % of the nodes per 24 hours. A persistent shared cause (a wrong reference, a driver upgrade) fails
# every node on every call; a day's window keeps it to a tenth of the cluster until an operator acts, where an hour's
# would drain it all within a night.
SHARE = slurm_breaker.SHARE
WINDOW_S = slurm_breaker.WINDOW_S
DRAIN, RESUME, NOTHING, HELD = "drained", "resumed", "nothing", "held by the breaker"
REASON = "reason updated"
# Slurm is rebooting the node or powering it up or down (scontrol show node's state flags, Slurm 22.05+): a resume
# would lift the drain that ``scontrol reboot ASAP`` holds until the reboot. Left alone, as NHC's helpers leave a
# state with '@' (reboot requested), '#' (powering up) or 'boot' (rebooting) in sinfo's compact form.
TRANSITION = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERING_UP", "POWERING_DOWN", "POWER_DOWN",
                        "POWERED_DOWN"})


@dataclass(frozen=True)
class Judged:
    """This call's judgement of the node: ``verdict`` pass|fail|error; failing, ``wanted`` the reason it drains with
    and ``present`` every reason it could give (``reasons``: one per failing finding); ``passed`` the checks that
    passed in it."""

    verdict: str
    wanted: str = ""
    passed: frozenset[str] = frozenset()
    present: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Done:
    """What was done to the node: ``action`` (DRAIN, RESUME, REASON, NOTHING or HELD) and the lines said about it."""

    action: str
    lines: tuple[str, ...] = ()


def reason(run, host: str) -> str:
    """The drain reason of a failing ``host`` in ``run``: the burn-in's (``provision.slurm.drain.reason``) with this
    health check's prefix. Raises ValueError for a host no result blames."""
    return slurm_drain.reasons(run, host, PREFIX)[0]


def reasons(run, host: str) -> frozenset[str]:
    """Every reason ``run`` could give a failing ``host``: one per failing finding about it (``reason`` is one of
    them); a node drained with one of them is drained for a fault this call still sees. Raises ValueError for a host
    no result blames."""
    return frozenset(slurm_drain.reasons(run, host, PREFIX))


def named_checks(reason: str) -> tuple[str, ...]:
    """The check ids a reason of this health check names (``provision-health: a,b ...`` -> ('a', 'b')); () when it
    is not ours, or its list of checks was cut (a reason cut at ``REASON_MAX`` within it): then no call resumes it."""
    words = reason[len(PREFIX):].split() if reason.startswith(PREFIX) else []
    if len(words) < 2:
        return ()
    ids = words[0].split(",")
    return tuple(ids) if all(re.fullmatch(r"[a-z0-9_]+", c) for c in ids) else ()


def decide(node: str, state: NodeState | None, call: Judged) -> tuple[str, str]:
    """(DRAIN, RESUME, REASON or NOTHING, the line to say or '') for ``node`` in ``state`` (None: Slurm does not know
    it) after this ``call`` (module docstring). Pure."""
    verdict = call.verdict
    if state is None:
        return NOTHING, f"{node}: not a Slurm node (scontrol show node does not list it): nothing done"
    ours = state.reason.startswith(PREFIX)
    if "DOWN" in state.words:  # whoever's reason: Slurm or an operator brings it back, never a health check
        return NOTHING, f"{node} left alone: DOWN ({state.reason or 'no reason'})"
    if state.words & TRANSITION:
        return NOTHING, f"{node} left alone: Slurm is rebooting or powering it ({state.state}): " \
                        f"{state.reason or 'no reason'}"
    if state.held() and not ours:
        return NOTHING, f"{node} left alone: held by someone else ({state.state}): {state.reason or 'no reason'}"
    if verdict == "error":
        return NOTHING, (f"{node}: not judged (the health check could not finish): left {state.state}"
                         + (f" ({state.reason})" if state.held() else ""))
    if verdict == "fail":
        if state.held():
            return _drained_again(node, state.reason, call)
        return DRAIN, ""
    if not state.held():
        return NOTHING, ""
    named = named_checks(state.reason)
    missing = [c for c in named if c not in call.passed]
    if missing or not named:
        why = f"{', '.join(missing)} did not pass in this call" if missing else "its reason names no check"
        return NOTHING, f"{node} passes but stays drained: {why} ({state.reason})"
    return RESUME, ""


def fault_of(text: str) -> str:
    """What a reason of this health check names, without what was measured: its finding's ``<device>: <metric>``
    (``Finding.describe`` up to `` = ``), or the whole text after the list of checks (a result's message). An ECC
    count that grew, a temperature that moved, a latched Xid worded anew, another check failing beside: the same."""
    words = text.split(" ", 2)  # the prefix, the checks, the finding
    return words[2].split(" = ", 1)[0] if len(words) > 2 else ""


def _drained_again(node: str, held: str, call: Judged) -> tuple[str, str]:
    """A node this health check drained (reason ``held``) fails again: its reason kept while the fault it names
    (``fault_of``: device and metric, whatever the value) is among this call's (and Slurm's stamp of it, which the
    breaker counts from); replaced by ``call.wanted`` when that fault is gone, unless a check it names neither
    passed in this call nor fails in it (not run: an epilog's gpu_stress drain seen by a periodic call), or its list
    of checks was cut: those keep it."""
    wanted = call.wanted
    kept = f"{node}: already drained by this health check: {held}"
    if not wanted or held == wanted or fault_of(held) in {fault_of(r) for r in call.present}:
        return NOTHING, kept
    named = named_checks(held)
    unjudged = [c for c in named if c not in call.passed and c not in named_checks(wanted)]
    if not named or unjudged:
        why = f"{', '.join(unjudged)} neither passed nor failed in this call" if unjudged \
            else "its reason names no check"
        return NOTHING, f"{kept} (kept: {why})"
    return REASON, ""


def apply(scontrol: Scontrol, node: str, call: Judged, now: datetime | None = None,
          breaker: slurm_breaker.Breaker = slurm_breaker.Breaker(SHARE, WINDOW_S)) -> Done:
    """Drain or resume ``node`` per ``decide`` after this ``call``, within the breaker (module docstring). A failing
    scontrol is one line and changes nothing else; never raises SlurmError."""
    wanted = call.wanted
    try:
        state = scontrol.show(node).get(node)
    except SlurmError as exc:
        return Done(NOTHING, (f"warning: cannot read Slurm node {node}, nothing drained or resumed: {exc}",))
    action, note = decide(node, state, call)
    try:
        if action == REASON:  # already drained by this health check: not a new drain, the breaker not asked
            scontrol.drain(node, wanted)
            was = state.reason if state else ""
            return Done(REASON, (f"{node}: still drained, reason updated: {wanted} (was: {was})",))
        if action == RESUME:
            scontrol.resume(node)
            return Done(RESUME, (f"{node}: resumed: every check passes (was: {state.reason if state else ''})",))
        if action == DRAIN:
            return _drain(scontrol, node, wanted, now, breaker)
    except SlurmError as exc:
        what = {RESUME: "resume", REASON: "update the reason of"}.get(action, "drain")
        return Done(NOTHING, (f"warning: could not {what} Slurm node {node}: {exc}",))
    return Done(NOTHING, (note,) if note else ())


def _drain(scontrol: Scontrol, node: str, wanted: str, now: datetime | None,
           breaker: slurm_breaker.Breaker) -> Done:
    """Drain ``node`` unless the breaker holds it; after draining, step back when over the cap (module docstring).
    Raises SlurmError."""
    states = scontrol.show()
    room, why = breaker.budget(states, PREFIX, now)
    if room <= 0:
        return Done(HELD, (f"breaker: {node} not drained: {why.replace('this tool', 'this health check')} "
                           f"({wanted})",))
    scontrol.drain(node, wanted)
    try:  # drained: from here a failing scontrol leaves it drained, and says so
        states = scontrol.show()
        cap = max(1, int(breaker.share * len(states) + 1e-9))
        recent = breaker.recent(states, PREFIX, now or datetime.now())
        first = sorted(recent, key=lambda n: (slurm_breaker.set_at(states[n]), n))[:cap]
        if node in recent and node not in first:
            try:
                scontrol.resume(node)
            except SlurmError as exc:
                return Done(DRAIN, (f"{node}: drained: {wanted}", f"warning: the breaker's step back failed: {node} "
                                    f"stays drained, {len(recent)} drained by this health check, more than {cap}: "
                                    f"{exc}"))
            return Done(HELD, (f"breaker: {node} drained then resumed: {len(recent)} nodes drained by this health "
                               f"check within {slurm_breaker.span(breaker.window_s)}, more than {cap} "
                               f"({breaker.share * 100:g} % of {len(states)} Slurm nodes) ({wanted})",))
    except SlurmError as exc:
        return Done(DRAIN, (f"{node}: drained: {wanted}",
                            f"warning: the breaker's count after draining {node} was not finished: {exc}"))
    return Done(DRAIN, (f"{node}: drained: {wanted}",))
