"""A resumed run (``provision burnin --resume RUN``): the results an earlier attempt journaled are answered from the
journal, never run again; what is missing runs, stamped with this attempt; the job refuses a changed inventory and
options that would make another run."""
import dataclasses

import pytest

from provision import targets
from provision.commands._job import resume
from provision.commands._job.options import JobOptions
from provision.engine import burnin
from provision.engine.control import Control
from provision.errors import ProvisionError
from provision.results.model import CheckResult, HostRecord, Outcome, Run
from provision.results.store import RunStore
from tests.unit.engine.local import LocalTransport
from tests.unit.engine.test_interrupts import add_check, host


def burn(rundir, names, only, attempt=1, done=()):
    hosts = [host(n) for n in names]
    run = Run(run_id=rundir.name, hosts={h.name: HostRecord(h.profile) for h in hosts})
    request = burnin.BurninRequest(only, attempt=attempt, done=done)
    run.results = burnin.run(targets.build(hosts), request, LocalTransport(),
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda _: None), rundir.record)).results
    return run


def test_a_resumed_burnin_keeps_what_the_killed_attempt_journaled_and_runs_the_rest(tmp_path, monkeypatch):
    ran = tmp_path / "ran"
    ran.mkdir()
    for order, name in enumerate(("first", "second"), 1):
        add_check(tmp_path, name, f"echo HOST >> {ran}/{name}; echo bw 12", order)
    monkeypatch.setenv("PROVISION_CHECK_PATH", str(tmp_path))
    rundir = RunStore(tmp_path / "runs").create("r")
    burn(rundir, ["n1", "n2"], ["first"])  # the attempt that was killed after its first check
    kept = resume.kept(rundir)
    assert sorted((r.check, r.hosts) for r in kept) == [("first", ("n1",)), ("first", ("n2",))]  # as they ended
    second = burn(rundir, ["n1", "n2"], ["first", "second"], attempt=2, done=tuple(kept))
    assert sorted((ran / "first").read_text().split()) == ["n1", "n2"]  # not run again
    assert sorted((ran / "second").read_text().split()) == ["n1", "n2"]
    assert [(r.check, r.host, r.outcome, r.attempt) for r in second.results] == [
        ("first", "n1", Outcome.PASS, 1), ("first", "n2", Outcome.PASS, 1),
        ("second", "n1", Outcome.PASS, 2), ("second", "n2", Outcome.PASS, 2)]
    whole = burn(RunStore(tmp_path / "runs").create("whole"), ["n1", "n2"], ["first", "second"])
    assert [(r.check, r.hosts, r.outcome, r.message) for r in whole.results] == \
        [(r.check, r.hosts, r.outcome, r.message) for r in second.results]
    assert [r.to_dict().get("attempt") for r in second.results] == [None, None, 2, 2]  # the report says which


def test_an_interrupted_result_runs_again():
    stopped = CheckResult("first", ("n1",), Outcome.ERROR, "interrupted (SIGINT) while running", run_error=True)
    kept = CheckResult("first", ("n2",), Outcome.PASS, "ok")

    class Dir:
        def journaled_results(self):
            return [stopped, kept]

    assert resume.kept(Dir()) == [kept]


def test_a_changed_inventory_is_refused_naming_the_host_and_field():
    [target] = targets.build([host("n1")])
    saved = {"n1": resume.identity(target)}
    resume.changed(saved, [target], "r")  # the same: nothing said
    moved = dataclasses.replace(target, host=dataclasses.replace(target.host, address="127.0.9.9"))
    with pytest.raises(ProvisionError, match=r"--resume r: the inventory changed since the run: host n1: address "
                                             r"127.0.0.1 -> 127.0.9.9"):
        resume.changed(saved, [moved], "r")
    with pytest.raises(ProvisionError, match="host n2 was not in the run"):
        resume.changed(saved, [target, *targets.build([host("n2")])], "r")
    with pytest.raises(ProvisionError, match="host n1 is no longer selected"):
        resume.changed(saved, [], "r")


def test_resume_takes_the_runs_own_options(tmp_path, monkeypatch):
    from provision import paths

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    with pytest.raises(ProvisionError, match=r"--resume r: -i, --checks: a resumed run keeps its own inventory"):
        resume.load(JobOptions(("burnin",), inventory=("x",), checks=("xid",), resume="r"))
    rundir = RunStore(tmp_path / "runs").create("r")
    with pytest.raises(ProvisionError, match=r"job.json: no such file: only a run of provision run or burnin"):
        resume.load(JobOptions(("burnin",), resume="r"))
    options = JobOptions(("burnin",), checks=("xid",), check_set=None, scope="node", forks=4, run_id="r")
    resume.save(rundir, options, targets.build([host("n1")]))
    found, saved, hosts = resume.load(JobOptions(("burnin",), resume="r", verbose=True))
    assert found.path == rundir.path and list(hosts) == ["n1"]
    assert saved == dataclasses.replace(options, verbose=True, resume="r")
    with pytest.raises(ProvisionError, match=r"that run was `provision burnin`; resume it with `provision burnin "
                                             r"--resume r`"):
        resume.load(JobOptions(("install", "burnin"), resume="r"))
