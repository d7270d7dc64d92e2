"""The two kinds of rule a check judges with, the way ReFrame compares performance.

``measured``: a metric against a reference, ``value`` with ``lower``/``upper`` bounds given
as signed fractions of it (-0.05 = 5% below); ``within`` is inclusive. ``expect``: a fact
that must equal a value. Both return a ``Finding``; its ``action`` comes from the fault
catalogue (``provision.checks.faults``) unless the caller names one.
"""
from __future__ import annotations

from provision.checks import faults
from provision.results.model import Finding, Reference


def within(value: float, ref: Reference) -> bool:
    """True when ``value`` lies inside the reference's absolute bounds."""
    low, high = ref.bounds()
    return (low is None or value >= low) and (high is None or value <= high)


def measured(device: str, metric: str, value: float, ref: Reference, fault: str, action: str = "") -> Finding:
    """A Finding for a measured metric judged against ``ref``; ``fault`` a catalogue code."""
    return Finding(device=device, metric=metric, value=round(float(value), 3), ok=within(value, ref),
                   unit=ref.unit, reference=ref, fault=fault, action=action or faults.action(fault))


def expect(device: str, metric: str, value: object, expected: object, fault: str, action: str = "",
           unit: str = "") -> Finding:
    """A Finding for a fact that must equal ``expected``; ``fault`` a catalogue code."""
    return Finding(device=device, metric=metric, value=value, ok=value == expected, unit=unit,
                   expected=expected, fault=fault, action=action or faults.action(fault))
