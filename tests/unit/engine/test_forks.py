"""How many jobs the burn-in runs at once: every host by default (no fixed ceiling), ``--forks N`` lowers it."""
import threading

from provision import targets
from provision.engine import burnin
from provision.engine.scheduler import Scheduler
from provision.inventory import Host
from provision.results.model import HostRecord


def hosts(n):
    return [Host(f"gpu{i:03d}", "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr") for i in range(n)]


def engine(n, forks, tmp_path):
    many = hosts(n)
    return burnin.Burnin(targets.build(many), burnin.Sink(None, {h.name: HostRecord(h.profile, {}) for h in many}),
                         None, forks)


def test_every_host_at_once_by_default_and_forks_lowers_it(tmp_path):
    assert engine(100, None, tmp_path).workers == 100
    assert engine(100, 7, tmp_path).workers == 7


def test_node_jobs_of_more_hosts_than_the_old_ceiling_all_run_at_once():
    running, most, lock, gate = [0], [0], threading.Lock(), threading.Barrier(100, timeout=30)

    def execute(job):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        gate.wait()  # every job waits here until all 100 are in: fewer workers would break the barrier
        with lock:
            running[0] -= 1
        return job

    jobs = [(f"check@gpu{i}", (f"gpu{i}",)) for i in range(100)]
    assert Scheduler(execute, lambda j: j[1], workers=100).run(jobs) == jobs and most[0] == 100
