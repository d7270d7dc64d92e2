"""What several commands share: their console lines, the time, a run's exit status."""
from __future__ import annotations

import datetime as dt
import sys

from provision.errors import ExitStatus
from provision.report.console import visible
from provision.results.model import Outcome, Run


def say(line: object = "", end: str = "\n") -> None:
    """Print a line on stdout, its control characters made visible (provision.report.console)."""
    print(visible(line), end=end, flush=True)


def warn(line: object) -> None:
    """Print a line on stderr, its control characters made visible."""
    print(visible(line), file=sys.stderr, flush=True)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def status(run: Run) -> ExitStatus:
    """The run's verdict (``Run.outcome``): OK for a full pass, UNTESTED for a run whose only findings are
    coverage gaps, else NODE_FAILED (a host failed or errored, or the fabric itself: a leaf-spine cable)."""
    verdict = run.outcome().outcome
    return {Outcome.PASS: ExitStatus.OK, Outcome.UNTESTED: ExitStatus.UNTESTED}.get(verdict, ExitStatus.NODE_FAILED)


def rebuilt(line: str) -> None:
    """Says on stderr that a run was rebuilt from its journal (``RunDir.load``)."""
    print(f"provision: warning: {line}", file=sys.stderr)


def cut(text: str, most: int = 200) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"
