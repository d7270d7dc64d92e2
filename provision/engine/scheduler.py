"""Run jobs that each hold a set of hosts: jobs whose hosts are disjoint run at the same time,
under a bounded pool; jobs that share a host run one after the other, in the order given.

This is what lets node-scope checks run on every host at once, then pair jobs (a server on one
host, its client on another) run round by round, each round's pairs together.
"""
from __future__ import annotations

import heapq
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Generic, Hashable, Sequence, TypeVar

POLL_S = 0.2  # how often the loop looks at the stop request while jobs run
J = TypeVar("J")
R = TypeVar("R")


class Scheduler(Generic[J, R]):
    """``run(jobs)`` calls ``execute(job)`` for each job, at most ``workers`` at once, never two
    jobs with a common host at once, and a host's jobs in list order. ``hosts_of(job)`` names a
    job's hosts. Returns the results in job order; an exception in ``execute`` propagates
    after the running jobs finish (execute should turn expected failures into results)."""

    def __init__(self, execute: Callable[[J], R], hosts_of: Callable[[J], Sequence[Hashable]], workers: int):
        self.execute, self.hosts_of, self.workers = execute, hosts_of, max(1, workers)

    def run(self, jobs: Sequence[J], stop: threading.Event | None = None,
            not_run: Callable[[J], R] | None = None, on_result: Callable[[R], None] | None = None) -> list[R]:
        """Results in job order. Once ``stop`` is set no job starts; the running ones finish (they
        are expected to notice the stop) and every job never started gets ``not_run(job)``.
        ``on_result`` sees each result as its job finishes (from this thread)."""
        state: _State[J, R] = _State(jobs, self.hosts_of)
        running: dict[Future, int] = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            while True:
                while not (stop and stop.is_set()) and len(running) < self.workers \
                        and (index := state.next_ready()) is not None:
                    running[pool.submit(self.execute, jobs[index])] = index
                if not running:
                    break
                done, _ = wait(running, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    index = running.pop(future)
                    state.finish(index, future.result())
                    if on_result:
                        on_result(state.results[index])
        for index in range(len(jobs)):
            if index not in state.results and not_run is not None:
                state.results[index] = not_run(jobs[index])
                if on_result:
                    on_result(state.results[index])
        return [state.results[i] for i in range(len(jobs))]


class _State(Generic[J, R]):
    """Per-host queues of job indexes; a job is ready when it heads the queue of each of its hosts
    and none of them is busy. ``ready`` is a heap, so ready jobs start in list order."""

    def __init__(self, jobs: Sequence[J], hosts_of: Callable[[J], Sequence[Hashable]]):
        self.jobs, self.hosts_of = jobs, hosts_of
        self.queues: dict[Hashable, deque[int]] = {}
        for index, job in enumerate(jobs):
            for host in hosts_of(job):
                self.queues.setdefault(host, deque()).append(index)
        self.busy: set = set()
        self.ready = sorted({q[0] for q in self.queues.values()} | {i for i, j in enumerate(jobs) if not hosts_of(j)})
        self.results: dict[int, R] = {}

    def next_ready(self) -> int | None:
        """Claim the first ready job's hosts and return it; None when no job can start now."""
        while self.ready:
            index = heapq.heappop(self.ready)
            hosts = self.hosts_of(self.jobs[index])
            if all(h not in self.busy and self.queues[h][0] == index for h in hosts):
                for host in hosts:
                    self.queues[host].popleft()
                    self.busy.add(host)
                return index
        return None

    def finish(self, index: int, result: R) -> None:
        self.results[index] = result
        for host in self.hosts_of(self.jobs[index]):
            self.busy.discard(host)
            queue = self.queues[host]
            if queue and queue[0] not in self.ready:
                heapq.heappush(self.ready, queue[0])
