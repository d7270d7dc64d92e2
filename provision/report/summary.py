"""The terminal summary of a run, made to be read at 1,250 hosts: for a small run (``TABLE_HOSTS``
hosts or fewer) one row per host with install status and each node check's outcome, and one row
per multi-host result; then the cluster procedure's groups and suspects; then every failure,
grouped by check, outcome and fault code, its hosts as one Slurm hostlist (``gpu[012,044-046]``),
with one host's message as the example; then the failed fabric components, the hosts left out of the
cluster tests and the coverage gaps (untested: not failed); last the closing lines (``closing``): the
hosts' counts (``Run.verdicts``), the fabric's cables and switch ports (``Run.fabric_components``) and
the run's verdict (``Run.outcome``), as report.json, JUnit, the HTML report, Prometheus and the exit
status read them: every view reads the one model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.report import hostlist
from provision.report.console import visible
from provision.results import coverage
from provision.results.model import CheckResult, Outcome, Run, Scope, number

MARK = {"pass": "ok", "fail": "FAIL", "error": "ERR", "skipped": "skip", "untested": "untested"}
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
    out += _versions(run)
    found = groups(run)
    if found:
        kinds = f"{len(found)} kind{'s' if len(found) != 1 else ''}"
        out += ["", f"failures ({kinds}, by check and fault code):"] + [g.line() for g in found]
    out += _gaps(run)
    return "\n".join(out + [""] + closing(run))


DISTRIBUTION = "_distribution"  # a finding's metric suffix: one row of a fleet's version distribution


@dataclass(frozen=True)
class Versions:
    """One fleet comparison's distribution (a result whose findings have ``<field>_distribution`` metrics, as
    firmware_fleet writes them): its ``hosts`` and, per field, [(value, how many units, their hostlist)]."""

    check: str
    hosts: tuple[str, ...]
    fields: dict[str, list[tuple[str, str, str]]]


def versions(run: Run) -> list[Versions]:
    """The run's fleet version distributions, in result order (the console's and the HTML report's one source)."""
    out = []
    for r in run.results:
        rows: dict[str, list[tuple[str, str, str]]] = {}
        for f in r.findings:
            if f.metric.endswith(DISTRIBUTION):
                rows.setdefault(f.metric[:-len(DISTRIBUTION)], []).append((str(f.value), f.device, f.detail))
        if rows:
            out.append(Versions(r.check, r.hosts, rows))
    return out


def _versions(run: Run) -> list[str]:
    """Per fleet comparison: the fields on which the hosts differ, each value with its count and hosts; the
    others in one line (the HTML report has every field)."""
    out = []
    for v in versions(run):
        split = {f: rows for f, rows in v.fields.items() if len(rows) > 1}
        same = [f"{f} {rows[0][0]}" for f, rows in v.fields.items() if len(rows) == 1]
        out += ["", f"versions across {len(v.hosts)} hosts ({v.check}): "
                + (f"{len(split)} fields differ" if split else "every field agrees")]
        out += [f"  {f}: " + "; ".join(f"{visible(value, False)} on {count} ({hosts})" for value, count, hosts in rows)
                for f, rows in split.items()]
        if same:
            out.append("  same everywhere: " + ", ".join(visible(s, False) for s in same))
    return out


def closing(run: Run) -> list[str]:
    """The closing lines, all from the model: the hosts' counts (``Run.verdicts``: a zero count is left
    out, so a failing run never reads "0 failed"), the fabric's cables and switch ports (``Run.fabric_components``),
    and the run's verdict (``Run.outcome``, the exit status's)."""
    verdicts = list(run.verdicts().values())
    counts = [(verdicts.count(v), word) for v, word in (("pass", "passed"), ("fail", "failed"), ("error", "errored"))]
    lines = [", ".join(f"{n} {word}" for n, word in counts if n) + f" of {len(verdicts)} hosts"]
    fabric = fabric_counts(run)
    if fabric:
        lines.append(fabric)
    return lines + [run.outcome().line()]


def fabric_counts(run: Run) -> str:
    """"fabric: 63 passed, 1 failed of 64 leaf-spine cables; 126 passed, 2 failed of 128 switch ports" from
    ``Run.fabric_components`` counted by ``coverage.tally`` (a zero count left out; a cable failed only as a
    suspect's twin is one fault with it, told as "1 twin"); "" when the run judged no fabric component."""
    comps = run.fabric_components()
    if not comps:
        return ""
    parts = []
    words = {"pass": "passed", "fail": "failed", coverage.TWIN: "twin", "untested": "untested"}
    for kind, noun in (("cable", "leaf-spine cables"), ("port", "switch ports")):
        counts = coverage.tally(comps, kind)
        told = [f"{counts[state]} {words[state]}" + ("s" if state == coverage.TWIN and counts[state] > 1 else "")
                for state in coverage.STATES if counts[state]]
        parts.append(f"{', '.join(told)} of {sum(counts.values())} {noun}")
    return "fabric: " + "; ".join(parts)


def _gaps(run: Run) -> list[str]:
    """Failed and untested fabric components (cables with their fault codes and why), the hosts left
    out of the cluster tests with the reason, and each coverage gap's result (untested: not a failure)."""
    comps = [c for c in run.fabric_components() if c.kind == "cable" and c.outcome is not Outcome.PASS]
    out = []
    bad = [c for c in comps if c.outcome is Outcome.FAIL]
    if bad:
        out += ["", f"fabric failures ({len(bad)} cable{'s' if len(bad) != 1 else ''}, both switch ports of each):"]
        out += [visible(f"{c.name} FAIL {' '.join(c.faults)}: {c.detail}" + (f" [{c.action}]" if c.action else ""),
                        newlines=False) for c in bad]
    left = run.left_out()
    if left:
        out += ["", f"left out of the cluster tests ({len(left)} host{'s' if len(left) != 1 else ''}):"]
        out += [visible(f"{host}: {why}", newlines=False) for host, why in left.items()]
    gaps = [r for r in run.results if r.outcome is Outcome.UNTESTED]
    if gaps:
        out += ["", "untested (not failed, not passed; what would close each):"]
        out += [visible(f"{r.check} [{hostlist.fold(list(r.hosts))}] UNTESTED: {r.message}", newlines=False)
                for r in gaps]
    return out


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
        if r.check == "localize" and r.outcome is not Outcome.UNTESTED:
            out += [visible(f"  suspect {f.host} {f.device}: confidence {number(f.value)} [{f.fault}: {f.action}]; "
                            f"{f.detail}", newlines=False)
                    for f in r.findings if not f.ok and f.fault != coverage.UNTESTED]
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
