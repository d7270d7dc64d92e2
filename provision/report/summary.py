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
    for host, verdict in verdicts.items():
        inst = run.install.get(host)
        by_check = {r.check: MARK[r.outcome.value] for r in run.results if r.scope is Scope.NODE and r.hosts == (host,)}
        inst_text = "-" if inst is None else f"{inst.status} ({inst.changed} chg)"
        lines.append([host, inst_text] + [by_check.get(c, "-") for c in checks] + [verdict.upper()])
    widths = [max(len(str(row[i])) for row in [header] + lines) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [header] + lines]
    out += [f"{r.check} [{r.host}]: {MARK[r.outcome.value]}" for r in run.results if r.scope is not Scope.NODE]
    counts = {v: list(verdicts.values()).count(v) for v in ("pass", "fail", "error")}
    out.append(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errored "
               f"of {len(verdicts)} hosts")
    reasons = _reasons(run)
    return "\n".join(out + ([""] + reasons if reasons else []))


def _reasons(run: Run) -> list[str]:
    out = []
    for host, inst in run.install.items():
        for role, row in inst.roles.items():
            out += [f"{host} install.{role}: {f.task}: {f.msg}" for f in row.failed]
    for r in run.results:
        if r.outcome in (Outcome.FAIL, Outcome.ERROR):
            out.append(f"{r.host} burnin.{r.check} {r.outcome.value.upper()}: {r.message}")
    return out
