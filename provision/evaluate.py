"""Compare a measured value with a reference, the way ReFrame does.

A reference is ``value`` with ``lower``/``upper`` bounds given as signed fractions of it
(-0.05 = 5% below). ``within`` is inclusive. Messages state value, reference, bounds and unit.
"""
from __future__ import annotations

from provision.checks.base import Finding
from provision.profiles import Reference


def within(value: float, ref: Reference) -> bool:
    """True when ``value`` lies inside the reference's absolute bounds."""
    low, high = ref.bounds()
    return (low is None or value >= low) and (high is None or value <= high)


def measured(device: str, metric: str, value: float, ref: Reference, fault: str, action: str) -> Finding:
    """A Finding for a measured metric judged against ``ref``."""
    return Finding(device=device, metric=metric, value=round(float(value), 3), ok=within(value, ref),
                   unit=ref.unit, reference=ref, fault=fault, action=action)


def expect(device: str, metric: str, value: object, expected: object, fault: str, action: str,
           unit: str = "") -> Finding:
    """A Finding for a fact that must equal ``expected``."""
    return Finding(device=device, metric=metric, value=value, ok=value == expected, unit=unit,
                   expected=expected, fault=fault, action=action)


def describe(f: Finding) -> str:
    """One line: device, metric, measured value against what it should be, fault and action."""
    unit = f" {f.unit}" if f.unit else ""
    if f.reference is not None:
        low, high = f.reference.bounds()
        bounds = f"[{_num(low)}, {_num(high)}]"
        params = ", ".join(f"{k}={v}" for k, v in f.reference.params.items())
        text = (f"{f.device}: {f.metric} = {_num(f.value)}{unit}, reference {_num(f.reference.value)}{unit} "
                f"bounds {bounds}{unit}" + (f" ({params})" if params else ""))
    elif f.expected is not None:
        text = f"{f.device}: {f.metric} = {f.value!r}{unit}, expected {f.expected!r}{unit}"
    else:
        text = f"{f.device}: {f.metric} = {f.value!r}{unit}"
    if f.detail:
        text += f"; {f.detail}"
    if not f.ok and f.fault:
        text += f" [{f.fault}: {f.action}]"
    return text


def _num(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)
