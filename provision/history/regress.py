"""Regression gates: a node slower than it used to be, or than its rack, while still above its threshold.

Two gates, on every node-scope finding that passed its absolute reference and whose reference
bounds it from below only (higher is better: bandwidths, busbw; a temperature is bounded from
above and is not gated):

- own median: the value is more than ``own_pct`` percent below the median of the host's own
  passing values of that check/device/metric in its last ``window`` earlier runs (at least
  ``MIN_RUNS`` of them);
- rack MAD: the value is more than ``mad_k`` scaled MADs below the median of this run's hosts of
  the same hardware profile (the rack) for that check/device/metric, for racks of at least
  ``MIN_RACK`` hosts. MAD is the median absolute deviation from the median, scaled by 1.4826 so it
  estimates the standard deviation of normal data (NIST/SEMATECH e-Handbook of Statistical Methods,
  1.3.5.6 Measures of Scale, https://www.itl.nist.gov/div898/handbook/eda/section3/eda356.htm), and
  floored at ``MAD_FLOOR`` of the median.

A host that regresses gets one result ``CheckResult(check="regression")`` (``REGRESSION``) with a
finding per regressed metric: its value, the baseline as the finding's ``reference`` (value = the
median, lower bound = the gate) and the message as ``detail``, followed by what changed in the
host's stack fingerprint since its last run without a regression ("driver 550.54.15 -> 550.90.07").
As a warning (the default) the result passes and its findings are ok: the run's exit status does
not change. As a failure (``as: failure``) the result fails with fault ``PERF_REGRESSION``, and the
host fails. Hosts without a regression get no row, so a healthy run's report is unchanged.

Where the own-median gate cannot fire: it sees only values that passed their reference, so when
``median x (1 - own_pct/100)`` is at or under the reference's lower bound no candidate can be that far below
its median. An H100's ib_write_bw (profile h100-sxm5-80g-ndr: 400 Gb/s, lower bound 380 = aznhc's NDR gate)
measures about 392-396 Gb/s; 5 % below that is 372-376 Gb/s, under 380: at the default ``own_pct`` the gate
is silent there and only the absolute threshold and the rack gate judge it. ``own_pct`` under
``1 - lower/median`` (3.5 at a median of 394) makes it fire; ``provision history`` says so per series
(``provision.history.summary``). The default stays 5: with the tools' run-to-run spread of about +-2 %
(above), a gate at 3 % flags a healthy host whose value sits 2 % under nominal while its median sits 1 %
over it; a site that wants the gate on such a metric lowers ``own_pct`` knowing that.

Configuration: the inventory variable ``provision_regression: {own_pct, window, mad_k, as}``
(group_vars or host_vars; ``provision/profiles/site.schema.json``), read per host.
"""
from __future__ import annotations

import math
import sqlite3
import statistics
from collections import defaultdict
from dataclasses import dataclass

from provision.checks import faults
from provision.history import db, fingerprint
from provision.profiles import schema
from provision.results.model import REGRESSION, CheckResult, Finding, Outcome, Reference, Run, Scope, number

VAR = "provision_regression"
# Defaults. own_pct 5: the profiles' own lower bounds are 5% (aznhc's 380 Gb/s NDR gate on 400), and
# perftest/nccl-tests repeat within about 2% (the simulator's noise), so 5% is beyond run-to-run noise.
# window 7: a week of nightly runs. mad_k 3: "very conservative" in Leys et al., Detecting outliers,
# J. Exp. Soc. Psychol. 49 (2013) 764-766 (https://doi.org/10.1016/j.jesp.2013.03.013).
DEFAULTS = {"own_pct": 5.0, "window": 7, "mad_k": 3.0, "as": "warning"}
MIN_RUNS = 2  # a median of one earlier run is that run's noise
MIN_RACK = 4  # with 3 hosts one slow host is a third of the sample and drags the MAD with it
MAD_SCALE = 1.4826  # 1 / Phi^-1(3/4): MAD -> standard deviation for normal data (NIST, above)
# Floor on the scaled MAD as a fraction of the rack median: identical peers (MAD 0), or a small rack whose MAD
# is estimated from a few values, would make a value a little below the median a regression. 2%: the run-to-run
# noise of the tools as the simulator models it (+-2%, hwmodel.NOISE_PCT), so at k=3 a host must be at least 6%
# below its rack. A judgment standing in for a measured repeatability, not a published figure.
MAD_FLOOR = 0.02
FAULT = "PERF_REGRESSION"
JUDGED = (Outcome.PASS, Outcome.FAIL)  # results whose findings were judged (a failed one's ok findings still count)


@dataclass(frozen=True)
class Config:
    """One host's gates: ``own_pct`` percent, ``window`` runs, ``mad_k`` scaled MADs, ``failure``
    True when a regression fails the host (``as: failure``)."""

    own_pct: float
    window: int
    mad_k: float
    failure: bool


def config(host_vars: dict, origin: str) -> Config:
    """The host's ``provision_regression`` over ``DEFAULTS``. Raises ProfileError (exit 2) naming
    ``origin`` and the key for a value the site schema refuses."""
    given = host_vars.get(VAR)
    if given is not None:
        schema.validate({VAR: given}, "site", origin)
    merged = {**DEFAULTS, **(given or {})}
    return Config(float(merged["own_pct"]), int(merged["window"]), float(merged["mad_k"]), merged["as"] == "failure")


@dataclass(frozen=True)
class Candidate:
    """A passing, higher-is-better measurement of this run: ``value`` in ``unit``."""

    host: str
    check: str
    device: str
    metric: str
    value: float
    unit: str


@dataclass(frozen=True)
class Flag:
    """One gate's verdict on a candidate: the baseline as a Reference, and the sentence."""

    candidate: Candidate
    reference: Reference
    text: str


def candidates(run: Run) -> list[Candidate]:
    """The gateable measurements of ``run`` (see the module docstring), in run order."""
    out = []
    for result in run.results:
        if result.scope is not Scope.NODE or result.check == REGRESSION or result.outcome not in JUDGED:
            continue
        for f in result.findings:
            ref = f.reference
            if (f.ok and ref is not None and ref.lower is not None and ref.upper is None
                    and isinstance(f.value, (int, float)) and not isinstance(f.value, bool)
                    and math.isfinite(f.value)):
                out.append(Candidate(result.host, result.check, f.device, f.metric, float(f.value), f.unit))
    return out


def own_median(conn: sqlite3.Connection, c: Candidate, cfg: Config, before: str,
               past: list[tuple[str, float]] | None = None) -> Flag | None:
    """The own-median gate for one candidate, against runs started before ``before``; ``past`` the
    candidate's series when already read (``db.series_of_host``), else it is read here."""
    if past is None:
        past = db.series(conn, c.host, c.check, c.device, c.metric, before, cfg.window)
    if len(past) < MIN_RUNS:
        return None
    median = statistics.median(v for _, v in past)
    if median <= 0 or c.value >= median * (1 - cfg.own_pct / 100):
        return None
    below = (median - c.value) / median * 100
    ref = Reference(median, -cfg.own_pct / 100, None, c.unit, f"median of {c.host}'s last {len(past)} runs "
                    f"(history), gate {number(cfg.own_pct)}% below", {"window": cfg.window, "runs": len(past)})
    text = (f"{c.host} {c.device} {c.metric} {number(c.value)} {c.unit} is {below:.1f}% below its median "
            f"{number(median)} of the last {len(past)} runs")
    return Flag(c, ref, text)


def rack_mad(found: list[Candidate], profiles: dict[str, str | None], configs: dict[str, Config]) -> list[Flag]:
    """The rack gate over this run's candidates: hosts grouped by profile and check/device/metric."""
    groups: dict[tuple, dict[str, Candidate]] = defaultdict(dict)
    for c in found:
        groups[(profiles.get(c.host), c.check, c.device, c.metric)].setdefault(c.host, c)
    flags = []
    for members in groups.values():
        if len(members) < MIN_RACK:
            continue
        values = [c.value for c in members.values()]
        median = statistics.median(values)
        mad = max(MAD_SCALE * statistics.median(abs(v - median) for v in values), MAD_FLOOR * abs(median))
        for c in members.values():
            k = configs[c.host].mad_k
            if median > 0 and c.value < median - k * mad:
                ref = Reference(median, -k * mad / median, None, c.unit, f"median of this run's {len(members)} "
                                f"hosts of the rack, gate {number(k)} scaled MAD below",
                                {"mad": round(mad, 3), "hosts": len(members)})
                text = (f"{c.host} {c.device} {c.metric} {number(c.value)} {c.unit} is {(median - c.value) / mad:.1f} "
                        f"MAD below the rack median {number(median)} (MAD {number(mad)} {c.unit}, "
                        f"{len(members)} hosts)")
                flags.append(Flag(c, ref, text))
    return flags


def gate(conn: sqlite3.Connection, run: Run, prints: dict[str, dict[str, str | None]]) -> list[CheckResult]:
    """The regression results of ``run`` against the runs in ``conn`` that started before it, one per
    regressed host; ``prints`` this run's fingerprints (``fingerprint.of_run``). Raises ProfileError
    for a bad ``provision_regression``."""
    configs = {h: config(r.vars, f"host {h}") for h, r in run.hosts.items()}
    found = [c for c in candidates(run) if c.host in configs]
    flags = []
    by_host: dict[str, list[Candidate]] = defaultdict(list)
    for c in found:
        by_host[c.host].append(c)
    for host, mine in by_host.items():
        past = db.series_of_host(conn, host, run.started, configs[host].window)
        flags += [f for c in mine if (f := own_median(conn, c, configs[host], run.started,
                                                        past.get((c.check, c.device, c.metric), []))) is not None]
    flags += rack_mad(found, {h: r.profile for h, r in run.hosts.items()}, configs)
    flagged: dict[str, list[Flag]] = defaultdict(list)
    for flag in flags:
        flagged[flag.candidate.host].append(flag)
    return [_result(host, mine, configs[host], _stack_change(conn, host, run.started, prints.get(host, {})))
            for host, mine in flagged.items()]


def _stack_change(conn: sqlite3.Connection, host: str, before: str, now: dict[str, str | None]) -> str:
    """'stack since run R: driver a -> b' against the host's last run without a regression; '' for none."""
    good = db.last_good_run(conn, host, before)
    if good is None:
        return ""
    changed = fingerprint.changes(db.fingerprint(conn, good, host), now)
    return f"stack since run {good}: {', '.join(changed)}" if changed else f"stack unchanged since run {good}"


def _result(host: str, flags: list[Flag], cfg: Config, stack: str) -> CheckResult:
    findings = []
    for flag in flags:
        c = flag.candidate
        detail = f"{flag.text}; {stack}" if stack else flag.text
        findings.append(Finding(c.device, c.metric, c.value, not cfg.failure, c.unit, flag.reference, detail=detail,
                                fault=FAULT if cfg.failure else "",
                                action=faults.action(FAULT) if cfg.failure else ""))
    message = "; ".join(dict.fromkeys(flag.text for flag in flags)) + (f"; {stack}" if stack else "")
    return CheckResult(REGRESSION, (host,), Outcome.FAIL if cfg.failure else Outcome.PASS,
                       message if cfg.failure else f"warning: {message}", findings=findings)
