"""A transport for tests: runs each argv on this machine with subprocess, as the SSH transport
runs it on a node (same timeouts, same CommandResult). Lives in tests: burn-ins never run on
the controller."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from provision.engine.transport import CommandResult


class LocalTransport:
    def __init__(self, unreachable=()):
        self.unreachable = set(unreachable)
        self.commands: list[tuple[str, list[str]]] = []
        self.processes: list = []

    def connect(self, host):
        if host.name in self.unreachable:
            from provision.errors import CommandError

            raise CommandError(f"host {host.name} ({host.address}): SSH failed: connection refused")
        return LocalConnection(host, self)


class LocalConnection:
    def __init__(self, host, transport):
        self.host, self.transport = host, transport

    def run(self, argv, timeout_s):
        return self.start(argv, timeout_s).wait()

    def start(self, argv, timeout_s):
        self.transport.commands.append((self.host.name, list(argv)))
        process = LocalProcess(argv, timeout_s)
        self.transport.processes.append(process)
        return process

    def close(self):
        pass


class LocalProcess:
    def __init__(self, argv, timeout_s):
        self.argv, self.timeout_s, self.started = argv, timeout_s, time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.out: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.out.append(line)

    def read_until(self, text, timeout_s):
        until = time.monotonic() + timeout_s
        while time.monotonic() < until:
            if text in "".join(self.out):
                return True
            if self.proc.poll() is not None and not self.reader.is_alive():
                return text in "".join(self.out)
            time.sleep(0.01)
        return False

    def wait(self):
        try:
            self.proc.wait(self.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            timed_out = True
        self.reader.join(5)
        err = self.proc.stderr.read()
        rc = 124 if timed_out else self.proc.returncode
        return CommandResult(self.argv, rc, "".join(self.out), err, time.monotonic() - self.started, timed_out)

    def close(self):
        self.proc.kill()
        return self.wait()

    def kill(self):
        """TERM to the command's process group, as the SSH transport's timeout wrapper passes it on."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
