"""imex_domain: every tray of an NVLink domain in the run lists every other tray of that domain in the run in its IMEX
node list, so that no tray's daemon leaves one out of the domain.

Runs no tool (``Check.gathers``): it compares what ``imex`` read on each tray of one NVLink domain in this run
(``nvidia-imex-ctl -N -j -H``, the list its daemon's nodes_config.cfg gives it; parser
``provision.parsers.imex_ctl``). The trays are the hosts the inventory puts in the domain
(``provision_nvlink_domain``, ``Check.per_nvlink_domain``). Per tray whose list is read: every other tray of the job
is listed, by its inventory name or address (IMEX_DOMAIN_INCOMPLETE naming the missing trays otherwise: that tray's
nodes_config.cfg is stale or wrong, so the domain it forms is smaller than the run's, and memory shared with the
missing trays fails). A list naming trays the run does not hold (a partial run, a shard) is said in the detail,
never failed: the run may cover part of the domain. A tray whose imex check could not be judged is left out and
named (``left_out``). NVIDIA's IMEX guide ("IMEX Service Configuration"): every node of one domain lists the same
nodes in nodes_config.cfg.
"""
from __future__ import annotations

from provision.checks import faults, registry
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Scope, gathered_steps, split_key
from provision.checks.common.imex_nodes import entry_of
from provision.errors import ParseError
from provision.results.hostlist import fold

INCOMPLETE = "IMEX_DOMAIN_INCOMPLETE"


def steps(profile, group):
    return gathered_steps(registry()[CHECK.gathers], profile, group)  # imex's steps, found as the engine finds them


def judge(ctx: Context) -> list[Finding]:
    lists: dict[str, list[dict]] = {}
    for key, parsed in ctx.parsed.items():
        host, step = split_key(key)
        if step == "":
            lists[host] = parsed["nodes"]
    trays = {str(getattr(h, "name", h)): h for h in ctx.hosts}
    if not lists:
        raise ParseError("no tray's IMEX node list to compare")
    findings = []
    for tray, nodes in lists.items():
        missing = [name for name, h in trays.items() if name != tray and entry_of(nodes, h) is None]
        known = sum(1 for n in nodes if any(entry_of([n], h) is not None for h in trays.values()))
        extra = len(nodes) - known
        findings.append(Finding(
            device="IMEX node list", metric="imex_trays_missing", value=len(missing), ok=not missing, expected=0,
            host=tray, fault=INCOMPLETE, action=faults.action(INCOMPLETE),
            detail=(f"{fold(missing)} not listed; " if missing else "")
            + f"{len(nodes)} listed, {len(trays)} trays of the domain in this run"
            + (f", {extra} listed trays not in this run" if extra else "")))
    left = [name for name in trays if name not in lists]
    if left:  # their imex check gave no outputs to compare
        findings.append(Finding(device=f"{len(left)} trays", metric="left_out", value=fold(left), ok=True,
                                detail="not compared: their imex check gave no outputs (see its results)"))
    return findings


CHECK = Check(id="imex_domain", tool="(imex's outputs)", steps=steps, judge=judge, order=108,
              placement=Placement(scope=Scope.GROUP, needs=("imex",), per_nvlink_domain=True, gathers="imex"),
              budget=Budget(timeout_s=60, sets=("quick", "deep")),
              data=Data(metrics={"imex_trays_missing": ""}))
