"""What a burn-in check is: the registration each check module makes, and what it returns.

A check module declares ``CHECK = Check(...)``: its id (= module name), the tool it runs,
the hardware features it needs, its timeout, and three pure functions:
``steps(profile, host) -> list[Step]`` (argv lists, never shell strings),
``parse(text) -> dict`` (one step's output; raises ParseError) and
``judge(parsed, profile) -> list[Finding]`` (``parsed`` maps step key -> parse result).
The engine (``provision.burnin``) decides the outcome in stages; see ``Outcome``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable

from provision.errors import ParseError
from provision.profiles import Profile, Reference


class Outcome(str, enum.Enum):
    """pass; fail (a metric outside its reference); error (could not run, timed out, could not
    parse, missing data: never a pass); skipped (not applicable to the profile)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Step:
    """One command of a check. ``key`` names the device or case it covers ('' for the only step).
    ``server`` is an argv started first and left running while ``argv`` runs (perftest pairs)."""

    key: str
    argv: list[str]
    server: list[str] | None = None


@dataclass(frozen=True)
class Finding:
    """One judged fact about one device. ``ok`` False makes the check fail.

    ``value`` is in ``unit``; ``reference`` is the profile row it was judged against (None for
    equality facts such as a model name); ``expected`` is the value a fact should have.
    ``fault`` is a short code and ``action`` what the operator should do when not ok.
    """

    device: str
    metric: str
    value: object
    ok: bool
    unit: str = ""
    reference: Reference | None = None
    expected: object = None
    fault: str = ""
    action: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Check:
    id: str
    tool: str
    steps: Callable[[Profile, object], list[Step]]
    parse: Callable[[str], dict]
    judge: Callable[[dict, Profile], list[Finding]]
    needs: tuple[str, ...] = ()
    scope: str = "node"
    timeout_s: float = 120.0
    metrics: dict[str, str] = field(default_factory=dict)


def require_tools(parsed: dict, expected: dict[str, str]) -> None:
    """Raise ParseError unless each step's output (key -> parse result) is the output of the tool
    ``expected`` names for that step: a multi-step check must not pass on another step's text."""
    for key, result in parsed.items():
        got = (result or {}).get("tool")
        if key not in expected or got != expected[key]:
            raise ParseError(f"step {key!r}: expected {expected.get(key, 'no such step')} output, got {got or 'nothing'}")
