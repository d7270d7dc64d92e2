"""The terminal summary of a run, made to be read at 1,250 hosts: for a small run (``TABLE_HOSTS``
hosts or fewer) one row per host with install status and each node check's outcome, and one row
per multi-host result; then the cluster procedure's groups and suspects; then every failure,
grouped by check, outcome and fault code, its hosts as one Slurm hostlist (``gpu[012,044-046]``),
with one host's message as the example; last the counts. The counts are ``Run.verdicts``, as in
report.json, JUnit, the HTML report, Prometheus and the exit status: every view reads the one model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.report import hostlist
from provision.report.console import visible
from provision.results.model import CheckResult, Outcome, Run, Scope

MARK = {"pass": "ok", "fail": "FAIL", "error": "ERR", "skipped": "skip"}
TABLE_HOSTS = 32  # above this many hosts the per-host table is left to report.json, JUnit and the HTML report
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class Group:
    """Failures of one kind: ``label`` (``burnin.<check>``, ``install.<role>``), ``outcome`` (FAIL,
    ERROR, FAILED, UNREACHABLE), ``codes`` (fault codes, sorted), the ``hosts`` it names, and
    ``example`` (host, message): the first of them in run order."""

    label: str
    outcome: str
    codes: tuple[str, ...]
    hosts: list[str] = field(default_factory=list)
    example: tuple[str, str] = ("", "")

    def line(self) -> str:
        """One host: ``<host> <label> <OUTCOME>: <message>``; several: the hostlist, the codes, how
        many, and the example host's message."""
        host, message = self.example[0], visible(self.example[1], newlines=False)  # a node's text: one line, inert
        outcome = f" {self.outcome}" if self.outcome else ""
        if len(set(self.hosts)) == 1:
            return f"{host} {self.label}{outcome}: {message}"
        codes = "".join(f" {c}" for c in self.codes)
        count = len(set(self.hosts))
        return f"{hostlist.fold(self.hosts)} {self.label}{outcome}{codes} ({count} hosts): e.g. {host}: {message}"


def render(run: Run) -> str:
    verdicts = run.verdicts()
    if not verdicts:
        return "no host in this run: nothing was judged"
    out = _table(run, verdicts) if len(verdicts) <= TABLE_HOSTS else []
    out += [f"{r.check} [{r.host}]: {MARK[r.outcome.value]}" for r in run.results
            if r.scope is not Scope.NODE and not r.evidence and (len(verdicts) <= TABLE_HOSTS or r.outcome in BAD)]
    out += _cluster(run)
    found = groups(run)
    if found:
        out += ["", f"failures ({len(found)} kinds, by check and fault code):"] + [g.line() for g in found]
    counts = {v: list(verdicts.values()).count(v) for v in ("pass", "fail", "error")}
    out.append(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errored "
               f"of {len(verdicts)} hosts")
    return "\n".join(out)


BAD = (Outcome.FAIL, Outcome.ERROR)


def _table(run: Run, verdicts: dict[str, str]) -> list[str]:
    """One row per host: install, each node check's mark, verdict."""
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
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [header] + lines]


def _cluster(run: Run) -> list[str]:
    """Per host group of the cluster procedure: its rounds and tests, then each suspect."""
    out = []
    for group in (run.cluster or {}).get("groups", []):
        tests = sum(len(r["tests"]) for r in group["rounds"])
        failed = sum(1 for r in run.results if r.evidence and r.outcome is Outcome.FAIL
                     and set(r.hosts) <= set(group["hosts"]))
        out.append(f"cluster {group['profile']} ({len(group['hosts'])} hosts): {group['rounds_total']} rounds, "
                   f"{tests} tests, {failed} below reference; {len(group['suspects'])} suspects"
                   + (f"; {visible(group['error'], newlines=False)}" if group.get("error") else ""))
    for r in run.results:
        if r.check == "localize":
            out += [visible(f"  suspect {f.host} {f.device}: confidence {f.value}; {f.detail}", newlines=False)
                    for f in r.findings if not f.ok]
    return out


def groups(run: Run) -> list[Group]:
    """The run's failures, grouped: failed install tasks by role, task and message (its numbers
    aside); failing results by check and fault codes; erroring results by check and message (host
    names and numbers aside). Pair and group evidence of the cluster procedure is left out (its
    suspects say what it found). In run order of each group's first failure."""
    found: dict[tuple, Group] = {}
    key: tuple
    for host, inst in run.install.items():
        for role, row in inst.roles.items():
            for task in row.failed:
                key = ("install", role, task.task, _NUMBER.sub("#", task.msg))
                example = (host, f"{task.task}: {task.msg}")
                group = found.setdefault(key, Group(f"install.{role}", "", (), example=example))
                group.hosts.append(host)
    for r in run.results:
        if r.outcome not in BAD or (r.evidence and r.outcome is Outcome.FAIL):
            continue
        codes = tuple(sorted({f.fault for f in r.findings if not f.ok and f.fault}))
        key = ("burnin", r.check, r.outcome.value, codes if r.outcome is Outcome.FAIL else _shape(r))
        group = found.setdefault(key, Group(f"burnin.{r.check}", r.outcome.value.upper(), codes,
                                            example=(r.host, r.message)))
        group.hosts.extend(r.blamed() or r.hosts if r.outcome is Outcome.FAIL else r.hosts)
    return list(found.values())


def _shape(result: CheckResult) -> str:
    """An error's message without its hosts' names and numbers: errors of one cause on many hosts
    (``host gpu012: ssh: timed out after 30 s``) share it."""
    text = result.message
    for host in result.hosts:
        text = text.replace(host, "<host>")
    return _NUMBER.sub("#", text)
