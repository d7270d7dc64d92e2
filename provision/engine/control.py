"""What lets a run stop cleanly and say what it is doing.

``Control`` holds the stop request (a signal's name, set by ``stopping_on_signals``),
the processes running on nodes now (so that a stop kills them there, not only here), and a
watchdog that prints, every ``WATCHDOG_S``, the jobs that have run longer than that, and the
listener of the run's events (``provision.results.events``): the console's progress view.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Callable, Iterator

from provision.engine.transport import Process
from provision.results.events import Event, Listener

WATCHDOG_S = 60.0


class Control:
    def __init__(self, progress: Callable[[str], None] = print, watchdog_s: float = WATCHDOG_S,
                 events: Listener | None = None):
        self.stop = threading.Event()
        self.events = events
        self.reason = ""
        self.progress, self.watchdog_s = progress, watchdog_s
        self.lock = threading.Lock()
        self.processes: set = set()
        self.running: dict[str, float] = {}  # job label -> start time

    def emit(self, event: Event) -> None:
        """Hand ``event`` to the listener, if any."""
        if self.events is not None:
            self.events(event)

    def request_stop(self, reason: str) -> None:
        """Stop starting work and kill what runs on the nodes (safe from a signal handler)."""
        self.reason = reason
        self.stop.set()
        threading.Thread(target=self.kill_all, daemon=True).start()

    def kill_all(self) -> None:
        with self.lock:
            processes = list(self.processes)
        for process in processes:
            process.kill()

    def started(self, process: Process) -> None:
        with self.lock:
            self.processes.add(process)
        if self.stop.is_set():
            process.kill()

    def finished(self, process: Process) -> None:
        with self.lock:
            self.processes.discard(process)

    def job_started(self, label: str) -> None:
        with self.lock:
            self.running[label] = time.monotonic()

    def job_finished(self, label: str) -> None:
        with self.lock:
            self.running.pop(label, None)

    def long_running(self, now: float | None = None) -> list[tuple[str, float]]:
        """(job, seconds) of the jobs running longer than the watchdog period, longest first."""
        now = time.monotonic() if now is None else now
        with self.lock:
            rows = [(label, now - since) for label, since in self.running.items() if now - since >= self.watchdog_s]
        return sorted(rows, key=lambda row: -row[1])

    def watch(self, done: threading.Event) -> threading.Thread:
        """Start the watchdog; it ends when ``done`` is set."""
        def loop() -> None:
            while not done.wait(self.watchdog_s):
                rows = self.long_running()
                if rows:
                    shown = ", ".join(f"{label} ({seconds:.0f} s)" for label, seconds in rows[:8])
                    self.progress(f"  burnin still running: {shown}{' ...' if len(rows) > 8 else ''}")
        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread


@contextlib.contextmanager
def stopping_on_signals(control: Control) -> Iterator[Control]:
    """SIGINT and SIGTERM request a stop (``control.reason`` names the signal) instead of raising
    KeyboardInterrupt in a random place; a second SIGINT raises it. Main thread only."""
    def handler(signum, _frame) -> None:
        if control.stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        control.request_stop(signal.Signals(signum).name)
        control.progress(f"provision: {signal.Signals(signum).name}: stopping; killing the tools running on the "
                         "nodes and writing the results gathered so far")

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield control
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
