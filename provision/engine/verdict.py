"""The outcome of one check from its outputs, in stages (STYLE.md): could not run -> error;
output cut short, unparsable, giving nothing to judge, a non-finite value or one beyond what the
hardware can do (``provision.checks.plausible``) -> error; a finding outside its
reference -> fail; else pass. This is the part a re-evaluation repeats from saved outputs.
"""
from __future__ import annotations

import math

from provision.checks import Check, plausible
from provision.checks.base import Context, Step, parse_outputs
from provision.errors import ParseError, ProfileError
from provision.results.model import ESTIMATE, CheckResult, Finding, Outcome, Scope, number


def not_applicable(check: Check, hosts: tuple[str, ...], scope: Scope, profile) -> CheckResult | None:
    """The first stage: a SKIPPED result saying which platform traits ``profile`` lacks (``Check.needs``), or None
    when the check applies. Not a pass and not a failure: the check cannot apply to this platform."""
    why = check.not_applicable(profile)
    if not why:
        return None
    return CheckResult(check.id, hosts, Outcome.SKIPPED, f"not applicable to profile {profile.name}: {why}",
                       scope=scope)


def verdict(check: Check, hosts: tuple[str, ...], scope: Scope, profile, texts: dict[str, str], target,
            steps: list[Step] | None = None) -> CheckResult:
    """Parse ``texts`` (step key -> output), each with the parser its step names, and judge them against
    ``profile`` for ``target`` (the Host, Pair or Group the steps ran for). ``steps``: the steps that ran;
    None to build them again (a saved run judged again)."""
    def result(outcome: Outcome, message: str, findings: list[Finding] | None = None) -> CheckResult:
        return CheckResult(check.id, hosts, outcome, message, scope=scope, findings=findings or [])

    try:
        parsed = parse_outputs(check, check.steps(profile, target) if steps is None else steps, texts)
        cut = [key or check.tool for key, out in parsed.items() if out.get("complete") is False]
        if cut:
            return result(Outcome.ERROR, f"{check.tool} output is incomplete (truncated or killed): {', '.join(cut)}")
        findings = check.judge(Context(parsed, profile, target))
    except ParseError as exc:
        return result(Outcome.ERROR, f"could not parse {check.tool} output: {exc}")
    except ProfileError as exc:  # judged against a profile that lacks a reference this check needs
        return result(Outcome.ERROR, str(exc))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        # A judge that trips over data it did not expect could not judge: an error, never a pass.
        return result(Outcome.ERROR, f"could not judge {check.tool} output ({type(exc).__name__}: {exc}); "
                                     "see the raw output")
    if not findings:  # nothing was judged (no step ran, or the output held no device): never a pass
        return result(Outcome.ERROR, f"{check.tool} output gave nothing to judge")
    odd = [f for f in findings if not _finite(f.value)]
    if odd:  # inf or nan compares as inside or outside any bound by accident: never judged
        return result(Outcome.ERROR, f"{check.tool} output gave a non-finite value: "
                                     + "; ".join(f"{f.device}: {f.metric} = {f.value}" for f in odd[:3]))
    impossible = plausible.beyond(check, findings, profile)
    if impossible:  # beyond what the hardware can do: a broken tool or a forged output, never judged
        return result(Outcome.ERROR, f"{check.tool} output gave a value the hardware cannot reach: "
                                     + "; ".join(impossible[:3]))
    failing = [f for f in findings if not f.ok]
    if failing:
        return result(Outcome.FAIL, "; ".join(f.describe() for f in failing), findings)
    return result(Outcome.PASS, pass_message(findings), findings)


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def pass_message(findings: list[Finding]) -> str:
    """Measured metrics as ranges over devices with their reference; else the first facts checked."""
    by_metric: dict[str, list[Finding]] = {}
    for f in findings:
        if f.reference is not None:
            by_metric.setdefault(f.metric, []).append(f)
    parts = []
    for metric, rows in by_metric.items():
        ref = rows[0].reference
        if len(rows) == 1 or ref is None:
            parts.append(rows[0].describe())
            continue
        values = [float(f.value) for f in rows]  # type: ignore[arg-type]
        low, high = ref.bounds()
        parts.append(f"{metric} {min(values):g}..{max(values):g} {rows[0].unit} over {len(rows)} devices, "
                     f"reference {ref.value:g} bounds [{number(low) if low is None else f'{low:g}'}, "
                     f"{number(high) if high is None else f'{high:g}'}]" + (f", {ESTIMATE}" if ref.estimate else ""))
    if not parts:
        parts = [f.describe() for f in findings[:2]]
    return f"{len(findings)} facts ok: " + "; ".join(parts)
