"""The console while a run runs, made for 1,250 hosts: fed by events (``provision.results.events``).

On a terminal (``live``) one line per check that is running, redrawn by rich's ``Live``: jobs done
of the total, passed, failed, errored, the slowest host still running and for how long, elapsed;
the install gets one line per role: hosts done with the current task of the total, hosts changed
and failed. A check or role that ends leaves its last line printed above. In a log (not a
terminal) the same line at most every ``EVERY_S`` per check or role, and once when it ends.
``verbose`` adds one line per host and job. Lines the operator must see (an unreachable host, a
failed install task, a stop) come through ``line`` and are always printed.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from provision.report.console import visible
from provision.results import events as ev

EVERY_S = 30.0  # a CI log gets a check's line at most this often
REFRESH_PER_S = 2  # rich redraws the live lines this often
TEXT_COLUMN = 24  # the live table's task or host column at most: the counts stay readable on 80 columns


@dataclass
class _Tally:
    """One check (or install role) while it runs."""

    name: str
    total: int
    started_s: float
    done: int = 0
    counts: dict = field(default_factory=lambda: {"pass": 0, "fail": 0, "error": 0, "skipped": 0})
    running: dict = field(default_factory=dict)  # job label -> start time
    said_s: float = 0.0
    # the install's: hosts seen, changed, failed in the role; hosts done with the current task; task number, name
    changed: set = field(default_factory=set)
    failed: set = field(default_factory=set)
    current: set = field(default_factory=set)
    tasks: int = 0
    task: str = ""


class Progress:
    """The listener of a run (``event``) and its line printer (``line``); ``out`` prints a plain
    line (logs); ``clock`` is seconds, monotonic (a test gives a fake one). Use as a context
    manager: the live display runs inside it."""

    def __init__(self, out: Callable[[str], None] = print, verbose: bool = False, live: bool = False,
                 clock: Callable[[], float] = time.monotonic, every_s: float = EVERY_S,
                 console: Console | None = None):
        self.out, self.verbose, self.clock, self.every_s = out, verbose, clock, every_s
        self.lock = threading.Lock()
        self.checks: dict[str, _Tally] = {}
        self.planned: dict[str, int] = {}
        # check -> how many times its jobs have started anew: the cluster procedure runs a check in several of its
        # rounds; "run N" counts the check's own runs (the procedure's round numbers are report.json's)
        self.rounds: dict[str, int] = {}
        self.role: _Tally | None = None
        self.live = Live(console=console or Console(), auto_refresh=True, refresh_per_second=REFRESH_PER_S,
                         transient=True, get_renderable=self._renderable) if live else None

    def __enter__(self) -> Progress:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.finish()
        if self.live is not None:
            self.live.stop()

    def line(self, text: str) -> None:
        """Print ``text`` whatever the mode (above the live lines on a terminal), its control characters made
        visible (a task's message, a tool's line: a node's text)."""
        if self.live is not None:
            self.live.console.print(Text(visible(text)), highlight=False, soft_wrap=True)
        else:
            self.out(visible(text))

    def event(self, event: ev.Event) -> None:
        """Take one event of the run (thread-safe)."""
        with self.lock:
            said = self._take(event)
        for text in said:
            self.line(text)

    def finish(self) -> None:
        """End the install role still open (its last line)."""
        with self.lock:
            said = self._end_role()
        for text in said:
            self.line(text)

    def _take(self, event: ev.Event) -> list[str]:
        now = self.clock()
        if isinstance(event, ev.Planned):
            for check, jobs in event.jobs.items():
                self.planned[check] = self.planned.get(check, 0) + jobs
            return []
        if isinstance(event, ev.JobStarted):
            tally = self.checks.get(event.check)
            if tally is None or tally.done >= tally.total:  # a first job, or a later round of the same check
                total = self.planned.pop(event.check, 0)
                n = self.rounds[event.check] = self.rounds.get(event.check, 0) + 1
                name = event.check if n == 1 else f"{event.check} run {n}"
                tally = self.checks[event.check] = _Tally(name, total, now, said_s=now)
            tally.running["+".join(event.hosts)] = now
            tally.total = max(tally.total, tally.done + len(tally.running))
            return []
        if isinstance(event, ev.JobFinished):
            return self._finished(event.result, now)
        if isinstance(event, ev.TaskStarted):
            return self._task(event, now)
        if isinstance(event, ev.TaskResult):
            return self._task_result(event, now)
        if isinstance(event, ev.PlaybookEnded):
            return self._end_role()
        return []

    def _finished(self, result, now: float) -> list[str]:
        label = "+".join(result.hosts)
        tally = self.checks.get(result.check)
        if tally is None:
            tally = self.checks[result.check] = _Tally(result.check, 1, now, said_s=now)
        tally.running.pop(label, None)
        tally.done += 1
        tally.counts[result.outcome.value] = tally.counts.get(result.outcome.value, 0) + 1
        out = [f"  burnin {label:<12} {result.check:<16} {result.outcome.value:<7} {result.duration_s:6.1f} s"
               ] if self.verbose else []
        if tally.done >= tally.total and not tally.running:
            out.append(self._check_line(tally, now, ended=True))
            self.checks.pop(result.check, None)
        elif self.live is None and now - tally.said_s >= self.every_s:
            out.append(self._check_line(tally, now))
            tally.said_s = now
        return out

    def _check_line(self, t: _Tally, now: float, ended: bool = False) -> str:
        c = t.counts
        text = (f"burnin {t.name}: {t.done}/{t.total} done, {c['pass']} passed, {c['fail']} failed, "
                f"{c['error']} errored" + (f", {c['skipped']} skipped" if c["skipped"] else ""))
        if t.running and not ended:
            slowest, since = min(t.running.items(), key=lambda item: item[1])
            text += f"; slowest running {slowest} {now - since:.0f} s"
        return text + f"; {'took' if ended else 'elapsed'} {_clock(now - t.started_s)}"

    def _task(self, event: ev.TaskStarted, now: float) -> list[str]:
        out = []
        if self.role is None or self.role.name != event.role:
            out = self._end_role()
            self.role = _Tally(event.role, event.hosts, now, said_s=now)
            if self.live is None:
                out.append(f"  install role {event.role}")
        self.role.tasks += 1
        self.role.task, self.role.current = event.task, set()
        return out

    def _task_result(self, event: ev.TaskResult, now: float) -> list[str]:
        role = self.role
        if role is None or role.name != event.role:
            return []
        role.current.add(event.host)
        if event.changed:
            role.changed.add(event.host)
        if event.status in ("failed", "unreachable"):
            role.failed.add(event.host)
        if self.live is None and now - role.said_s >= self.every_s:
            role.said_s = now
            return [self._role_line(role, now)]
        return []

    def _end_role(self) -> list[str]:
        role, self.role = self.role, None
        return [self._role_line(role, self.clock(), ended=True)] if role is not None else []

    def _role_line(self, r: _Tally, now: float, ended: bool = False) -> str:
        task = "" if ended else f", task {r.tasks} {r.task!r}: {len(r.current)}/{r.total or '?'} hosts done"
        return (f"install {r.name}: {_count(r.tasks, 'task')}{task}; {_count(len(r.changed), 'host')} changed, "
                f"{len(r.failed)} failed; {'took' if ended else 'elapsed'} {_clock(now - r.started_s)}")

    def _renderable(self) -> Table:
        """The live lines as one table whose columns fit an 80-column terminal: the install's role, or a
        row per running check."""
        now = self.clock()
        with self.lock:
            if self.role is not None:
                r = self.role
                table = _table("install role", "hosts done", "changed", "failed", "current task", "elapsed")
                _add_row(table, r.name, f"{len(r.current)}/{r.total or '?'}", str(len(r.changed)),
                         str(len(r.failed)), f"{r.tasks}: {r.task}", _clock(now - r.started_s))
                return table
            table = _table("burnin check", "done", "passed", "failed", "errored", "slowest running", "elapsed")
            for t in self.checks.values():
                slowest = min(t.running.items(), key=lambda item: item[1]) if t.running else None
                _add_row(table, t.name, f"{t.done}/{t.total}", str(t.counts["pass"]), str(t.counts["fail"]),
                         str(t.counts["error"]), f"{slowest[0]} {now - slowest[1]:.0f} s" if slowest else "",
                         _clock(now - t.started_s))
            return table


def _table(*titles: str) -> Table:
    """A borderless table, the names (first) and tasks (before last) left-aligned and cut with an ellipsis."""
    table = Table(box=None, padding=(0, 1), show_edge=False)
    for i, title in enumerate(titles):
        last_but_one = i == len(titles) - 2
        table.add_column(title, no_wrap=True, overflow="ellipsis", max_width=TEXT_COLUMN if last_but_one else None,
                         justify="left" if i == 0 or last_but_one else "right")
    return table


def _add_row(table: Table, *cells: str) -> None:
    """A row of the live table, its text made visible (a task's name, a host's label reach the terminal)."""
    table.add_row(*(visible(c, newlines=False) for c in cells))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _clock(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour)."""
    whole = int(max(seconds, 0))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
