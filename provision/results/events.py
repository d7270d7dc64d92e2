"""What a run reports while it runs: events from the engine and the install, read by the progress
view (``provision.report.progress``), so that neither formats a line itself.

The burn-in emits ``Planned`` once per scheduler run (jobs per check), then ``JobStarted`` and
``JobFinished`` per job; the install emits ``TaskStarted`` per playbook task and ``TaskResult``
per host and task (from ansible-runner's events), ``PlaybookEnded`` at its end. Times are the listener's own clock.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from provision.results.model import CheckResult


@dataclass(frozen=True)
class Planned:
    """The jobs a burn-in is about to run: check id -> number of jobs (a node check: one per host)."""

    jobs: dict[str, int]


@dataclass(frozen=True)
class JobStarted:
    check: str
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class JobFinished:
    """A job ended with ``result`` (its outcome, message and duration)."""

    result: CheckResult


@dataclass(frozen=True)
class TaskStarted:
    """An install task begins: its ``role`` ("play" outside a role), name, and the hosts of the play."""

    role: str
    task: str
    hosts: int


@dataclass(frozen=True)
class TaskResult:
    """One host's result of an install task: ``status`` ok, skipped, failed or unreachable."""

    role: str
    host: str
    status: str
    changed: bool


@dataclass(frozen=True)
class PlaybookEnded:
    """The install's playbook ended (its last role with it)."""


Event = Planned | JobStarted | JobFinished | TaskStarted | TaskResult | PlaybookEnded
Listener = Callable[[Event], None]
