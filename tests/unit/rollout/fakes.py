"""Stand-ins for the unit tests of ``provision.rollout``: inventory hosts (the real ``Host``), and an SSH connection
whose commands answer from a script (``feed``, ``run``, ``start``, ``fetch`` as ``provision.engine.ssh``'s
``SshConnection`` has them) and record what they were given."""
from __future__ import annotations

import json

from provision.engine.transport import CommandResult
from provision.inventory.model import Host


def host(name: str, address: str = "", user: str = "root", profile: str | None = "h100", **variables) -> Host:
    return Host(name, address or f"127.0.9.{sum(map(ord, name)) % 250 + 1}", 22, user, None, None, profile,
                vars=dict(variables))


def result(argv, rc: int = 0, stdout: str = "", stderr: str = "", timed_out: bool = False) -> CommandResult:
    return CommandResult(list(argv), rc, stdout, stderr, 1.0, timed_out)


class Channel:
    def exit_status_ready(self) -> bool:
        return True


class Process:
    """A started command that has already ended with ``done``."""

    def __init__(self, done: CommandResult):
        self.done, self.channel, self.killed = done, Channel(), False

    def read_until(self, text: str, timeout_s: float) -> bool:
        return text in self.done.stdout

    def kill(self) -> None:
        self.killed = True

    def wait(self) -> CommandResult:
        return self.done


class Conn:
    """A node's connection: ``answer(argv, data)`` gives each command's CommandResult (rc 0, no output by default);
    ``fed`` records (argv, data) of every command, ``closed`` whether it was closed."""

    def __init__(self, answer=None, probe: dict | None = None):
        self.answer = answer or (lambda argv, data: result(argv))
        self.probe, self.fed, self.closed = probe, [], False

    def _do(self, argv, data: bytes) -> CommandResult:
        self.fed.append((list(argv), data))
        if self.probe is not None and "probe" in argv:
            return result(argv, stdout=json.dumps(self.probe) + "\n")
        return self.answer(list(argv), data)

    def feed(self, argv, data: bytes, timeout_s: float) -> CommandResult:
        return self._do(argv, data)

    def run(self, argv, timeout_s: float) -> CommandResult:
        return self._do(argv, b"")

    def start(self, argv, timeout_s: float) -> Process:
        return Process(self._do(argv, b""))

    def fetch(self, argv, timeout_s: float) -> tuple[CommandResult, bytes]:
        done = self._do(argv, b"")
        return done, done.stdout.encode()

    def close(self) -> None:
        self.closed = True
