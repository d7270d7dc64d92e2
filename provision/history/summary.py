"""``provision history``'s default view: per host its last runs and verdicts, its regressions with their
baseline, the changes of its stack, and the series on which the own-median gate cannot fire.

- verdict of a run: error when a stored row of the host errored, fail when one failed (a failing finding,
  a regression as a failure), else pass: read from the stored rows, as the run judged them;
- a regression: the ``regression`` rows (provision.history.regress) with the baseline stored beside them
  (``refs``, history schema 3: the median and the gate); a run stored before that has none to show;
- stack changes: each run's fingerprint against the host's previous run (provision.history.fingerprint);
- gates: the own-median gate fires on a value more than ``own_pct`` below the host's median, but only on a
  value that passed its absolute reference (regress.candidates). When ``median x (1 - own_pct/100)`` is at
  or under the reference's lower bound, no passing value can be that far below it: the gate cannot fire and
  the check's own threshold is the only one. An H100's ib_write_bw: lower bound 380 Gb/s (5 % under the
  400 Gb/s line rate), median about 392-396 Gb/s, 5 % below that 372-376 Gb/s: under 380. Said per series
  with the ``own_pct`` that would make it fire (``reach``).

The gates' settings are a site's inventory variables, not in the history: this view reads them at their
defaults (``regress.DEFAULTS``) and says so.
"""
from __future__ import annotations

import sqlite3
import statistics
import textwrap
from dataclasses import asdict, dataclass, field

from provision.history import db, fingerprint, regress
from provision.results.model import REGRESSION, number

LAST_RUNS = 5  # the runs a summary lists; older ones are counted
WIDTH = 100  # the text's lines, as provision fabric's (provision.report.fabric_text)


@dataclass
class HostSummary:
    """One host's record: ``runs`` [(run id, started, verdict)] oldest first (all of them: ``lines`` shows
    the last ``LAST_RUNS``), ``regressions`` [{run, started, device, metric, value, unit, outcome, baseline,
    gate, detail}], ``stack`` ["run (date): driver a -> b"], ``gates`` [sentences]."""

    host: str
    runs: list[tuple[str, str, str]] = field(default_factory=list)
    regressions: list[dict] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    gates: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["runs"] = [{"run": r, "started": s, "verdict": v} for r, s, v in self.runs]
        return out


def hosts(conn: sqlite3.Connection, host: str | None = None, since: str | None = None) -> list[str]:
    """The hosts with a run in the history (``host`` alone when given), sorted."""
    where, args = ["1 = 1"], []
    if host is not None:
        where.append("h.host = ?")
        args.append(host)
    if since is not None:
        where.append("u.started >= ?")
        args.append(since)
    found = conn.execute(f"SELECT DISTINCT h.host FROM hosts h JOIN runs u USING (run_id) WHERE {' AND '.join(where)} "
                         "ORDER BY h.host", args)
    return [name for (name,) in found]


def summarize(conn: sqlite3.Connection, host: str, check: str | None = None, metric: str | None = None,
              since: str | None = None) -> HostSummary:
    """``host``'s summary; ``metric`` narrows its regressions (a regression row names the metric, not its
    check), ``check`` and ``metric`` its gates, ``since`` its runs."""
    out = HostSummary(host)
    out.runs = _runs(conn, host, since)
    shown = {run for run, _, _ in out.runs}
    refs = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'refs'").fetchone() is not None
    out.regressions = [r for r in _regressions(conn, host, refs) if r["run"] in shown
                       and metric in (None, r["metric"])]
    out.stack = _stack(conn, host, shown)
    out.gates = _gates(conn, host, check, metric) if refs else []
    return out


def _runs(conn: sqlite3.Connection, host: str, since: str | None) -> list[tuple[str, str, str]]:
    found = conn.execute(
        "SELECT u.run_id, u.started, SUM(r.outcome = 'error'), SUM(r.outcome = 'fail') FROM hosts h "
        "JOIN runs u USING (run_id) LEFT JOIN results r ON r.run_id = h.run_id AND r.host = h.host "
        "WHERE h.host = ? AND u.started >= ? GROUP BY u.run_id ORDER BY u.started, u.run_id", (host, since or ""))
    return [(run, started, "error" if errors else "fail" if fails else "pass") for run, started, errors, fails in found]


def _regressions(conn: sqlite3.Connection, host: str, stored_refs: bool = True) -> list[dict]:
    """The host's regression rows oldest first, each with the baseline stored beside it (paired in order
    per run, device and metric: two gates may flag one metric); ``stored_refs`` False for a history file
    not yet at schema 3 (read-only: it is not migrated), whose rows have no baseline."""
    rows = conn.execute(
        "SELECT r.run_id, u.started, r.device, r.metric, r.value, r.unit, r.outcome FROM results r JOIN runs u "
        "USING (run_id) WHERE r.host = ? AND r.check_id = ? ORDER BY u.started, r.run_id, r.rowid",
        (host, REGRESSION)).fetchall()
    refs: dict[tuple, list[tuple]] = {}
    for run, device, metric, reference, lower, detail in conn.execute(
            "SELECT run_id, device, metric, reference, lower, detail FROM refs WHERE host = ? AND check_id = ? "
            "ORDER BY rowid", (host, REGRESSION)) if stored_refs else ():
        refs.setdefault((run, device, metric), []).append((reference, lower, detail))
    out = []
    for run, started, device, metric, value, unit, outcome in rows:
        stored = refs.get((run, device, metric)) or [(None, None, "")]
        reference, lower, detail = stored.pop(0) if len(stored) > 1 else stored[0]
        out.append({"run": run, "started": started, "device": device, "metric": metric, "value": value,
                    "unit": unit, "outcome": "warning" if outcome == "pass" else "failure", "baseline": reference,
                    "gate": lower, "detail": detail})
    return out


def _stack(conn: sqlite3.Connection, host: str, shown: set[str]) -> list[str]:
    found = conn.execute(f"SELECT h.run_id, u.started, {', '.join('h.' + c for c in db.FINGERPRINT)} FROM hosts h "
                         "JOIN runs u USING (run_id) WHERE h.host = ? ORDER BY u.started, h.run_id", (host,))
    out: list[str] = []
    before: dict[str, str | None] = {}  # each field as last read (a run that did not read one keeps it)
    for run, started, *values in found:
        now: dict[str, str | None] = dict(zip(db.FINGERPRINT, values))
        changed = fingerprint.changes(before, now)
        if changed and run in shown:
            out.append(f"{run} ({started[:10]}): {', '.join(changed)}")
        before = {k: v if v is not None else before.get(k) for k, v in now.items()}
    return out


def _gates(conn: sqlite3.Connection, host: str, check: str | None, metric: str | None) -> list[str]:
    """A sentence per series of the host (its numeric passing values bounded from below) where the
    own-median gate at its default cannot fire (module docstring)."""
    cfg = regress.config({}, "defaults")
    found = conn.execute(
        "SELECT r.check_id, r.device, r.metric, r.unit, r.value, f.lower FROM results r JOIN runs u USING (run_id) "
        "JOIN refs f ON f.run_id = r.run_id AND f.host = r.host AND f.check_id = r.check_id AND f.device = r.device "
        "AND f.metric = r.metric WHERE r.host = ? AND r.outcome = 'pass' AND r.check_id != ? AND f.lower IS NOT NULL "
        "AND typeof(r.value) = 'real' ORDER BY u.started DESC, u.run_id DESC", (host, REGRESSION))
    series: dict[tuple[str, str, str], tuple[str, float, list[float]]] = {}
    for check_id, device, name, unit, value, lower in found:
        if check in (None, check_id) and metric in (None, name):
            _, _, values = series.setdefault((check_id, device, name), (unit, lower, []))
            if len(values) < cfg.window:
                values.append(value)
    out = []
    for (check_id, device, name), (unit, lower, values) in sorted(series.items()):
        median = statistics.median(values)
        line = median * (1 - cfg.own_pct / 100)
        if len(values) >= regress.MIN_RUNS and 0 < median and line <= lower:
            out.append(f"own-median gate cannot fire on {check_id} {device} {name}: {number(cfg.own_pct)}% below "
                       f"its median {number(median)} {unit} is {number(line)} {unit}, at or under the lower bound "
                       f"{number(lower)} {unit} (a value there fails the check first); it would fire with "
                       f"own_pct under {number(reach(median, lower))}")
    return out


def reach(median: float, lower: float) -> float:
    """The largest ``own_pct`` (percent, floored to 0.1) at which the own-median gate can still flag a value
    that passed its lower bound ``lower``: a gate line above ``lower``."""
    return max(0.0, int((1 - lower / median) * 1000) / 10) if median > 0 else 0.0


def lines(summaries: list[HostSummary]) -> list[str]:
    """The text view: per host a heading, its last runs, regressions, stack changes and gate notes."""
    cfg = regress.DEFAULTS
    out = []
    for s in summaries:
        regressed = {r["run"] for r in s.regressions}
        verdicts = [(r, v + (" (regression)" if r in regressed else "")) for r, _, v in s.runs]
        last = verdicts[-LAST_RUNS:]
        span = f"{s.runs[0][1][:10]} to {s.runs[-1][1][:10]}" if s.runs else "-"
        verdict = f"; last {verdicts[-1][0]}: {verdicts[-1][1]}" if s.runs else ""
        out.append(f"{s.host}: {len(s.runs)} runs from {span}{verdict}")
        older = f" (and {len(s.runs) - len(last)} older)" if len(s.runs) > len(last) else ""
        out += _wrap(f"  last runs{older}: " + (", ".join(f"{r} {v}" for r, v in last) or "-"), "    ")
        out.append(f"  regressions: {len(s.regressions)}")
        for r in s.regressions:
            unit = r["unit"]
            base = (f"baseline {number(r['baseline'])} {unit}, gate {number(r['gate'])} {unit}"
                    if r["baseline"] is not None else "baseline not stored (run stored before history schema 3)")
            out += _wrap(f"    {r['run']} ({r['started'][:10]}): {r['device']} {r['metric']} {number(r['value'])} "
                         f"{unit}, {base}; a {r['outcome']}", "      ")
            if r["detail"]:
                out += _wrap(f"      {r['detail']}", "      ")
        out.append("  stack changes: " + ("none" if not s.stack else str(len(s.stack))))
        for change in s.stack:
            out += _wrap(f"    {change}", "      ")
        for gate in s.gates:
            out += _wrap(f"  {gate}", "    ")
    if any(s.gates for s in summaries):
        out += _wrap(f"(gates read at their defaults: own_pct {number(cfg['own_pct'])}, window {cfg['window']}; a "
                     "site's provision_regression may differ; `--rows` prints the stored rows)", " ")
    return out


def _wrap(line: str, indent: str) -> list[str]:
    """``line`` in lines of at most ``WIDTH`` characters, broken at spaces."""
    lead = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line.lstrip(), WIDTH, initial_indent=lead, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [line]
