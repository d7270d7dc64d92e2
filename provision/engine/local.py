"""The local transport: the burn-in of the machine it runs on (``provision burnin --local``, one
Slurm task per node), with no SSH.

The same three calls and the same semantics as ``provision.engine.ssh``: every command is an
argv list (``subprocess`` without a shell), wrapped in coreutils ``timeout`` so that a hung tool
is killed (exit 124, ``timed_out``) and one that ignores TERM is killed 5 s later; a missing tool
exits 127 as ``timeout`` reports it (timeout(1)). The SSH transport learns the wrapper's PID from
a mark its remote shell prints on stderr; here ``Popen`` gives that PID itself, so no mark is
printed and stderr is the tool's own. ``kill`` sends TERM to the wrapper, which passes it on to the
tool (GNU timeout forwards the signals it receives), as the SSH transport's ``kill`` does.
Output is read by two threads per command (stdout, stderr) into buffers, so that a tool filling a
pipe never blocks and ``read_until`` sees the output as it comes.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from provision.engine.transport import CommandResult
from provision.errors import CommandError

KILL_AFTER_S = 5  # as the SSH transport's wrapper: TERM at the timeout, KILL this long after
GRACE_S = 5.0     # as the SSH transport's: past the command's timeout (and KILL_AFTER_S), stop waiting
POLL_S = 0.01


class LocalTransport:
    """Opens ``LocalConnection``s: every host is this machine."""

    def connect(self, host) -> "LocalConnection":
        return LocalConnection(host)


class LocalConnection:
    """Commands run here, as the user running the burn-in (root on a node being burned in)."""

    def __init__(self, host):
        self.host = host

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        return self.start(argv, timeout_s).wait()

    def start(self, argv: list[str], timeout_s: float) -> "LocalProcess":
        wrapped = ["timeout", f"--kill-after={KILL_AFTER_S}", str(max(1, int(timeout_s))), *argv]
        try:
            popen = subprocess.Popen(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        except OSError as exc:  # no `timeout` (coreutils) on this machine, or no process left to start
            where = f"host {self.host.name}" if self.host is not None else "this machine"
            raise CommandError(f"{where}: could not start {argv[0]}: {exc.strerror or exc}") from None
        return LocalProcess(popen, argv, timeout_s)

    def close(self) -> None:
        pass


class LocalProcess:
    """A command running here; its output is buffered as it is read."""

    def __init__(self, popen: subprocess.Popen, argv: list[str], timeout_s: float):
        self.popen, self.argv = popen, argv
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s + GRACE_S
        self.out, self.err = bytearray(), bytearray()
        self.lock = threading.Lock()
        self.readers = [threading.Thread(target=self._read, args=(stream, buf), daemon=True)
                        for stream, buf in ((popen.stdout, self.out), (popen.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, buf: bytearray) -> None:
        for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
            with self.lock:
                buf += chunk
        stream.close()

    def _finished(self) -> bool:
        """Exited, and both pipes read to their end (a child of the tool may hold them open longer)."""
        return self.popen.poll() is not None and not any(r.is_alive() for r in self.readers)

    def read_until(self, text: str, timeout_s: float) -> bool:
        until, needle = min(self.deadline, time.monotonic() + timeout_s), text.encode()
        while True:
            with self.lock:
                if needle in self.out:
                    return True
            if self._finished() or time.monotonic() > until:
                return False
            time.sleep(POLL_S)

    def wait(self) -> CommandResult:
        while not self._finished():
            if time.monotonic() > self.deadline:
                return self._result(124, True)
            time.sleep(POLL_S)
        rc = self.popen.returncode
        return self._result(rc, rc == 124)

    def close(self) -> CommandResult:
        return self._result(124, True)

    def kill(self) -> None:
        """Send TERM to the command (through its timeout wrapper) and stop waiting."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGTERM)
            except OSError:
                pass  # it exited meanwhile

    def _result(self, rc: int, timed_out: bool) -> CommandResult:
        with self.lock:
            out, err = self.out.decode(errors="replace"), self.err.decode(errors="replace")
        return CommandResult(self.argv, rc, out, err, time.monotonic() - self.started, timed_out)
