"""The fault catalogue: every fault code a check can report, once, with its meaning, the
operator's action and the source of that advice (``faults.yaml`` beside this module).

Checks name a fault by its code; ``action(code)`` is the advice every finding of that code
carries, so the same advice is never written twice.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

CATALOGUE = Path(__file__).with_name("faults.yaml")


@dataclass(frozen=True)
class Fault:
    """A fault code: what it means, what the operator should do, and where that advice comes from."""

    code: str
    meaning: str
    action: str
    source: str


@functools.cache
def catalogue() -> dict[str, Fault]:
    """Code -> Fault from ``faults.yaml``. Raises ValueError for a malformed row (a bug, not input)."""
    data = yaml.safe_load(CATALOGUE.read_text()) or {}
    out = {}
    for code, row in data.items():
        missing = [k for k in ("meaning", "action", "source") if not (row or {}).get(k)]
        if missing:
            raise ValueError(f"{CATALOGUE}: {code}: missing {', '.join(missing)}")
        out[code] = Fault(code, row["meaning"], row["action"], row["source"])
    return out


def action(code: str) -> str:
    """The catalogue's action for ``code``. Raises KeyError naming an unknown code."""
    fault = catalogue().get(code)
    if fault is None:
        raise KeyError(f"fault code {code!r} is not in {CATALOGUE.name}")
    return fault.action
