"""The burn-in engine: run every check on every host, save raw output, judge it.

Outcome in stages (STYLE.md): not applicable -> skipped; exit status, timeout or parse
error -> error; a finding outside its reference -> fail; else pass. Raw output is always
saved as ``raw/<host>/<check>.txt`` (``<check>.<key>.txt`` for per-device steps), so that
``provision evaluate`` can judge it again without touching a node.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from provision import profiles
from provision.checks import Check, Outcome, registry
from provision.checks.base import Finding
from provision.errors import CommandError, ParseError, ProfileError
from provision.evaluate import describe
from provision.inventory import Host
from provision.runner.transport import CommandResult, Session

SERVER_START_S = 0.3  # perftest's server must be listening before the client connects
MAX_PARALLEL_HOSTS = 64


@dataclass
class CheckResult:
    """The verdict of one check on one host; ``findings`` are serialised Findings."""

    host: str
    check: str
    outcome: Outcome
    message: str
    duration_s: float = 0.0
    findings: list[dict] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    run_error: bool = False  # the tool could not run: a re-evaluation keeps this verdict

    def to_dict(self) -> dict:
        return {**asdict(self), "outcome": self.outcome.value}


def host_profile(host: Host) -> profiles.Profile:
    """The host's profile with its site's reference overrides applied. Raises ProfileError."""
    profile = profiles.load(host.profile)
    return profile.with_overrides(host.vars.get("provision_reference_overrides"), f"host {host.name}")


FEATURES = {"gpu": ("gpu", "count"), "hca": ("hca", "count"), "nvlink": ("gpu", "nvlink", "links"),
            "storage": ("storage", "bond")}


def applicable(check: Check, profile: profiles.Profile) -> bool:
    """False when the profile lacks a hardware feature the check needs (``FEATURES``)."""
    for need in check.needs:
        value = profile.data
        for key in FEATURES[need]:
            value = value.get(key) if isinstance(value, dict) else None
        if not value:
            return False
    return True


def run(hosts: list[Host], run_dir: Path, only: list[str] | None = None, progress=print) -> list[CheckResult]:
    """Burn in ``hosts`` in parallel; return every host's results in check order."""
    checks = [c for c in registry().values() if not only or c.id in only]
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_HOSTS, max(1, len(hosts)))) as pool:
        per_host = list(pool.map(lambda h: _run_host(h, checks, run_dir, say), hosts))
    return [r for results in per_host for r in results]


def _run_host(host: Host, checks: list[Check], run_dir: Path, progress) -> list[CheckResult]:
    try:
        profile = host_profile(host)
    except ProfileError as exc:
        return [CheckResult(host.name, c.id, Outcome.ERROR, str(exc)) for c in checks]
    raw_dir = run_dir / "raw" / host.name
    raw_dir.mkdir(parents=True, exist_ok=True)
    try:
        with Session(host) as session:
            profile = profile.for_target(_os_target(session, raw_dir))
            results = []
            for check in checks:
                result = _run_check(session, host, profile, check, raw_dir)
                progress(f"  burnin {host.name:<12} {check.id:<16} {result.outcome.value:<7} {result.duration_s:6.1f} s")
                results.append(result)
            return results
    except CommandError as exc:
        progress(f"  burnin {host.name:<12} unreachable: {exc}")
        return [CheckResult(host.name, c.id, Outcome.ERROR, str(exc)) for c in checks]


OS_RELEASE = "os-release.txt"  # raw/<host>/os-release.txt: the node's /etc/os-release, read once


def parse_os_release(text: str) -> dict:
    """``KEY=value`` lines of os-release(5), quotes removed."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def _os_target(session: Session, raw_dir: Path) -> str | None:
    """The node's NVIDIA repository folder (``profiles.target_of``), from its /etc/os-release."""
    result = session.run(["cat", "/etc/os-release"], 30.0)
    if result.rc != 0:
        return None
    (raw_dir / OS_RELEASE).write_text(result.stdout)
    return profiles.target_of(parse_os_release(result.stdout))


def _run_check(session: Session, host: Host, profile, check: Check, raw_dir: Path) -> CheckResult:
    if not applicable(check, profile):
        return CheckResult(host.name, check.id, Outcome.SKIPPED, f"not applicable to profile {profile.name}")
    started, texts, raw, problems = time.monotonic(), {}, [], []
    timeout_s = float((host.vars.get("provision_check_timeouts") or {}).get(check.id, check.timeout_s))
    steps = check.steps(profile, host)
    for step in steps:
        result = _run_step(session, step, timeout_s)
        name = f"{check.id}.{step.key}.txt" if len(steps) > 1 else f"{check.id}.txt"
        (raw_dir / name).write_text(result.stdout)
        raw.append(f"raw/{host.name}/{name}")
        if result.stderr.strip():
            (raw_dir / name.replace(".txt", ".stderr")).write_text(result.stderr)
        texts[step.key] = result.stdout
        problem = _run_problem(result, timeout_s)
        if problem:
            problems.append(f"{step.key + ': ' if step.key else ''}{problem}")
    if problems:
        out = CheckResult(host.name, check.id, Outcome.ERROR, "; ".join(problems), run_error=True)
    else:
        out = judge(host.name, check, profile, texts)
    out.duration_s, out.raw = round(time.monotonic() - started, 2), raw
    return out


def _run_step(session: Session, step, timeout_s: float) -> CommandResult:
    server = None
    if step.server:
        server, server_started = session.start(step.server, timeout_s), time.monotonic()
        time.sleep(SERVER_START_S)
    result = session.run(step.argv, timeout_s)
    if server is not None:
        session.wait(server, step.server, server_started, timeout_s)
    return result


def _run_problem(result: CommandResult, timeout_s: float) -> str:
    """Why a step's run cannot be judged ('' when it can)."""
    if result.timed_out:
        return f"{result.argv[0]} timed out after {timeout_s:.0f} s (hung tool?)"
    if result.rc == 127:
        return f"{result.argv[0]} is not installed (exit 127)"
    if result.rc != 0:
        last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
        return f"{result.argv[0]} exited {result.rc}: {last[:200]}"
    return ""


def judge(host: str, check: Check, profile, texts: dict[str, str]) -> CheckResult:
    """Parse and judge saved outputs (step key -> text): the part a re-evaluation repeats."""
    try:
        parsed = {key: check.parse(text) for key, text in texts.items()}
        cut = [key or check.tool for key, result in parsed.items() if result.get("complete") is False]
        if cut:
            return CheckResult(host, check.id, Outcome.ERROR,
                               f"{check.tool} output is incomplete (truncated or killed): {', '.join(cut)}")
        findings = check.judge(parsed, profile)
    except ParseError as exc:
        return CheckResult(host, check.id, Outcome.ERROR, f"could not parse {check.tool} output: {exc}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A judge that trips over data it did not expect could not judge: an error, never a pass.
        return CheckResult(host, check.id, Outcome.ERROR,
                           f"could not judge {check.tool} output ({type(exc).__name__}: {exc}); see the raw output")
    if not findings:  # nothing was judged (no step ran, or the output held no device): never a pass
        return CheckResult(host, check.id, Outcome.ERROR, f"{check.tool} output gave nothing to judge")
    failing = [f for f in findings if not f.ok]
    if failing:
        message = "; ".join(describe(f) for f in failing)
        return CheckResult(host, check.id, Outcome.FAIL, message, findings=[_finding(f) for f in findings])
    return CheckResult(host, check.id, Outcome.PASS, pass_message(findings), findings=[_finding(f) for f in findings])


def pass_message(findings: list[Finding]) -> str:
    """Measured metrics as ranges over devices with their reference; else the first facts checked."""
    by_metric: dict[str, list[Finding]] = {}
    for f in findings:
        if f.reference is not None:
            by_metric.setdefault(f.metric, []).append(f)
    parts = []
    for metric, rows in by_metric.items():
        if len(rows) == 1:
            parts.append(describe(rows[0]))
            continue
        values = [float(f.value) for f in rows]
        low, high = rows[0].reference.bounds()
        parts.append(f"{metric} {min(values):g}..{max(values):g} {rows[0].unit} over {len(rows)} devices, "
                     f"reference {rows[0].reference.value:g} bounds [{'-' if low is None else f'{low:g}'}, "
                     f"{'-' if high is None else f'{high:g}'}]")
    if not parts:
        parts = [describe(f) for f in findings[:2]]
    return f"{len(findings)} facts ok: " + "; ".join(parts)


def _finding(f: Finding) -> dict:
    row = {"device": f.device, "metric": f.metric, "value": f.value, "unit": f.unit, "ok": f.ok}
    if f.reference is not None:
        low, high = f.reference.bounds()
        row.update(reference=f.reference.value, lower_bound=low, upper_bound=high,
                   params=f.reference.params, source=f.reference.source)
    elif f.expected is not None:
        row["expected"] = f.expected
    if not f.ok:
        row.update(fault=f.fault, action=f.action)
    if f.detail:
        row["detail"] = f.detail
    return row
