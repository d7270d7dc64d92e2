"""The progress view, on a fake clock: in a log a check's line at most every 30 s and once at its
end, never a line per host unless verbose; the slowest running host named; the install's line per
role; on a terminal the lines drawn by rich and the lines that matter printed above them."""
import io

from rich.console import Console

from provision.report.progress import Progress
from provision.results.events import JobFinished, JobStarted, Planned, PlaybookEnded, TaskResult, TaskStarted
from provision.results.model import CheckResult, Outcome


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def finished(check, host, outcome=Outcome.PASS):
    return JobFinished(CheckResult(check, (host,), outcome, "x", duration_s=1.0))


def test_a_log_gets_a_line_per_check_at_most_every_30_s_and_at_its_end():
    clock, lines = Clock(), []
    view = Progress(lines.append, clock=clock)
    hosts = [f"gpu{i:04d}" for i in range(1250)]
    view.event(Planned({"gpu_health": 1250}))
    for host in hosts:
        view.event(JobStarted("gpu_health", (host,)))
    for i, host in enumerate(hosts[:-1]):
        clock.now += 0.1  # 1,249 results over 125 s
        view.event(finished("gpu_health", host, Outcome.FAIL if i % 500 == 0 else Outcome.PASS))
    assert len(lines) == 4  # at 30, 60, 90 and 120 s: never one per host
    assert lines[0] == ("burnin gpu_health: 300/1250 done, 299 passed, 1 failed, 0 errored; slowest running "
                        "gpu0300 30 s; elapsed 0:30")
    clock.now += 400
    view.event(finished("gpu_health", hosts[-1], Outcome.ERROR))
    assert lines[-1] == "burnin gpu_health: 1250/1250 done, 1246 passed, 3 failed, 1 errored; took 8:44"


def test_verbose_adds_a_line_per_host_and_a_check_without_a_plan_counts_what_started():
    clock, lines = Clock(), []
    view = Progress(lines.append, verbose=True, clock=clock)
    view.event(JobStarted("ib_pairs", ("n1", "n2")))
    clock.now += 2
    view.event(JobFinished(CheckResult("ib_pairs", ("n1", "n2"), Outcome.PASS, "ok", duration_s=2.0)))
    assert lines == ["  burnin n1+n2        ib_pairs         pass       2.0 s",
                     "burnin ib_pairs: 1/1 done, 1 passed, 0 failed, 0 errored; took 0:02"]


def test_a_later_run_of_the_same_check_is_named_by_its_number():
    clock, lines = Clock(), []
    view = Progress(lines.append, clock=clock)
    for _round in range(2):  # the cluster procedure's ib_pairs: one job per pair, round after round
        view.event(Planned({"ib_pairs": 2}))
        for pair in (("n1", "n2"), ("n3", "n4")):
            view.event(JobStarted("ib_pairs", pair))
        for pair in (("n1", "n2"), ("n3", "n4")):
            view.event(JobFinished(CheckResult("ib_pairs", pair, Outcome.PASS, "ok", duration_s=1.0)))
    assert lines == ["burnin ib_pairs: 2/2 done, 2 passed, 0 failed, 0 errored; took 0:00",
                     "burnin ib_pairs run 2: 2/2 done, 2 passed, 0 failed, 0 errored; took 0:00"]


def test_the_install_gets_a_line_per_role_with_hosts_done_changed_and_failed():
    clock, lines = Clock(), []
    with Progress(lines.append, clock=clock) as view:
        view.event(TaskStarted("nvidia_driver", "Install the driver packages", 3))
        view.line("  install n3           nvidia_driver: FAILED 'Install the driver packages': no package")
        for host, status, changed in (("n1", "ok", True), ("n2", "ok", False), ("n3", "failed", False)):
            clock.now += 20
            view.event(TaskResult("nvidia_driver", host, status, changed))
        view.event(TaskStarted("nvidia_driver", "Load the driver", 3))
        view.event(TaskStarted("cuda", "Install CUDA", 3))
        view.event(PlaybookEnded())
        view.line("install: done")
    assert lines == [
        "  install role nvidia_driver",
        "  install n3           nvidia_driver: FAILED 'Install the driver packages': no package",
        "install nvidia_driver: 1 task, task 1 'Install the driver packages': 2/3 hosts done; 1 host changed, "
        "0 failed; elapsed 0:40",
        "install nvidia_driver: 2 tasks; 1 host changed, 1 failed; took 1:00",
        "  install role cuda",
        "install cuda: 1 task; 0 hosts changed, 0 failed; took 0:00",
        "install: done"]  # the last role's line when the playbook ends, not when the job does


def test_a_terminal_gets_rich_lines_and_the_lines_that_matter_above_them():
    clock, lines, screen = Clock(), [], io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200, color_system=None)
    with Progress(lines.append, live=True, clock=clock, console=console) as view:
        view.event(Planned({"xid": 2}))
        view.event(JobStarted("xid", ("n1",)))
        view.event(JobStarted("xid", ("n2",)))
        clock.now += 5
        view.event(finished("xid", "n1"))
        view.line("  burnin n2           unreachable: [Errno 113] No route to host")
        drawn = io.StringIO()
        Console(file=drawn, width=80, color_system=None).print(view._renderable())
        row = drawn.getvalue().splitlines()[1].split()
        assert row == ["xid", "1/2", "1", "0", "0", "n2", "5", "s", "0:05"]
        view.event(finished("xid", "n2"))
    assert lines == []  # on a terminal nothing goes through the plain printer
    text = screen.getvalue()
    assert "unreachable: [Errno 113] No route to host" in text  # markup-like text printed as it is
    assert "burnin xid: 2/2 done, 2 passed, 0 failed, 0 errored; took 0:05" in text
