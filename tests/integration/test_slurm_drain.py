"""`provision burnin --drain slurm` against a real Slurm (Debian's slurm-wlm and munge, started by
``slurm_cluster``: munged, slurmctld and one slurmd per simulated node, all on this machine).

A simulated rack of three nodes, each a Slurm node of the same name at the node's address. An
operator drains node03 by hand; node02 and node03 get a GPU that fell off the bus (Xid 79). The burn-in
(the ``xid`` check: ``dmesg`` is part of the simulated hardware, so the rack needs no install) must
drain exactly node02 with the failing check and finding as its reason, leave node03's reason as the
operator wrote it, and say so. Run again unhealed, nothing is drained twice. Healed, with
``--resume-passed``, node02 returns to service and node03 stays drained with the operator's reason. Between
the two, the drain's circuit breaker: node01 failing too is not drained (three Slurm nodes: a budget of one,
used by node02's drain within the window) until ``--drain-max 1`` names the count.
Node states are read back from slurmctld with ``scontrol show node``.
"""
import pytest

from provision import paths
from provision.sim import rack
from tests.integration import slurm_cluster
from tests.integration.conftest import own_rack, provision

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing()))]
OPERATOR = "PSU swap, ticket 4711 (alice)"
XID = "burnin: xid PCI "  # the reason's start: the check, then the first finding (the GPU's PCI address)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(inventory, SlurmCluster): a 3-node rack and a Slurm whose nodes are its nodes."""
    with own_rack(tmp_path_factory.mktemp("slurm-rack"), nodes=3) as inv:
        nodes = {n.name: n.address for n in rack.load_nodes(inv)}
        with slurm_cluster.slurm_cluster(tmp_path_factory.mktemp("slurm"), nodes) as slurm:
            yield inv, slurm


def burnin(inv, slurm, run_id, *extra):
    proc = provision("burnin", "-i", str(inv), "--scope", "node", "--checks", "xid", "--drain", "slurm",
                     "--run-id", run_id, *extra, timeout=600, env=slurm.env)
    return proc, (paths.RUNS / run_id / "drain.txt").read_text().splitlines()


def test_drains_the_faulty_node_only_leaves_an_operators_drain_and_resumes_once_healed(cluster):
    inv, slurm = cluster
    assert slurm.scontrol("update", "NodeName=node03", "State=DRAIN", f"Reason={OPERATOR}").returncode == 0
    for node in ("node02", "node03"):
        fault = provision("sim", "fault", node, "xid79", "--device", "1", "--inventory", str(inv))
        assert fault.returncode == 0, fault.stderr

    first, drained = burnin(inv, slurm, "slurm-1")
    assert first.returncode == 1, first.stdout[-3000:]
    assert [line.split()[0] for line in drained] == ["node02", "node03"]  # drain.txt: every failing host
    assert all(line.split(" ", 1)[1].startswith(XID) and "xid = 79" in line for line in drained)
    states = slurm.states()
    assert states["node01"].state == "IDLE" and states["node01"].reason == ""
    assert states["node02"].words == {"IDLE", "DRAIN"} and states["node02"].reason == drained[0].split(" ", 1)[1]
    assert states["node03"].reason == OPERATOR
    assert f"slurm: node03 left alone: drained by someone else: {OPERATOR}" in first.stdout
    assert "slurm: drained 1: node02; resumed 0" in first.stdout
    assert (paths.RUNS / "slurm-1/slurm.txt").read_text().splitlines()[-1] == "slurm: drained 1: node02; resumed 0"

    again, _ = burnin(inv, slurm, "slurm-2", "--resume-passed")  # still faulty: never drained twice
    assert "slurm: node02: already drained by this tool: burnin: xid" in again.stdout
    assert slurm.states()["node02"].reason == states["node02"].reason

    # The breaker, on Slurm's own stamps: 3 nodes give a budget of 1 per 24 h, which node02's drain has used.
    assert provision("sim", "fault", "node01", "xid79", "--device", "0", "--inventory", str(inv)).returncode == 0
    held, _ = burnin(inv, slurm, "slurm-2b")
    assert "slurm: breaker: stopped draining after 0 of 1 failing nodes: at most 1 per 24 h (10 % of 3 Slurm " \
           "nodes), 1 of them already drained by this tool in that time; not drained: node01" in held.stdout
    assert "slurm: not drained (breaker): node01: burnin: xid " in held.stdout
    assert not slurm.states()["node01"].held()
    named, _ = burnin(inv, slurm, "slurm-2c", "--drain-max", "1")  # the operator names the count
    assert "slurm: drained 1: node01; resumed 0" in named.stdout
    assert slurm.states()["node01"].reason.startswith(XID)
    assert slurm.scontrol("update", "NodeName=node01", "State=RESUME").returncode == 0  # an operator's resume

    assert provision("sim", "heal", "all", "--inventory", str(inv)).returncode == 0
    healed, drained = burnin(inv, slurm, "slurm-3", "--resume-passed")
    assert healed.returncode == 0, healed.stdout[-3000:]
    assert drained == []
    states = slurm.states()
    assert not states["node02"].held() and states["node02"].reason == ""
    assert states["node03"].words == {"IDLE", "DRAIN"} and states["node03"].reason == OPERATOR
    assert "slurm: node02: resume: passes every check it was drained for" in healed.stdout
    assert "slurm: drained 0; resumed 1: node02" in healed.stdout
