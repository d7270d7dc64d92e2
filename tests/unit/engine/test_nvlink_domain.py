"""NVLink-domain group checks (nvlink_clique, nvlink_domain) in the engine: planned once per domain (the hosts
sharing ``provision_nvlink_domain``), run with the static checks before the cluster procedure's InfiniBand tests,
skipped where the profile has no domain, an error where a host names none, untested with one tray; a domain they
fail keeps its hosts out of the IB tests. Judged naming the domain."""
from pathlib import Path

import pytest

from provision import checks, profiles, targets
from provision.checks import nvlink_clique, nvlink_domain
from provision.checks.base import judge_outputs
from provision.engine import burnin, cluster
from provision.engine.control import Control
from provision.engine.jobs import Job, plan, target
from provision.errors import ProfileError
from provision.inventory import NVLINK_DOMAIN_VAR, Host
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Scope
from provision.results.store import RunStore
from tests.unit.engine.local import LocalTransport
from tests.unit.engine.test_cluster_procedure import Engine, _rack

GB200 = "gb200-nvl72"
DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "nvlink_domain"
DATA = checks.registry()


def tray(name, domain=None, profile=GB200):
    return Host(name, "127.0.0.1", 22, "root", None, None, profile,
                vars={NVLINK_DOMAIN_VAR: domain} if domain else {})


def test_one_job_per_domain_and_the_profile_grouping_for_other_group_checks():
    profiles_of = {"t1": GB200, "t2": GB200, "t3": GB200, "t4": GB200, "h1": "h100", "h2": "h100"}
    domains = {"t1": "rack-a", "t2": "rack-b", "t3": "rack-a", "t4": "rack-b", "h1": None, "h2": None}
    jobs = plan([DATA["nvlink_clique"], DATA["nvlink_domain"], DATA["nccl_cluster"]], profiles_of, domains)
    by_check = {}
    for job in jobs:
        by_check.setdefault(job.check.id, []).append(job.hosts)
    for check_id in ("nvlink_clique", "nvlink_domain"):
        assert by_check[check_id] == [("t1", "t3"), ("t2", "t4"), ("h1", "h2")]
    assert by_check["nccl_cluster"] == [("t1", "t2", "t3", "t4"), ("h1", "h2")]
    assert plan([DATA["nvlink_domain"]], {"t1": GB200, "t2": GB200})[0].hosts == ("t1", "t2")  # no domains given


def test_the_domain_checks_are_static_and_the_ib_tests_the_procedures():
    assert DATA["nvlink_domain"].role is None and DATA["nvlink_clique"].role is None
    assert DATA["nvlink_domain"].per_nvlink_domain and DATA["nvlink_clique"].per_nvlink_domain
    assert DATA["ib_pairs"].role is not None and DATA["nccl_cluster"].role is not None
    ids = list(DATA)
    assert ids.index("nvlink_clique") < ids.index("nvlink_domain") < ids.index("nccl_cluster")


def test_the_domain_test_runs_before_the_procedure_which_sees_its_result(tmp_path, monkeypatch):
    """Burnin.run: the static round (node checks and the per-domain group checks) ends before the cluster
    procedure starts, and the procedure is given the domain's result."""
    seen, order = {}, []

    class Procedure:
        def __init__(self, engine, schedule_name, node_results, checks_):
            seen["results"] = list(node_results)
            order.append("procedure")

        def run(self):
            return [], {"groups": []}

    def execute(self, job):
        order.append(job.check.id)
        return CheckResult(job.check.id, job.hosts, Outcome.FAIL, "slow", scope=job.check.scope,
                           raw=[RawOutput("2-nodes", job.hosts[0], "raw/x.txt")])

    monkeypatch.setattr(cluster, "Procedure", Procedure)
    monkeypatch.setattr(burnin.Burnin, "execute", execute)
    hosts = [tray("t1", "rack-a"), tray("t2", "rack-a")]
    rundir = RunStore(tmp_path / "runs").create("d")
    burnin.run(targets.build(hosts), burnin.BurninRequest(["nvlink_domain", "ib_pairs"]), LocalTransport(),
               burnin.Sink(rundir, {h.name: HostRecord(GB200) for h in hosts}, Control(progress=lambda line: None)))
    assert order[0] == "nvlink_domain" and order[-1] == "procedure" and "ib_pairs" not in order
    assert [(r.check, r.hosts) for r in seen["results"]] == [("nvlink_domain", ("t1", "t2"))]


def _execute(tmp_path, hosts, check_id="nvlink_domain"):
    rundir = RunStore(tmp_path / "runs").create("e")
    engine = burnin.Burnin(targets.build(hosts), burnin.Sink(rundir, {h.name: HostRecord(h.profile) for h in hosts},
                                                           Control(progress=lambda line: None)), LocalTransport())
    return engine._execute(Job(DATA[check_id], tuple(h.name for h in hosts)))


def test_skipped_without_a_domain_an_error_without_its_name_untested_alone(tmp_path):
    hgx = [tray("b1", profile="b200-hgx"), tray("b2", profile="b200-hgx")]
    for check_id in ("nvlink_domain", "nvlink_clique"):
        skipped = _execute(tmp_path / check_id, hgx, check_id)
        assert skipped.outcome is Outcome.SKIPPED and "needs nvlink_domain" in skipped.message
    error = _execute(tmp_path / "e", [tray("t1", "rack-a"), tray("t2")])
    assert error.outcome is Outcome.ERROR and error.raw == []
    assert error.message == ("t2: no NVLink domain in the inventory (set provision_nvlink_domain to the rack's domain "
                             "name; the trays whose GPUs share a fabric clusterUuid in nvidia-smi -q are one domain)")
    alone = _execute(tmp_path / "u", [tray("t1", "rack-a")])
    assert alone.outcome is Outcome.UNTESTED and "NVLink domain rack-a has one tray" in alone.message


def test_the_command_forces_mnnvl_and_turns_ib_off():
    profile = profiles.load(GB200)
    [step] = nvlink_domain.steps(profile, target(DATA["nvlink_domain"], (tray("t1", "a"), tray("t2", "a"))))
    argv = step.argv
    assert argv[:3] == ["mpirun", "--allow-run-as-root", "--tag-output"] and step.parser == "nccl-tests"
    exported = [argv[i + 1] for i, a in enumerate(argv) if a == "-x"]
    assert {"NCCL_MNNVL_ENABLE=1", "NCCL_IB_DISABLE=1"} <= set(exported)
    assert argv[argv.index("-g") + 1] == "4" and argv[argv.index("-e") + 1] == "8589934592"
    steps = nvlink_clique.steps(profile, target(DATA["nvlink_clique"], (tray("t1", "a"), tray("t2", "a"))))
    assert [(s.key, s.on, s.parser) for s in steps] == [("t1", 0, "nvidia-smi-qx"), ("t2", 1, "nvidia-smi-qx")]



def test_the_ib_all_reduce_turns_mnnvl_off_only_where_there_is_a_domain():
    """nccl_cluster's ring must cross the HCAs: on an NVLink-domain platform NCCL would carry the trays' traffic over
    NVLink, so every rank gets NCCL_MNNVL_ENABLE=0 there, and nowhere else."""
    check = DATA["nccl_cluster"]
    exported = {}
    for name in (GB200, "h100-sxm5-80g-ndr"):
        [step] = check.steps(profiles.load(name), target(check, (tray("t1", "a", name), tray("t2", "a", name))))
        exported[name] = [step.argv[i + 1] for i, a in enumerate(step.argv) if a == "-x"]
    assert exported == {GB200: ["NCCL_MNNVL_ENABLE=0"], "h100-sxm5-80g-ndr": []}

def test_a_slow_domain_fails_naming_it(tmp_path):
    profile = profiles.load(GB200)
    text = (DATA_DIR / "sim_gb200_2trays_limited_capacity.txt").read_text()
    hosts = (tray("t1", "rack-a"), tray("t2", "rack-a"))
    [_, busbw, *_] = judge_outputs(DATA["nvlink_domain"], profile, target(DATA["nvlink_domain"], hosts),
                                   {"2-nodes": text})
    assert not busbw.ok and busbw.fault == "NVLINK_DOMAIN_SLOW"
    assert busbw.describe().startswith("NVLink domain rack-a (2 trays x 4 GPUs): busbw_GBps = ")
    assert "reference 792.84 GB/s bounds [792.84, -]" in busbw.describe()  # the gate at 95% of the measured 834.57


def test_a_domain_without_a_reference_row_errors_before_it_runs(monkeypatch):
    """No published figure, no threshold: the steps refuse (the engine's job error), nothing runs."""
    profile = profiles.load(GB200)
    monkeypatch.setattr(type(profile), "reference", lambda self, check, metric: None)
    with pytest.raises(ProfileError, match=r"references\.nvlink_domain\.busbw_GBps: missing"):
        nvlink_domain.steps(profile, target(DATA["nvlink_domain"], (tray("t1", "a"), tray("t2", "a"))))


def test_hosts_of_a_failed_domain_stay_out_of_the_ib_tests(tmp_path):
    rundir, world, models = _rack(tmp_path)
    raw = [RawOutput("2-nodes", "node01", "raw/nvlink_domain/x.txt")]
    failed = CheckResult("nvlink_domain", ("node01", "node02"), Outcome.FAIL, "slow", scope=Scope.GROUP, raw=raw)
    crashed = CheckResult("nvlink_domain", ("node03", "node04"), Outcome.ERROR, "exited 3", scope=Scope.GROUP, raw=raw)
    unnamed = CheckResult("nvlink_domain", ("node05",), Outcome.ERROR, "no NVLink domain", scope=Scope.GROUP)
    results, record = cluster.Procedure(Engine(rundir, world, models), "quick", [failed, crashed, unnamed]).run()
    [group] = record["groups"]
    assert group["excluded"] == {h: f"nvlink_domain {o} on its NVLink domain"
                                 for h, o in [("node01", "fail"), ("node02", "fail"), ("node03", "error"),
                                              ("node04", "error")]}
    assert "node05" in group["hosts"]
    assert all(not {"node01", "node02", "node03", "node04"} & set(r.hosts) for r in results)


