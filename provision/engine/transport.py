"""How the engine runs commands on hosts, without the checks knowing how.

A ``Transport`` opens a ``Connection`` to a host; a connection runs an argv and waits for it
(``run``), or starts it (``start``) and hands back a ``Process`` to watch (``read_until``) and
collect (``wait``). Every wait has a timeout; a command that outlives it is killed on the node
(exit 124) and its result says ``timed_out``. SSH with paramiko (``provision.engine.ssh``) is
the implementation today; an ``srun`` transport for Slurm allocations implements the same three
calls, and no check changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    """Exit status (124 = timed out on the node), output text and wall time in seconds."""

    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool


class Process(Protocol):
    """A started command."""

    def read_until(self, text: str, timeout_s: float) -> bool:
        """Read its output until ``text`` appears (True) or ``timeout_s`` passes or it exits (False);
        what was read stays part of the final result."""
        ...

    def wait(self) -> CommandResult:
        """Wait for it to exit, at most the timeout it was started with."""
        ...

    def close(self) -> CommandResult:
        """Stop waiting for it (its node-side timeout still kills it); the output read so far."""
        ...

    def kill(self) -> None:
        """Stop it on the node now (an interrupted run) and stop waiting for it."""
        ...


class Connection(Protocol):
    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        """Run ``argv`` and wait for it, at most ``timeout_s`` seconds. Raises CommandError when
        the connection itself fails."""
        ...

    def start(self, argv: list[str], timeout_s: float) -> Process:
        """Start ``argv`` (killed after ``timeout_s``) without waiting. Raises CommandError."""
        ...

    def close(self) -> None:
        ...


class Transport(Protocol):
    def connect(self, host) -> Connection:
        """A connection to ``host`` (a ``provision.inventory.Host``). Raises CommandError naming it."""
        ...
