"""What a procedure sees of the engine that runs it: a narrow protocol, and nothing of its state.

A procedure (the fabric-aware cluster procedure, ``provision.engine.cluster``) chooses jobs of
registered checks round by round from what earlier rounds gave. Of the engine it may only: list the
burn-in's hosts and read a host's profile, run a round of jobs and get their results (jobs on
disjoint hosts at once, in job order; a job the stop kept from starting is an "interrupted" error),
read a result's raw output, ask whether a stop was requested, and record a result as it is kept
(the journal and the console see it). ``provision.engine.burnin.Burnin`` offers it; a unit test
offers a fake (tests/unit/engine/test_cluster_procedure.py).
"""
from __future__ import annotations

from typing import Protocol, Sequence

from provision.engine.jobs import Job
from provision.profiles import Profile
from provision.results.model import CheckResult, RawOutput


class Engine(Protocol):
    def hosts(self) -> list[str]:
        """The burn-in's hosts, in inventory order."""

    def profile(self, host: str) -> Profile | None:
        """The profile ``host`` is judged by (its OS target applied once connected); None without one."""

    def stopped(self) -> bool:
        """Whether a stop was requested: no new round should start."""

    def run_round(self, jobs: Sequence[Job]) -> list[CheckResult]:
        """Run ``jobs`` (those on disjoint hosts at once) and return their results in job order."""

    def read_raw(self, raw: RawOutput, origin: str) -> str:
        """The saved text of a result's raw output; ``origin`` names the reader in an error."""

    def record(self, result: CheckResult) -> None:
        """Keep ``result`` as the run's (journal, console), once the procedure has marked it."""
