"""The terminal summary: one row per host with install status and each check's outcome, then
every failing or erroring check with its reason."""
from __future__ import annotations

MARK = {"pass": "ok", "fail": "FAIL", "error": "ERR", "skipped": "skip"}


def render(report: dict) -> str:
    burnin, install = report.get("burnin", {}), report.get("install", {})
    checks = []
    for rows in burnin.values():
        for row in rows:
            if row["check"] not in checks:
                checks.append(row["check"])
    header = ["host", "install"] + checks + ["verdict"]
    lines = []
    for host, verdict in report["hosts"].items():
        inst = install.get(host)
        by_check = {r["check"]: MARK[r["outcome"]] for r in burnin.get(host, [])}
        inst_text = "-" if inst is None else f"{inst['status']} ({inst['changed']} chg)"
        lines.append([host, inst_text] + [by_check.get(c, "-") for c in checks] + [verdict.upper()])
    widths = [max(len(str(row[i])) for row in [header] + lines) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [header] + lines]
    reasons = _reasons(report)
    counts = {v: list(report["hosts"].values()).count(v) for v in ("pass", "fail", "error")}
    out.append(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errored "
               f"of {len(report['hosts'])} hosts")
    return "\n".join(out + ([""] + reasons if reasons else []))


def _reasons(report: dict) -> list[str]:
    out = []
    for host, inst in report.get("install", {}).items():
        for role, row in inst["roles"].items():
            for f in row["failed"]:
                out.append(f"{host} install.{role}: {f['task']}: {f['msg']}")
    for host, rows in report.get("burnin", {}).items():
        for row in rows:
            if row["outcome"] in ("fail", "error"):
                out.append(f"{host} burnin.{row['check']} {row['outcome'].upper()}: {row['message']}")
    return out
