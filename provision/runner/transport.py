"""Run burn-in commands on many hosts fast: paramiko over SSH, one connection per host.

Host keys are checked against the inventory's known_hosts (``provision_known_hosts_file``,
else ``~/.ssh/known_hosts``) with paramiko's RejectPolicy. Every command is an argv list,
quoted with ``shlex.join`` for the remote shell, and wrapped in coreutils ``timeout`` so a
hung tool is killed on the node too (exit 124), not only abandoned here.
"""
from __future__ import annotations

import shlex
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko

from provision.errors import CommandError
from provision.inventory import Host

CONNECT_TIMEOUT_S = 15.0
GRACE_S = 5.0  # time past the command's timeout before the channel itself is abandoned


@dataclass(frozen=True)
class CommandResult:
    """Exit status (124 = timed out on the node), output text and wall time in seconds."""

    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool


class Session:
    """An SSH connection to one host. Use as a context manager. Raises CommandError."""

    def __init__(self, host: Host):
        self.host = host
        self.client = paramiko.SSHClient()
        known = host.known_hosts_file or str(Path.home() / ".ssh" / "known_hosts")
        try:
            self.client.load_host_keys(known)
        except OSError as exc:
            raise CommandError(f"host {host.name}: cannot read known_hosts {known}: {exc.strerror}") from None
        except paramiko.SSHException as exc:
            raise CommandError(f"host {host.name}: known_hosts {known} is not a known_hosts file: {exc}") from None
        self.client.set_missing_host_key_policy(paramiko.RejectPolicy())

    def __enter__(self) -> "Session":
        try:
            self.client.connect(self.host.address, port=self.host.port, username=self.host.user,
                                key_filename=self.host.key_file, timeout=CONNECT_TIMEOUT_S,
                                allow_agent=False, look_for_keys=self.host.key_file is None)
        except (paramiko.SSHException, OSError) as exc:
            raise CommandError(f"host {self.host.name} ({self.host.address}): SSH failed: {exc}") from None
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        """Run ``argv`` and wait for it, at most ``timeout_s`` seconds."""
        channel, started = self.start(argv, timeout_s), time.monotonic()
        return self.wait(channel, argv, started, timeout_s)

    def start(self, argv: list[str], timeout_s: float) -> paramiko.Channel:
        """Start ``argv`` without waiting (a perftest server); collect it with ``wait``."""
        wrapped = ["timeout", "--kill-after=5", str(int(timeout_s)), *argv]
        try:
            channel = self.client.get_transport().open_session(timeout=CONNECT_TIMEOUT_S)
            channel.settimeout(timeout_s + GRACE_S)
            channel.exec_command(shlex.join(wrapped))
        except (paramiko.SSHException, OSError) as exc:
            raise CommandError(f"host {self.host.name}: could not start {argv[0]}: {exc}") from None
        return channel

    def wait(self, channel: paramiko.Channel, argv: list[str], started: float, timeout_s: float) -> CommandResult:
        out, err = bytearray(), bytearray()
        deadline = started + timeout_s + GRACE_S
        while True:
            while channel.recv_ready():
                out += channel.recv(65536)
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
            if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            if time.monotonic() > deadline:
                channel.close()
                return CommandResult(argv, 124, out.decode(errors="replace"), err.decode(errors="replace"),
                                     time.monotonic() - started, True)
            time.sleep(0.01)
        rc = channel.recv_exit_status()
        channel.close()
        return CommandResult(argv, rc, out.decode(errors="replace"), err.decode(errors="replace"),
                             time.monotonic() - started, rc == 124)


def reachable(host: Host) -> bool:
    try:
        socket.create_connection((host.address, host.port), timeout=2).close()
        return True
    except OSError:
        return False
