"""Run jobs that each hold a set of hosts: jobs whose hosts are disjoint run at the same time,
under a bounded pool; jobs that share a host run one after the other, in the order given.

This is what lets node-scope checks run on every host at once, then pair jobs (a server on one
host, its client on another) run round by round, each round's pairs together.
"""
from __future__ import annotations

import heapq
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Generic, Hashable, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class Scheduler(Generic[J, R]):
    """``run(jobs)`` calls ``execute(job)`` for each job, at most ``workers`` at once, never two
    jobs with a common host at once, and a host's jobs in list order. ``hosts_of(job)`` names a
    job's hosts. Returns the results in job order; an exception in ``execute`` propagates
    after the running jobs finish (execute should turn expected failures into results)."""

    def __init__(self, execute: Callable[[J], R], hosts_of: Callable[[J], Sequence[Hashable]], workers: int):
        self.execute, self.hosts_of, self.workers = execute, hosts_of, max(1, workers)

    def run(self, jobs: Sequence[J]) -> list[R]:
        queues: dict[Hashable, deque[int]] = {}
        for index, job in enumerate(jobs):
            for host in self.hosts_of(job):
                queues.setdefault(host, deque()).append(index)
        busy: set = set()
        ready = sorted({q[0] for q in queues.values()} | {i for i, j in enumerate(jobs) if not self.hosts_of(j)})
        heapq.heapify(ready)
        results: dict[int, R] = {}
        running: dict[Future, int] = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            while ready or running:
                while ready and len(running) < self.workers:
                    index = heapq.heappop(ready)
                    if not self._startable(index, jobs, queues, busy):
                        continue  # it becomes ready again when its hosts' earlier jobs finish
                    for host in self.hosts_of(jobs[index]):
                        queues[host].popleft()
                        busy.add(host)
                    running[pool.submit(self.execute, jobs[index])] = index
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    index = running.pop(future)
                    for host in self.hosts_of(jobs[index]):
                        busy.discard(host)
                        if queues[host] and queues[host][0] not in ready:
                            heapq.heappush(ready, queues[host][0])
                    results[index] = future.result()
        return [results[i] for i in range(len(jobs))]

    def _startable(self, index: int, jobs: Sequence[J], queues: dict, busy: set) -> bool:
        return all(h not in busy and queues[h][0] == index for h in self.hosts_of(jobs[index]))
