"""The cluster procedure finds its checks by the role they declare (provision.checks.base.Role), so a
site's pair and group checks (modules in PROVISION_CHECK_PATH) join the fabric-aware schedule and the
localization like ours. No rack: the stand-in engine of test_cluster_procedure answers each job from the
simulated fabric's physics, the site's checks from hardware only they see faulty."""
import copy

import pytest

from provision import checks
from provision.checks.base import Role
from provision.engine import cluster
from provision.errors import ProvisionError
from provision.results.model import HostRecord, Outcome, Run
from tests.unit.engine.test_cluster_procedure import HOSTS, Engine, _rack

SITE_PAIRS = '''
"""site_pairs: a site's RDMA read bandwidth between two nodes, per rail (a test)."""
from provision.checks.base import Check, Role, Scope, Step


def steps(profile, pair):
    return [Step("mlx5_0", ["ib_read_bw", "-d", "mlx5_0", pair.server.address], parser="ib_read_bw", on=1)]


def parse(text):
    return {"tool": "ib_read_bw"}


def judge(ctx):
    return []


CHECK = Check(id="site_pairs", tool="ib_read_bw", order=111, scope=Scope.PAIR, steps=steps,
              parsers={"ib_read_bw": parse}, judge=judge, needs=("hca",), metrics={"read_bw_Gbps": "Gb/s"},
              role=Role.PAIR_EVIDENCE)
'''

SITE_GROUP = '''
"""site_group: a site's all-to-all across nodes (a test)."""
from provision.checks.base import Check, Role, Scope, Step


def steps(profile, group):
    return [Step("", ["mpirun", "alltoall_perf"], parser="alltoall_perf")]


def parse(text):
    return {"tool": "alltoall_perf"}


def judge(ctx):
    return []


CHECK = Check(id="site_group", tool="mpirun", order=121, scope=Scope.GROUP, steps=steps,
              parsers={"alltoall_perf": parse}, judge=judge, needs=("gpu", "hca"),
              metrics={"alltoall_busbw_GBps": "GB/s"}, role=Role.GROUP_EVIDENCE)
'''


class SiteEngine(Engine):
    """Answers ours from the rack's hardware and the site's checks from ``seen_by_site``."""

    def __init__(self, rundir, world, models, seen_by_site):
        super().__init__(rundir, world, models)
        self.seen_by_site = seen_by_site

    def site_pairs(self, job):
        return self.ib_pairs(job, self.seen_by_site, "read_bw_Gbps")

    def site_group(self, job):
        return self.nccl_cluster(job, self.seen_by_site, "alltoall_busbw_GBps")

    def ran(self, check_id):
        return sorted((job.hosts, job.tag) for job in self.jobs if job.check.id == check_id)


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site-checks"
    folder.mkdir()
    (folder / "site_pairs.py").write_text(SITE_PAIRS)
    (folder / "site_group.py").write_text(SITE_GROUP)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    return checks.registry()


def test_a_site_pair_and_group_check_join_the_schedule_and_the_localization(site, tmp_path):
    assert site["site_pairs"].role is Role.PAIR_EVIDENCE and site["site_group"].role is Role.GROUP_EVIDENCE
    rundir, world, models = _rack(tmp_path)
    seen = copy.deepcopy(models)
    seen["node02"]["faults"]["slow_hca"] = {"mlx5_3": 0.6}
    engine = SiteEngine(rundir, world, models, seen)
    results, record = cluster.Procedure(engine, "quick").run()
    [group] = record["groups"]
    assert group["rounds"][0]["phase"] == "ib_pairs+site_pairs quick"
    # every pair test ran ours and the site's, every group test both group checks: same hosts, same rounds
    assert engine.ran("site_pairs") == engine.ran("ib_pairs") != []
    assert engine.ran("site_group") == engine.ran("nccl_cluster") != []
    # ours saw a healthy rack: the HCA is named on the site's evidence alone
    assert {(s["kind"], s["host"], s["device"]) for s in group["suspects"]} == {("hca", "node02", "mlx5_3")}
    assert all(r.outcome is Outcome.PASS for r in results if r.check in ("ib_pairs", "nccl_cluster"))
    assert all(r.evidence for r in results if r.check in ("site_pairs", "site_group"))
    assert results[-1].check == "localize" and results[-1].outcome is Outcome.FAIL
    run = Run("t", hosts={h: HostRecord("h100-sxm5-80g-ndr") for h in HOSTS}, results=results, cluster=record)
    assert {h for h, v in run.verdicts().items() if v != "pass"} == {"node02"}


def test_a_procedure_of_the_sites_evidence_alone_names_a_slow_node(site, tmp_path):
    rundir, world, models = _rack(tmp_path)
    seen = copy.deepcopy(models)
    seen["node06"]["faults"]["slow_node"] = 0.7
    engine = SiteEngine(rundir, world, models, seen)
    own = [site["fabric"], site["site_pairs"], site["site_group"]]
    results, record = cluster.Procedure(engine, "quick", checks=own).run()
    assert {job.check.id for job in engine.jobs} == {"fabric", "site_pairs", "site_group"}
    [group] = record["groups"]
    assert {(s["kind"], s["host"], s["device"]) for s in group["suspects"]} == {("node", "node06", None)}
    assert results[-1].check == "localize" and results[-1].outcome is Outcome.FAIL


def test_asking_for_one_procedure_check_brings_the_roles_it_lacks(site):
    registered = list(site.values())

    def ids(selected):
        return [c.id for c in cluster.completed([site[i] for i in selected], registered)]
    assert ids(["ib_pairs"]) == ["ib_pairs", "fabric", "nccl_cluster", "site_group"]
    assert ids(["site_pairs"]) == ["site_pairs", "fabric", "nccl_cluster", "site_group"]
    assert ids(["gpu_health"]) == ["gpu_health"]
    assert cluster.runs(registered) and not cluster.runs([site["fabric"], site["ib_pairs"]])


def test_two_fabric_discoveries_are_bad_input(site, tmp_path):
    (tmp_path / "site-checks" / "site_fabric.py").write_text(
        "from provision.checks.fabric import CHECK as OURS\nfrom dataclasses import replace\n"
        "CHECK = replace(OURS, id='site_fabric')\n")
    with pytest.raises(ProvisionError, match="checks fabric, site_fabric all declare role fabric-discovery"):
        cluster.Procedure(Engine(None, None, None), "quick")
