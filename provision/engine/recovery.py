"""``burnin --recover``: a node that hung during the run is power-cycled through its BMC, and its node checks run
again once it is back.

What it does, after the run's node, pair and group jobs (before the cluster procedure):

- the hung nodes (``provision.engine.lost``: stopped answering over SSH while their BMC says they are on), at most
  ``BurninRequest.recover`` of them (the drain breaker's budget: ``--drain-max`` or ``--drain-share`` of the run's
  hosts, at least one), in name order, are power-cycled together (``OutOfBand.power_cycle``:
  ``provision.bmc.power``, each confirmed by a new boot id read over SSH, never by the BMC's word alone);
- each that came back runs every node check of the run again (their results replace the first attempt's, marked
  with the next attempt); its first attempt's results stay in the report, as facts of its ``node_recovery``
  result, which fails NODE_POWER_CYCLED even when every check passes the second time: a node that hung under
  burn-in is suspect;
- each it could not bring back (refused, not carried out, no new boot id in time, beyond the budget) gets a
  ``node_recovery`` result failing NODE_NOT_RECOVERED with why.

What it never does: power on a node its BMC says is off (``lost``: not hung, off: someone may have turned it off);
act on a node whose BMC does not answer; cycle more nodes than the budget; run again a pair, group or cluster
check (the fabric's checks need every host: a later run does that); recover in a burn-in of this machine itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from provision.checks import faults
from provision.engine.jobs import Job
from provision.engine.outofband import Cycled
from provision.engine.scheduler import Scheduler
from provision.results.model import CheckResult, Finding, Outcome, Scope

if TYPE_CHECKING:
    from provision.engine.burnin import Burnin

CHECK_ID = "node_recovery"
CYCLED, NOT_RECOVERED = "NODE_POWER_CYCLED", "NODE_NOT_RECOVERED"


def recover(engine: Burnin, jobs: Sequence[Job], results: list[CheckResult], most: int,
            record: Callable[[CheckResult], None] | None) -> list[CheckResult]:
    """``results`` with the hung nodes' node checks run again where their power cycle brought them back, and one
    ``node_recovery`` result per hung node (module docstring); ``most``: how many nodes may be power-cycled."""
    hung = sorted(name for name, state in engine.states.items() if state.hung and state.problem)
    if not hung or most <= 0 or engine.oob is None or engine.stopped():
        return results
    chosen, beyond = hung[:most], hung[most:]
    engine.say(f"recover: power-cycling {len(chosen)} hung nodes through their BMCs: {', '.join(chosen)}"
               + (f"; not {', '.join(beyond)} (budget: {most})" if beyond else ""))
    problems = {name: engine.states[name].problem for name in hung}
    known = {n: boot for n in chosen if (boot := engine.states[n].boot_id)}
    try:
        cycled = {c.host: c for c in engine.oob.power_cycle([engine.states[n].host for n in chosen], engine.say,
                                                            known)}
    except Exception as exc:  # the recovery's failure is the hung nodes' finding, never the run's end
        reason = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        cycled = {n: Cycled(n, "failed", f"the power cycle could not run: {reason}") for n in chosen}
    engine.power_actions += [{"host": c.host, "action": "cycle", "outcome": c.outcome, "detail": c.detail,
                              "bmc": c.bmc, "before_boot_id": c.before_boot_id, "after_boot_id": c.after_boot_id,
                              "seconds": None if c.seconds is None else round(c.seconds, 1)} for c in cycled.values()]
    back = [n for n in chosen if n in cycled and cycled[n].outcome == "done"]
    for name in back:
        state = engine.states[name]
        old, state.conn, state.problem, state.hung = state.conn, None, "", False
        if old is not None:
            old.close()
    again = [j for j in jobs if j.check.placement.scope is Scope.NODE and not j.check.placement.gathers
             and len(j.hosts) == 1 and j.hosts[0] in back]
    attempt = engine.attempt + 1

    def mark(result: CheckResult) -> None:
        result.attempt = attempt
        if record is not None:
            record(result)

    rerun = Scheduler(engine.execute, lambda job: job.hosts, engine.workers).run(
        again, stop=engine.control.stop, not_run=engine._not_run, on_result=mark) if again else []
    for result in rerun:
        result.attempt = attempt
    replaced = {(r.check, r.hosts) for r in rerun}
    first = {name: [r for r in results if (r.check, r.hosts) in replaced and r.hosts == (name,)] for name in back}
    kept = [r for r in results if (r.check, r.hosts) not in replaced]
    notes = []
    for name in hung:
        note = _result(name, problems[name], cycled.get(name), first.get(name, []),
                       [r for r in rerun if r.hosts == (name,)], most)
        note.attempt = attempt
        if record is not None:
            record(note)
        notes.append(note)
    return kept + rerun + notes


def _result(name: str, problem: str, cycled: Cycled | None, first: list[CheckResult], second: list[CheckResult],
            most: int) -> CheckResult:
    """The ``node_recovery`` result of one hung node."""
    if cycled is None:
        message = f"{name} hung and was not power-cycled: the recovery budget of this run ({most} nodes) was spent"
        findings = [Finding(device="node", metric="power_cycle", value="skipped", ok=False, fault=NOT_RECOVERED,
                            action=faults.action(NOT_RECOVERED), detail=problem[:400])]
        return CheckResult(CHECK_ID, (name,), Outcome.FAIL, message, scope=Scope.NODE, findings=findings)
    boots = f"boot id {cycled.before_boot_id or 'unread'} -> {cycled.after_boot_id or 'none'}"
    took = f" in {cycled.seconds:.0f} s" if cycled.seconds is not None else ""
    code = CYCLED if cycled.outcome == "done" else NOT_RECOVERED
    power = Finding(device=cycled.bmc or "BMC", metric="power_cycle", value=cycled.outcome, ok=False, fault=code,
                    action=faults.action(code), detail=f"{cycled.detail}; {boots}{took}")
    if cycled.outcome != "done":
        message = f"{name} hung and its power cycle did not bring it back ({cycled.outcome}): {cycled.detail}"
        return CheckResult(CHECK_ID, (name,), Outcome.FAIL, message, scope=Scope.NODE,
                           findings=[power, Finding(device="node", metric="hung", value=problem[:400], ok=False)])
    counts: dict[str, int] = {}
    for result in second:
        counts[result.outcome.value] = counts.get(result.outcome.value, 0) + 1
    again = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "none to run"
    message = (f"{name} hung ({problem[:200]}) and was power-cycled through its BMC ({boots}{took}); its node checks "
               f"again: {again}")
    facts = [Finding(device=r.check, metric="first_attempt", value=r.outcome.value, ok=True, detail=r.message[:300])
             for r in first]
    return CheckResult(CHECK_ID, (name,), Outcome.FAIL, message, scope=Scope.NODE, findings=[power, *facts])
