"""The terminal summary of a run: one row per host with install status and each node check's
outcome, one row per multi-host result, then every failing or erroring check with its reason."""
from __future__ import annotations

from provision.results.model import Outcome, Run, Scope

MARK = {"pass": "ok", "fail": "FAIL", "error": "ERR", "skipped": "skip"}


def render(run: Run) -> str:
    verdicts = run.verdicts()
    checks = list(dict.fromkeys(r.check for r in run.results if r.scope is Scope.NODE))
    header = ["host", "install"] + checks + ["verdict"]
    lines = []
    covering = run.by_host()
    for host, verdict in verdicts.items():
        inst = run.install.get(host)
        by_check = {r.check: MARK[r.outcome.value] for r in covering.get(host, ())
                    if r.scope is Scope.NODE and r.hosts == (host,)}
        inst_text = "-" if inst is None else f"{inst.status} ({inst.changed} chg)"
        lines.append([host, inst_text] + [by_check.get(c, "-") for c in checks] + [verdict.upper()])
    widths = [max(len(str(row[i])) for row in [header] + lines) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [header] + lines]
    out += [f"{r.check} [{r.host}]: {MARK[r.outcome.value]}" for r in run.results
            if r.scope is not Scope.NODE and not r.evidence]
    out += _cluster(run)
    counts = {v: list(verdicts.values()).count(v) for v in ("pass", "fail", "error")}
    out.append(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errored "
               f"of {len(verdicts)} hosts")
    reasons = _reasons(run)
    return "\n".join(out + ([""] + reasons if reasons else []))


def _cluster(run: Run) -> list[str]:
    """Per host group of the cluster procedure: its rounds and tests, then each suspect."""
    out = []
    for group in (run.cluster or {}).get("groups", []):
        tests = sum(len(r["tests"]) for r in group["rounds"])
        failed = sum(1 for r in run.results if r.evidence and r.outcome is Outcome.FAIL
                     and set(r.hosts) <= set(group["hosts"]))
        out.append(f"cluster {group['profile']} ({len(group['hosts'])} hosts): {group['rounds_total']} rounds, "
                   f"{tests} tests, {failed} below reference; {len(group['suspects'])} suspects"
                   + (f"; {group['error']}" if group.get("error") else ""))
    for r in run.results:
        if r.check == "localize":
            out += [f"  suspect {f.host} {f.device}: confidence {f.value}; {f.detail}" for f in r.findings if not f.ok]
    return out


def _reasons(run: Run) -> list[str]:
    out = []
    for host, inst in run.install.items():
        for role, row in inst.roles.items():
            out += [f"{host} install.{role}: {f.task}: {f.msg}" for f in row.failed]
    for r in run.results:
        if r.outcome in (Outcome.FAIL, Outcome.ERROR) and not (r.evidence and r.outcome is Outcome.FAIL):
            out.append(f"{r.host} burnin.{r.check} {r.outcome.value.upper()}: {r.message}")
    return out
