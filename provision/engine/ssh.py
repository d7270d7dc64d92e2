"""The SSH transport: paramiko following OpenSSH's rules, one connection per host, host keys always checked.

Each host is reached as Ansible's ssh connection reaches it: ``sshconfig.resolve`` asks
OpenSSH (``ssh -G``) with the options Ansible passes, and ``sshlink`` connects by those rules (``sshauth`` logs in)
(ProxyJump through shared jump host transports, ProxyCommand, agent, certificates, strict
host key checking on every hop, host certificates included). Every command is an argv list,
quoted with ``shlex.join`` for the remote shell, and wrapped in coreutils ``timeout`` so a
hung tool is killed on the node too (exit 124), not only abandoned here; the wrapper prints
its PID first on stderr (removed from the result), so an interrupted run stops its tools.
"""
from __future__ import annotations

import shlex
import threading
import time

import paramiko

from provision.engine import sshconfig
from provision.engine.sshlink import CONNECT_TIMEOUT_S, Links, Refused
from provision.engine.transport import CommandResult
from provision.errors import CommandError

GRACE_S = 5.0  # time past the command's timeout before the channel itself is abandoned
FEED_CHUNK = 1 << 20  # bytes handed to paramiko at once by ``feed`` (it splits them into SSH packets)
PID_MARK = "provision-pid "  # the first stderr line of every command: the PID of its timeout wrapper


class SshTransport:
    """Opens ``SshConnection``s; the connections of one transport share their jump host transports."""

    def __init__(self) -> None:
        self.links = Links()

    def connect(self, host) -> "SshConnection":
        return SshConnection(host, self.links)


class SshConnection:
    """An SSH connection to one host. Raises CommandError naming the host, the hop and what was refused."""

    def __init__(self, host, links: Links | None = None):
        self.host = host
        self.target = sshconfig.resolve(host)
        try:
            self.link = (links or Links()).open(self.target)
        except Refused as exc:
            text = str(exc)
            raise CommandError(f"host {host.name}{' ' if text.startswith('(') else ': '}{text}") from None

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        return self.start(argv, timeout_s).wait()

    def start(self, argv: list[str], timeout_s: float) -> "SshProcess":
        # sh prints the PID that `exec timeout` keeps, so that kill() can stop the tool on the node:
        # GNU timeout passes the TERM it receives on to the command it runs (timeout(1)).
        wrapped = ["sh", "-c", f'echo "{PID_MARK}$$" >&2; exec timeout --kill-after=5 {max(1, int(timeout_s))} "$@"',
                   "provision", *argv]
        try:
            transport = self.link.transport
            if not transport.is_active():
                raise paramiko.SSHException("the connection was closed")
            channel = transport.open_session(timeout=CONNECT_TIMEOUT_S)
            channel.settimeout(timeout_s + GRACE_S)
            channel.exec_command(shlex.join(wrapped))
        except (paramiko.SSHException, OSError, EOFError) as exc:  # paramiko re-raises its reader's EOFError
            raise CommandError(f"host {self.host.name}: could not start {argv[0]}: "
                               f"{exc or 'the connection was closed'}") from None
        return SshProcess(self, channel, argv, timeout_s)

    def feed(self, argv: list[str], data: bytes, timeout_s: float) -> CommandResult:
        """Run ``argv`` with ``data`` on its standard input (then end of file) and wait for it, at most ``timeout_s``
        seconds in all. For commands that read their input before they print much (``tar -x``): the output is read
        after the input is sent. Raises CommandError when the connection fails while sending."""
        proc = self.start(argv, timeout_s)
        try:
            view = memoryview(data)
            for at in range(0, len(view), FEED_CHUNK):
                proc.channel.sendall(bytes(view[at:at + FEED_CHUNK]))
            proc.channel.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            proc.close()
            raise CommandError(f"host {self.host.name}: sending {len(data)} bytes to {argv[0]} failed: "
                               f"{exc or 'the connection was closed'}") from None
        return proc.wait()

    def fetch(self, argv: list[str], timeout_s: float) -> tuple[CommandResult, bytes]:
        """Run ``argv`` and wait for it, at most ``timeout_s`` seconds: its result and its standard output as bytes
        (an archive it writes). Raises CommandError."""
        proc = self.start(argv, timeout_s)
        return proc.wait(text=False), bytes(proc.out)

    def alive(self) -> bool:
        """False once the connection ended (the node rebooted or its sshd went away)."""
        return self.link.transport.is_active()

    def close(self) -> None:
        self.link.close()


class SshProcess:
    """A command running on a channel; its output is buffered as it is read.

    Waiting blocks, never polls: both of the channel's input buffers (paramiko's ``BufferedPipe``)
    set one ``threading.Event`` when data or EOF arrives (``BufferedPipe.set_event``, the mechanism
    paramiko's own ``Channel.fileno`` uses for select), and after EOF the channel's ``status_event``
    says the exit status came. A thread per command then wakes only when something arrived, not
    every few milliseconds (at 1,024 commands a 10 ms poll was 100,000 wake-ups a second)."""

    def __init__(self, conn: SshConnection, channel: paramiko.Channel, argv: list[str], timeout_s: float):
        self.conn, self.channel, self.argv = conn, channel, argv
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s + GRACE_S
        self.out, self.err = bytearray(), bytearray()
        self.arrived = threading.Event()
        channel.in_buffer.set_event(self.arrived)
        channel.in_stderr_buffer.set_event(self.arrived)

    def _drain(self) -> None:
        while self.channel.recv_ready():
            self.out += self.channel.recv(65536)
        while self.channel.recv_stderr_ready():
            self.err += self.channel.recv_stderr(65536)

    def _finished(self) -> bool:
        """The command exited and its output ended. sshd may send exit-status before the last of
        the output (RFC 4254 6.10 lets it come before EOF; OpenSSH sends it when the child exits
        while it still forwards the pipe), so the exit status alone is not the end: wait for EOF too."""
        ch = self.channel
        return bool(ch.exit_status_ready() and (ch.eof_received or ch.closed) and not ch.recv_ready()
                and not ch.recv_stderr_ready())

    def _block(self, until: float) -> None:
        """Sleep until something arrives on the channel or ``until`` (monotonic) passes. Reading one
        buffer empty clears the shared event even when the other buffer was just fed, so data
        already buffered is looked for first; after EOF the buffers stay readable (closed), so the
        exit status is what is waited for."""
        ch, left = self.channel, until - time.monotonic()
        if left <= 0 or ch.recv_ready() or ch.recv_stderr_ready():
            return
        if ch.eof_received or ch.closed:
            ch.status_event.wait(left)
        else:
            self.arrived.wait(left)

    def read_until(self, text: str, timeout_s: float) -> bool:
        until, needle = min(self.deadline, time.monotonic() + timeout_s), text.encode()
        while True:
            self._drain()
            if needle in self.out:
                return True
            if self._finished() or time.monotonic() >= until:
                return False
            self._block(until)

    def wait(self, text: bool = True) -> CommandResult:
        """The command's result; ``text`` False leaves its standard output out of the result (it stays in ``out``,
        bytes: an archive is not decoded into a string several times its size)."""
        while True:
            self._drain()
            if self._finished():
                break
            if time.monotonic() >= self.deadline:
                self.channel.close()
                return self._result(124, True, text)
            self._block(self.deadline)
        rc = self.channel.recv_exit_status()
        self.channel.close()
        return self._result(rc, rc == 124, text)

    def close(self) -> CommandResult:
        self._drain()
        self.channel.close()
        return self._result(124, True)

    def kill(self) -> None:
        """Send TERM to the command on the node (through its timeout wrapper) and stop waiting."""
        self._drain()
        pid = self._pid()
        if pid:
            try:
                self.conn.start(["kill", "-TERM", pid], 10).wait()
            except CommandError:
                pass  # the connection is gone: the node-side timeout still ends the tool
        self.channel.close()

    def _pid(self) -> str:
        first = bytes(self.err).split(b"\n", 1)[0].decode(errors="replace")
        return first[len(PID_MARK):].strip() if first.startswith(PID_MARK) else ""

    def _result(self, rc: int, timed_out: bool, text: bool = True) -> CommandResult:
        err = self.err.decode(errors="replace")
        if err.startswith(PID_MARK):
            err = err.split("\n", 1)[1] if "\n" in err else ""
        return CommandResult(self.argv, rc, self.out.decode(errors="replace") if text else "", err,
                             time.monotonic() - self.started, timed_out)
