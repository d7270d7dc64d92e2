"""The HTML report of a run: self-contained files (inline CSS and SVG, no script, no external
CSS, fonts or images), from the Jinja templates in ``templates/`` with autoescape on
(host names and tool messages are untrusted text; a Content-Security-Policy of ``default-src
'none'`` is the second line).

Sections, in order: the failing hosts (each failing or erroring result: host, check, message,
every failing finding's fault code and action; failed installs), the plots (NCCL all-reduce
busbw of ``nccl_allreduce``/``nccl_cluster`` and IB write bandwidth of ``ib_write_bw``/
``ib_pairs`` per node against the findings' reference and lower bound), the cluster procedure
when the run has one (rounds, suspects), each host's results with its GPU x GPU heatmap
(nvbandwidth's device->device findings, else its raw output) and its trend across runs when a
history is given, then the sources of the references.

A run of more than ``INLINE_HOSTS`` hosts gets each host's section on a page of its own,
``<page>/hosts/<host>.html`` beside ``<page>.html`` (``report/hosts/gpu001.html``), and the first
page an index linking to them: at 1,250 hosts the single page was 76 MB, which no browser opens
usefully (issue 20); the first page (failures, plots, cluster procedure) stays a few MB.

``trend``: {host: [(run id, metric, value), ...]} oldest first, as a history database answers
(``Trend``); any mapping of that shape plugs in.
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from provision.errors import ProvisionError
from provision.parsers import parse_tool
from provision.report import summary, svg
from provision.results.model import ESTIMATE, CheckResult, Outcome, Run, Scope, number
from provision.results.store import RunDir, atomic_write, safe_name

Trend = Mapping[str, Sequence[tuple[str, str, float]]]
TEMPLATES = Path(__file__).with_name("templates")
PLOTS = (  # title, checks, metric
    ("NCCL all-reduce bus bandwidth in each node", ("nccl_allreduce",), "busbw_GBps"),
    ("NCCL all-reduce bus bandwidth across nodes", ("nccl_cluster",), "busbw_GBps"),
    ("InfiniBand write bandwidth per HCA (loopback)", ("ib_write_bw",), "bw_avg_Gbps"),
    ("InfiniBand write bandwidth between nodes (IB pairs)", ("ib_pairs",), "bw_avg_Gbps"),
)
D2D = "d2d_GBps"
_PAIR = re.compile(r"^GPU(\d+)->GPU(\d+)$")
ORDER = {"error": 0, "fail": 1, "pass": 2}
INLINE_HOSTS = 64  # more hosts than this: one page per host
BELOW = 0.9  # the localizer's passing ratio (provision.engine.cluster.THRESHOLD: ratios are scaled to it)


def render(run: Run, rundir: RunDir | None = None, trend: Trend | None = None, pages: str = "") -> str:
    """The report's (first) page. ``rundir`` (optional) lets a heatmap come from nvbandwidth's raw
    output when its result has no findings; ``trend`` adds each host's trend plots. ``pages`` (a
    relative folder) lists the hosts as links to ``<pages>/<host>.html`` instead of their sections."""
    verdicts = run.verdicts()
    covering = run.by_host()
    ordered = sorted(verdicts.items(), key=lambda hv: (ORDER[hv[1]], hv[0]))
    hosts = ([{"name": host, "verdict": verdict} for host, verdict in ordered] if pages else
             [_host(run, host, verdict, rundir, trend, covering.get(host, [])) for host, verdict in ordered])
    return _template("report.html.j2").render(
        run=run, verdicts=verdicts, counts={v: list(verdicts.values()).count(v) for v in ORDER},
        failures=failures(run), plots=plots(run), cluster=cluster(run), hosts=hosts, pages=pages,
        sources=sources(run), number=number, outcome=run.outcome(), fabric=fabric(run),
        versions=summary.versions(run))


def fabric(run: Run) -> dict:
    """The run's fabric and coverage as the console tells them (``summary.fabric_counts``): ``counts`` the
    cables' and switch ports' line, ``components`` the cables that failed or were not tested (with their
    faults, action and why), ``left_out`` {host: why} the hosts left out of the cluster tests, ``untested``
    the results that are coverage gaps (check, hosts, what would close it)."""
    return {"counts": summary.fabric_counts(run),
            "components": [{"name": c.name, "outcome": c.outcome.value, "faults": " ".join(c.faults),
                            "detail": c.detail, "action": c.action}
                           for c in run.fabric_components() if c.kind == "cable" and c.outcome is not Outcome.PASS],
            "left_out": run.left_out(),
            "untested": [{"check": r.check, "hosts": ", ".join(r.hosts), "message": r.message}
                         for r in run.results if r.outcome is Outcome.UNTESTED]}


def render_host(run: Run, host: str, back: str, rundir: RunDir | None = None, trend: Trend | None = None,
                covering: dict[str, list[CheckResult]] | None = None, verdicts: dict[str, str] | None = None) -> str:
    """The page of one host (its section of ``render``), linking ``back`` to the first page.
    ``covering`` and ``verdicts``: ``run.by_host()`` and ``run.verdicts()`` when the caller has them."""
    covering = run.by_host() if covering is None else covering
    verdict = (run.verdicts() if verdicts is None else verdicts)[host]
    return _template("host.html.j2").render(run=run, back=back, number=number,
                                            h=_host(run, host, verdict, rundir, trend, covering.get(host, [])))


@functools.cache
def _template(name: str) -> jinja2.Template:
    """A compiled template, once per process (autoescape on; an undefined name is an error)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(name)


def write(path: Path, run: Run, rundir: RunDir | None = None, trend: Trend | None = None) -> Path:
    """Write ``path`` atomically (mode 0600, as the run's other files); with more than ``INLINE_HOSTS``
    hosts, each host's page under ``<path without .html>/hosts/`` too (folders 0700; pages of hosts
    no longer in the run removed). Returns ``path``."""
    verdicts = run.verdicts()
    if len(verdicts) <= INLINE_HOSTS:
        atomic_write(path, render(run, rundir, trend))
        return path
    folder = path.with_suffix("") / "hosts"
    folder.parent.mkdir(mode=0o700, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    pages = f"{folder.parent.name}/hosts"
    covering = run.by_host()
    written = set()
    for host in verdicts:
        page = folder / f"{safe_name(host, 'a host page name')}.html"
        atomic_write(page, render_host(run, host, f"../../{path.name}", rundir, trend, covering, verdicts), sync=False)
        written.add(page)
    for old in set(folder.glob("*.html")) - written:
        old.unlink()
    atomic_write(path, render(run, rundir, trend, pages))
    return path


def failures(run: Run) -> list[dict]:
    """Rows of the failing-hosts table: {host, check, outcome, message (without the "[CODE: action]" the
    faults column shows), faults: [(code, action)] once each}, by host: its failed install roles, then every
    failing or erroring result it is blamed for."""
    rows: list[dict] = [{"host": host, "check": f"install.{role}", "outcome": inst.status,
                         "message": f"{f.task}: {f.msg}", "faults": []}
                        for host, inst in sorted(run.install.items())
                        for role, r in inst.roles.items() for f in r.failed]
    for r in run.results:
        if r.outcome is Outcome.ERROR or (r.outcome is Outcome.FAIL and r.blamed()):
            bad = [f for f in r.findings if not f.ok]
            faults = list(dict.fromkeys((f.fault, f.action) for f in bad))
            message = r.message
            for code, action in faults:  # the action has its own column; the message keeps the figures
                message = message.replace(f" [{code}: {action}]", "")
            rows.append({"host": "+".join(r.blamed()) if r.outcome is Outcome.FAIL else r.host, "check": r.check,
                         "outcome": r.outcome.value, "message": message, "faults": faults})
    return sorted(rows, key=lambda row: row["host"])  # stable: per host its install, then its results in run order


def plots(run: Run) -> list[dict]:
    """One strip chart per (plot, reference): {title, unit, svg}; findings judged against different
    references (other profiles) get a chart each."""
    out = []
    for title, checks, metric in PLOTS:
        groups: dict[tuple, list[svg.Column]] = {}
        for r in run.results:
            found = [f for f in r.findings if f.metric == metric] if r.check in checks else []
            if found:
                ref = found[0].reference
                key = (found[0].unit, ref.value if ref else None, ref.bounds()[0] if ref else None)
                dots = tuple(svg.Dot(f.device, _float(f.value), f.ok) for f in found)
                groups.setdefault(key, []).append(svg.Column(_label(r.hosts), dots))
        for (unit, value, low), columns in groups.items():
            out.append({"title": title, "unit": unit, "reference": value, "lower": low,
                        "svg": svg.strip(columns, unit, value, low)})
    return out


def cluster(run: Run) -> list[dict]:
    """Per host group of the cluster procedure: {profile, hosts, schedule, rounds_total, error, rounds:
    [{round, phase, tests: [{kind, purpose, hosts, ratio, rails, error, below}], below}], suspects: [{kind,
    host, where, confidence, evidence: [text]}]}; ``below`` counts the round's tests in error or with any
    figure under the localizer's threshold: the collective's ratio or any rail's (a pair test has rail
    ratios only, its ``ratio`` None: one rail at 23 % of its reference is a test below it)."""
    out = []
    for group in (run.cluster or {}).get("groups", []):
        rounds = [{"round": r["round"], "phase": r["phase"], "tests": [_test(t) for t in r["tests"]]}
                  for r in group.get("rounds", [])]
        for r in rounds:
            r["below"] = sum(1 for t in r["tests"] if t["below"])
        out.append({"profile": group.get("profile"), "hosts": group.get("hosts", []),
                    "schedule": group.get("schedule"), "rounds_total": group.get("rounds_total"),
                    "error": group.get("error", ""), "rounds": rounds,
                    "suspects": [_suspect(s) for s in group.get("suspects", [])]})
    return out


def _test(t: dict) -> dict:
    """One test of a round; ``below``: in error, or its ratio or one rail's under ``BELOW``."""
    ratios = {k: _float(v) for k, v in (t.get("rail_ratios") or {}).items()}
    rails = ", ".join(f"rail {k}: {number(v)}" for k, v in ratios.items())
    ratio, error = _float(t.get("ratio")), t.get("error", "")
    low = [v for v in (ratio, *ratios.values()) if v is not None and v < BELOW]
    return {"kind": t.get("kind"), "purpose": t.get("purpose"), "hosts": "+".join(t.get("hosts") or []),
            "ratio": ratio, "rails": rails, "error": error, "below": bool(error or low)}


def _suspect(s: dict) -> dict:
    cable = s.get("cable") or {}
    where = (f"cable {cable.get('leaf')}[{cable.get('leaf_port')}] <-> {cable.get('spine')}[{cable.get('spine_port')}]"
             f" ({cable.get('plane')})" if cable else
             f"{s.get('device') or ''} rail {s.get('rail')}" if s.get("kind") == "hca" else "node")
    evidence = []
    for e in s.get("evidence") or []:
        if e.get("test") == "ibnetdiscover":
            evidence.append(f"ibnetdiscover: {e.get('width_speed')}, expected {e.get('expected')}")
            continue
        rail = f" rail {e['rail']}" if e.get("rail") is not None else ""
        short = f" -{e['shortfall_pct']}%" if e.get("shortfall_pct") is not None else ""
        evidence.append(f"round {e.get('round')} {e.get('test')} {'+'.join(e.get('hosts') or [])}{rail}{short}")
    return {"kind": s.get("kind"), "host": s.get("host") or "fabric", "where": where,
            "confidence": s.get("confidence"), "evidence": evidence}


def _label(hosts: tuple[str, ...]) -> str:
    """A plot column's name: the host, a pair's two hosts, or a group's size and first host."""
    return "+".join(hosts) if len(hosts) <= 2 else f"{len(hosts)} hosts: {hosts[0]}, ..."


def _host(run: Run, host: str, verdict: str, rundir: RunDir | None, trend: Trend | None,
          results: list[CheckResult]) -> dict:
    """One host's section: verdict, profile, install, its ``results`` and plots, the power actions the run took
    through its BMC (``power``) and the event-log entries its ``bmc`` check named (``sel``: critical and warning)."""
    record, inst = run.hosts.get(host), run.install.get(host)
    nvb = next((r for r in results if r.check == "nvbandwidth" and r.scope is Scope.NODE), None)
    return {"name": host, "verdict": verdict, "profile": record.profile if record else None,
            "install": inst, "results": [_row(r) for r in results],
            "heatmap": _heatmap(nvb, rundir) if nvb else None,
            "trends": _trends(trend.get(host, ()) if trend else (), run.run_id),
            "power": [a for a in run.power_actions or () if a.get("host") == host],
            "sel": [{"when": f.detail, "device": f.device, "message": f.value, "ok": f.ok} for r in results
                    if r.check == "bmc" for f in r.findings if f.metric == "sel_entry"]}


def _row(r: CheckResult) -> dict:
    """One result of a host's table; ``bad`` the failing findings its message does not already say."""
    return {"check": r.check, "scope": r.scope.value, "hosts": r.host, "outcome": r.outcome.value,
            "message": r.message, "duration_s": r.duration_s,
            "bad": [text for text in (f.describe() for f in r.findings if not f.ok) if text not in r.message]}


def _heatmap(result: CheckResult, rundir: RunDir | None):
    """The device->device matrix of one nvbandwidth result: from its d2d findings, else from its raw
    output (parsed again; no reference then). None when neither has one."""
    cells: dict[tuple[int, int], float | None] = {}
    failing, ref = set(), None
    for f in result.findings:
        match = _PAIR.match(f.device) if f.metric == D2D else None
        if match:
            pair = (int(match.group(1)), int(match.group(2)))
            cells[pair] = _float(f.value)
            ref = ref or f.reference
            if not f.ok:
                failing.add(pair)
    if not cells and rundir is not None:
        cells = _raw_matrix(result, rundir)
    if not cells:
        return None
    return svg.heatmap(cells, "GB/s", ref.value if ref else None, ref.bounds()[0] if ref else None,
                       frozenset(failing))


def _raw_matrix(result: CheckResult, rundir: RunDir) -> dict[tuple[int, int], float | None]:
    """{(source, destination): GB/s} of the first GPU x GPU test in the result's raw output; {} when it
    is missing or does not parse. A "GPU(row) <- GPU(column)" caption means the column is the source."""
    for raw in result.raw:
        try:
            parsed = parse_tool("nvbandwidth", rundir.read(raw.path, f"{result.host} nvbandwidth"))
        except ProvisionError:
            continue
        for test in parsed["tests"]:
            caption = test["caption"] or ""
            if caption.count("GPU(") == 2 and test["matrix"]:
                back = "<-" in caption
                return {((c, r) if back else (r, c)): v for r, row in test["matrix"].items() for c, v in row.items()}
    return {}


def _trends(points: Sequence[tuple[str, str, float]], upto: str = "") -> list[dict]:
    """One trend plot per metric: {metric, runs, svg}, of the runs up to the report's own (``upto``, a run
    id): a run listed after it in ``points`` (oldest first) is newer than the report and left out, whatever
    the mapping's source filtered."""
    points = _up_to(points, upto)
    by_metric: dict[str, list[tuple[str, float]]] = {}
    for run_id, metric, value in points:
        if _float(value) is not None:
            by_metric.setdefault(metric, []).append((str(run_id), float(value)))
    return [{"metric": m, "runs": len(p), "svg": svg.trend(p, _unit(m))} for m, p in sorted(by_metric.items())]


def _up_to(points: Sequence[tuple[str, str, float]], upto: str) -> Sequence[tuple[str, str, float]]:
    """``points`` of the runs listed no later than run ``upto`` (by each run's first point); all of them
    when ``upto`` is not among them (the history has not stored the report's run: its reader filtered)."""
    order = {run_id: i for i, run_id in enumerate(dict.fromkeys(str(p[0]) for p in points))}
    if upto not in order:
        return points
    return [p for p in points if order[str(p[0])] <= order[upto]]


def _unit(metric: str) -> str:
    """The unit a metric name ends with (STYLE.md: ``busbw_GBps`` -> GB/s)."""
    tail = metric.rsplit("_", 1)[-1]
    return {"GBps": "GB/s", "Gbps": "Gb/s", "MiBps": "MiB/s", "C": "C", "Mbps": "Mb/s"}.get(tail, tail)


def sources(run: Run) -> list[str]:
    """Every distinct reference source the run's findings were judged against, sorted; an estimate's source
    begins "judged against an estimate: " (the reference is no published figure: its source says how it was
    reasoned)."""
    return sorted({(f"{ESTIMATE}: " if f.reference.estimate else "") + f.reference.source for r in run.results
                   for f in r.findings if f.reference is not None and f.reference.source})


def _float(value: object) -> float | None:
    """A finding's value as a finite float; None when it is not a number (N/A, "inf" as saved)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        out = float(value)
    except ValueError:
        return None
    return out if math.isfinite(out) else None
