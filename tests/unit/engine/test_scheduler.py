"""The scheduler: disjoint jobs at once, a host's jobs in order, never two jobs on one host."""
import threading
import time

from provision.engine.scheduler import Scheduler


class Recorder:
    def __init__(self):
        self.lock, self.active, self.events, self.peak = threading.Lock(), set(), [], 0

    def __call__(self, job):
        name, hosts = job
        with self.lock:
            assert not set(hosts) & self.active, f"{name} overlaps {self.active}"
            self.active |= set(hosts)
            self.events.append(name)
            self.peak = max(self.peak, len(self.active))
        time.sleep(0.03)
        with self.lock:
            self.active -= set(hosts)
        return name


def test_disjoint_jobs_run_together_and_shared_hosts_in_order():
    jobs = [(f"{h}{c}", (h,)) for c in range(3) for h in "abcd"] + [("ab", ("a", "b")), ("cd", ("c", "d")),
                                                                     ("bc", ("b", "c"))]
    rec = Recorder()
    results = Scheduler(rec, lambda j: j[1], workers=8).run(jobs)
    assert results == [j[0] for j in jobs]
    assert rec.peak == 4  # four hosts busy at once
    for h in "abcd":  # each host saw its node jobs in order, then its pair jobs
        mine = [e for e in rec.events if h in e]
        assert mine[:3] == [f"{h}0", f"{h}1", f"{h}2"]
    assert rec.events.index("bc") > max(rec.events.index("ab"), rec.events.index("cd"))


def test_the_pool_bounds_concurrency():
    rec = Recorder()
    Scheduler(rec, lambda j: j[1], workers=2).run([(str(i), (i,)) for i in range(6)])
    assert rec.peak == 2
