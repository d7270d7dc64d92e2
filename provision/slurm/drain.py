"""Which nodes to drain or return to service after a burn-in, and doing it through Slurm without ever
fighting the operator.

After every burn-in the job writes ``runs/<id>/drain.txt`` (``drain_lines``): one line per host whose
verdict (``Run.verdicts()``) is "fail", ``<host> <reason>``, sorted by host; the reason is the one Slurm
gets: ``burnin: <failing checks, comma-separated> <first failing finding>``, one line of printable
ASCII of at most ``REASON_MAX`` characters. A host whose verdict is "error" is not listed, never drained
and never resumed: an error says the burn-in could not judge it (SSH lost, a timeout, a failed install,
a tool that printed nothing), not that its hardware is bad; the report and JUnit name it.

With ``provision burnin --drain slurm`` (``apply``), per host of the run, its Slurm node (``node_names``:
the inventory name, or the host variable ``provision_slurm_node``) as ``scontrol show node`` reads it:

- held by someone else (DOWN, DRAIN or FAIL with a Reason not starting with ``PREFIX``; Slurm's own
  "Not responding" included): left alone, whatever the verdict, and said: ``node03 left alone: drained
  by someone else: <their reason>``;
- fail, not held: drained (``scontrol update NodeName=N State=DRAIN Reason=<reason>``);
- fail, already drained by this tool: left as it is (never drained twice; its first reason stays);
- pass, drained by this tool, with ``--resume-passed``: returned to service (``State=RESUME``) only when
  every check its reason names ran on it in this run (it then passed them: its verdict is pass);
  otherwise it stays drained and the checks that did not run are named;
- error: nothing;
- never more drains than the circuit breaker allows (``provision.slurm.breaker``: a share of the Slurm
  nodes per run, shared by the runs of a window; ``--drain-max N`` names another count): the failing nodes
  past it are not drained, and are said and kept in slurm.txt with their reasons.

An operator who wants a node this tool drained to stay out of service changes its reason. The state is
read once for every node, and again for one node just before its update (scontrol has no
compare-and-set: an operator's update in the milliseconds between the two is the remaining race).
Sources: https://slurm.schedmd.com/scontrol.html, https://slurm.schedmd.com/slurm.conf.html.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from provision.errors import ProvisionError
from provision.results.model import Outcome, Run
from provision.slurm.breaker import Breaker
from provision.slurm.scontrol import NodeState, Scontrol, SlurmError

PREFIX = "burnin:"  # every reason this tool gives starts with it; a node whose reason does not is not ours
# Slurm documents no limit on a reason; sinfo -R and monitoring pages show the first few dozen
# characters, and the check ids come first, so this keeps the checks and the device with its figure.
REASON_MAX = 128
NODE_VAR = "provision_slurm_node"  # host variable: the host's NodeName in slurm.conf when it differs
# One NodeName, never a hostlist expression (a ',' or '[' would make scontrol update several nodes).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
DRAIN, RESUME, NOTHING = "drain", "resume", "nothing"


def clean(text: str, limit: int = REASON_MAX) -> str:
    """``text`` as one line of printable ASCII (other characters become '?', runs of whitespace one
    space), cut to ``limit`` characters with '...' at the end when longer."""
    flat = " ".join("".join(c if " " <= c <= "~" else ("?" if not c.isspace() else " ") for c in text).split())
    return flat if len(flat) <= limit else flat[:limit - 3].rstrip() + "..."


def reason(run: Run, host: str) -> str:
    """The drain reason of a failing ``host``: ``burnin: <checks> <first failing finding>`` (the first
    failing result's message when it has no finding about this host). Raises ValueError for a host
    that no result blames."""
    return reasons(run, host)[0]


def reasons(run: Run, host: str, prefix: str = PREFIX) -> list[str]:
    """Every reason ``run`` could give ``host``, the first one ``reason``'s: ``<prefix> <failing checks>
    <finding>`` for each failing finding about it, in the run's order (the first failing result's message
    when none). Raises ValueError for a host that no result blames."""
    failing = [r for r in run.results_of(host) if r.outcome is Outcome.FAIL and host in r.blamed()]
    if not failing:
        raise ValueError(f"{host}: no failing result blames it")
    checks = ",".join(dict.fromkeys(r.check for r in failing))
    said = [f.describe() for r in failing for f in r.findings if not f.ok and f.host in ("", host)]
    return [clean(f"{prefix} {checks} {message}") for message in dict.fromkeys(said or [failing[0].message])]


def drain_lines(run: Run) -> list[str]:
    """drain.txt: ``<host> <reason>`` for every host whose verdict is "fail", sorted by host."""
    return [f"{host} {reason(run, host)}" for host, v in sorted(run.verdicts().items()) if v == "fail"]


def named_checks(text: str) -> tuple[str, ...]:
    """The check ids a reason of this tool names (``burnin: a,b ...`` -> ('a', 'b')); () for another's."""
    if not text.startswith(PREFIX):
        return ()
    words = text[len(PREFIX):].split()
    return tuple(c for c in words[0].split(",") if re.fullmatch(r"[a-z0-9_]+", c)) if words else ()


def node_names(hosts) -> dict[str, str]:
    """Inventory host name -> Slurm NodeName for ``hosts`` (inventory Hosts): ``provision_slurm_node``
    when set, else the name. Raises ProvisionError (bad input) naming the host and field for a value
    that is not one plain node name, or two hosts that name the same node."""
    nodes: dict[str, str] = {}
    for host in hosts:
        value = host.vars.get(NODE_VAR, host.name)
        field = f"field '{NODE_VAR}'" if NODE_VAR in host.vars else "its name"
        if not isinstance(value, str) or not NODE_NAME.fullmatch(value):
            raise ProvisionError(f"host {host.name}: {field}: {value!r} is not one Slurm node name "
                                 "(letters, digits, '.', '_', '-'; no hostlist expression)")
        twin = next((h for h, n in nodes.items() if n == value), None)
        if twin:
            raise ProvisionError(f"host {host.name}: {field}: Slurm node {value} is also host {twin}'s")
        nodes[host.name] = value
    return nodes


@dataclass(frozen=True)
class Decision:
    """What to do with one host's node: ``action`` drain, resume or nothing; ``note`` the line to say
    ('' for nothing worth saying); ``reason`` the drain reason."""

    host: str
    node: str
    action: str
    note: str = ""
    reason: str = ""


def decide(host: str, node: str, verdict: str, wanted: str, state: NodeState | None, resume: bool,
           ran: set[str]) -> Decision:
    """The decision for one host (module docstring's rules): ``verdict`` pass|fail|error, ``wanted`` its
    drain reason ('' unless it failed), ``state`` its node now (None: Slurm does not know it), ``ran``
    the checks that ran on it in this run. Pure."""
    who = host if node == host else f"{host} (Slurm node {node})"
    if state is None:
        return Decision(host, node, NOTHING, f"{who}: not a Slurm node (scontrol show node does not list "
                                             f"{node}): nothing done" if verdict == "fail" or resume else "")
    ours = state.reason.startswith(PREFIX)
    if state.held() and not ours:
        how = "drained" if state.words & {"DRAIN", "DRAINED", "DRAINING"} else (
            "down" if "DOWN" in state.words else "failed")
        return Decision(host, node, NOTHING, f"{who} left alone: {how} by someone else: {state.reason or '-'}")
    if verdict == "error":
        return Decision(host, node, NOTHING, f"{who}: burn-in error, not judged: left {state.state}")
    if verdict == "fail":
        if state.held():
            return Decision(host, node, NOTHING, f"{who}: already drained by this tool: {state.reason}")
        return Decision(host, node, DRAIN, f"{who}: drain: {wanted}", wanted)
    if not state.held():
        return Decision(host, node, NOTHING)
    if not resume:
        return Decision(host, node, NOTHING, f"{who} passes, still drained by this tool ({state.reason}): "
                                             "--resume-passed returns it to service")
    named = named_checks(state.reason)
    missing = [c for c in named if c not in ran]
    if missing or not named:
        why = f"{', '.join(missing)} did not run on it this time" if missing else "its reason names no check"
        return Decision(host, node, NOTHING, f"{who} passes but stays drained: {why} ({state.reason})")
    return Decision(host, node, RESUME, f"{who}: resume: passes every check it was drained for ({state.reason})")


def apply(run: Run, nodes: dict[str, str], resume: bool, scontrol: Scontrol,
          say: Callable[[str], None] = print, breaker: Breaker = Breaker(), now: datetime | None = None) -> list[str]:
    """Drain and resume the nodes of ``nodes`` (host -> NodeName, hosts of ``run``) per ``decide``,
    through ``scontrol``, draining no more than ``breaker`` allows (``provision.slurm.breaker``; ``now``
    the time its window ends at, this machine's clock by default). Says and returns one line per node
    drained, resumed or left alone, the breaker's line and the nodes it kept from draining, then a total,
    each prefixed 'slurm: '. A failing scontrol call is a one-line warning naming the node and changes
    nothing else; never raises SlurmError."""
    lines: list[str] = []

    def tell(text: str) -> None:
        lines.append(f"slurm: {text}")
        say(lines[-1])

    try:
        states = scontrol.show()
    except SlurmError as exc:
        tell(f"warning: cannot read the nodes' states, nothing drained or resumed: {exc}")
        return lines
    verdicts = run.verdicts()
    done: dict[str, list[str]] = {DRAIN: [], RESUME: []}
    drains: list[Decision] = []
    for host, node in sorted(nodes.items()):  # resumes first: a node returned to service frees the budget
        if host not in verdicts:
            continue
        decision = _decision(run, host, node, verdicts[host], states.get(node), resume)
        if decision.action == DRAIN:
            drains.append(decision)
            continue
        _do(run, decision, verdicts[host], resume, scontrol, tell, done)
    resumed = {nodes[h] for h in done[RESUME]}
    budget, why = breaker.budget({n: s for n, s in states.items() if n not in resumed}, PREFIX, now)
    kept = []  # would have been drained: the breaker stopped them
    for decision in drains:
        if len(done[DRAIN]) >= budget:
            kept.append(decision)
        else:
            _do(run, decision, verdicts[decision.host], resume, scontrol, tell, done)
    if kept:
        _tell_kept(kept, len(done[DRAIN]), why, tell)
    tell(f"drained {len(done[DRAIN])}{': ' if done[DRAIN] else ''}{', '.join(done[DRAIN])}; "
         f"resumed {len(done[RESUME])}{': ' if done[RESUME] else ''}{', '.join(done[RESUME])}"
         + (f"; not drained (breaker) {len(kept)}: {', '.join(d.host for d in kept)}" if kept else ""))
    return lines


def _do(run: Run, decision: Decision, verdict: str, resume: bool, scontrol: Scontrol, tell: Callable[[str], None],
        done: dict[str, list[str]]) -> None:
    """Act on one decision (``_act``) or say its note; the host joins ``done``'s list of what was done."""
    if decision.action != NOTHING:
        decision = _act(run, decision, verdict, resume, scontrol, tell)
    elif decision.note:
        tell(decision.note)
    if decision.action in done:
        done[decision.action].append(decision.host)


def _tell_kept(kept: list[Decision], drained: int, why: str, tell: Callable[[str], None]) -> None:
    """The breaker's one line (why it stopped), then each node it kept from draining with its reason."""
    names = [d.host for d in kept]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    tell(f"breaker: stopped draining after {drained} of {drained + len(kept)} failing nodes: {why}; not drained: "
         f"{shown} (listed below; every failing host is in drain.txt); --drain-max N lets a run drain N nodes")
    for decision in kept:
        tell(f"not drained (breaker): {decision.note.replace(': drain: ', ': ', 1)}")


def _decision(run: Run, host: str, node: str, verdict: str, state: NodeState | None, resume: bool) -> Decision:
    wanted = reason(run, host) if verdict == "fail" else ""
    return decide(host, node, verdict, wanted, state, resume, {r.check for r in run.results_of(host)})


def _act(run: Run, first: Decision, verdict: str, resume: bool, scontrol: Scontrol,
         tell: Callable[[str], None]) -> Decision:
    """Read the node again, decide again on what it is now, and update it. Returns what was done (a
    NOTHING decision when the node changed meanwhile or scontrol failed)."""
    try:
        decision = _decision(run, first.host, first.node, verdict, scontrol.show(first.node).get(first.node), resume)
        if decision.action == DRAIN:
            scontrol.drain(decision.node, decision.reason)
        elif decision.action == RESUME:
            scontrol.resume(decision.node)
    except SlurmError as exc:
        tell(f"warning: {first.host}: could not {first.action} Slurm node {first.node}: {exc}")
        return Decision(first.host, first.node, NOTHING)
    if decision.note:
        tell(decision.note)
    return decision
