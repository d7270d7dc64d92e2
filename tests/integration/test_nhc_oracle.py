"""LBNL NHC's own drain helpers are the oracle of ``provision health --drain self``.

NHC drains and resumes its node with ``helpers/node-mark-offline HOST NOTE`` and ``helpers/node-mark-online HOST``
(copied unchanged from https://github.com/mej/nhc into tests/data/nhc/, see SOURCE.md): they read the node with
``sinfo -o '%t %E'`` and act with ``scontrol update``. Here both run against one real slurmctld (Debian's
slurm-wlm, ``slurm_cluster``) with two Slurm nodes put in the same state before each case: NHC's helper acts on
``nhc``, ``provision.health.selfdrain.apply`` (what ``provision health --drain self`` calls) on ``ours``, with the
same finding; each node's state and reason are then read back from slurmctld and compared, NHC's leader ``NHC:``
and ours ``provision-health:`` read as one.

They agree on every case but two, which differ on purpose and are asserted as they differ (selfdrain's docstring,
README): a DOWN node with the health check's own reason is resumed by NHC's helper and left DOWN by ours, and NHC
rewrites its reason on every failing call, so it names the call's first finding, where ours keeps naming its
finding while that is still seen (and the stamp of it, which the breaker counts from); the same finding again is
the same reason and stamp for both (slurmctld keeps an unchanged reason's stamp).
"""
import os
import subprocess
import time

import pytest

from provision import paths
from provision.health import selfdrain
from provision.slurm.scontrol import NodeState, Scontrol
from tests.integration import slurm_cluster

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing()))]
NHC = paths.ROOT / "tests/data/nhc"
OPERATOR = "PSU swap, ticket 4711 (alice)"
XID = "xid GPU 00000000:1B:00.0 Xid 79 (GPU has fallen off the bus)"  # a finding as the health check words it
IB = "ib_ports mlx5_0 port 1 State Down"
LEADERS = {"nhc": "NHC:", "ours": selfdrain.PREFIX}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    # two unused loopback addresses: each node's slurmd listens there
    with slurm_cluster.slurm_cluster(tmp_path_factory.mktemp("nhc-oracle"),
                                     {"nhc": "127.0.77.1", "ours": "127.0.77.2"}) as cluster:
        yield cluster


@pytest.fixture
def fresh(slurm):
    """Both nodes IDLE with no reason and no job, before and after a case."""
    def reset():
        slurm.scontrol("cancel_reboot", "nhc,ours")  # before the jobs end: no reboot is ever issued
        slurm.scontrol("update", "NodeName=nhc,ours", "State=RESUME")
        subprocess.run(["scancel", "-w", "nhc,ours"], capture_output=True, timeout=30,
                       env={**os.environ, **slurm.env})
        slurm.wait_idle()
    reset()
    yield slurm
    reset()


def put(slurm, start: str) -> None:
    """Both nodes in ``start``: idle, operator (drained by someone else), own (drained by the health check for
    an Xid), down_operator, down_own, busy (a job on it), busy_own (a job on it, drained by the health check),
    reboot_own (busy_own, then ``scontrol reboot ASAP``: a reboot requested when the job ends)."""
    if start.startswith(("busy", "reboot")):  # the jobs first: a drained node starts none
        for node in LEADERS:
            job = subprocess.run(["sbatch", "--parsable", "-w", node, "--chdir=/tmp", "--output=/dev/null",
                                  "--wrap", "sleep 120"], capture_output=True, text=True, timeout=30,
                                 env={**os.environ, **slurm.env})
            assert job.returncode == 0, job.stderr
        deadline = time.monotonic() + 60
        while not all({"ALLOCATED", "MIXED"} & slurm.node(n).words for n in LEADERS):
            assert time.monotonic() < deadline, slurm.states()
            time.sleep(0.2)
    state = "DOWN" if start.startswith("down") else "DRAIN"
    for node, leader in LEADERS.items():
        if start.endswith("operator"):
            assert slurm.scontrol("update", f"NodeName={node}", f"State={state}", f"Reason={OPERATOR}").returncode == 0
        elif start.endswith("own"):
            assert slurm.scontrol("update", f"NodeName={node}", f"State={state}",
                                  f"Reason={leader} {XID}").returncode == 0
    if start.startswith("reboot"):  # an operator's reboot when the job ends; the drain it holds keeps our reason
        done = slurm.scontrol("reboot", "ASAP", "nextstate=RESUME", "nhc,ours")
        assert done.returncode == 0, done.stderr
        assert all("REBOOT_REQUESTED" in slurm.node(n).words for n in LEADERS), slurm.states()


def nhc(slurm, verdict: str, finding: str) -> None:
    """NHC's helper for this verdict on node ``nhc``, as NHC's die() and nhcmain_mark_online() run it."""
    helper = ["node-mark-offline", "nhc", finding] if verdict == "fail" else ["node-mark-online", "nhc"]
    done = subprocess.run(["bash", str(NHC / helper[0]), *helper[1:]], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **slurm.env, "NHC_RM": "slurm"})
    assert done.returncode == 0, done.stdout + done.stderr


def ours(slurm, verdict: str, finding: str, monkeypatch) -> selfdrain.Done:
    """``provision health --drain self``'s rules on node ``ours`` (the checks the finding names passed or failed)."""
    for name, value in slurm.env.items():
        monkeypatch.setenv(name, value)
    check, wanted = finding.split()[0], f"{selfdrain.PREFIX} {finding}"
    call = selfdrain.Judged(verdict, wanted, frozenset({"xid", "ib_ports"} - {check}), frozenset({wanted})) \
        if verdict == "fail" else selfdrain.Judged(verdict, passed=frozenset({"xid", "ib_ports"}))
    return selfdrain.apply(Scontrol(), "ours", call)


def seen(state: NodeState, node: str) -> tuple[frozenset[str], str]:
    """(state words, reason with the node's leader read as one) of a node as slurmctld says it."""
    return state.words, state.reason.replace(LEADERS[node], "<leader>", 1)


CASES = [  # (start, verdict, finding, what both do)
    ("idle", "fail", XID, "drained with the leader and the finding"),
    ("idle", "pass", XID, "nothing"),
    ("operator", "fail", XID, "the operator's reason kept"),
    ("operator", "pass", XID, "not resumed: not ours"),
    ("own", "pass", XID, "resumed"),
    ("own", "fail", XID, "drained as it was"),
    ("down_operator", "fail", XID, "DOWN untouched"),
    ("down_operator", "pass", XID, "DOWN untouched"),
    ("down_own", "fail", XID, "DOWN untouched"),
    ("busy", "fail", XID, "draining under its job"),
    ("busy_own", "pass", XID, "resumed under its job"),
    ("busy_operator", "fail", IB, "the operator's reason kept under its job"),
    ("reboot_own", "pass", XID, "left alone: Slurm holds it drained for a reboot"),
]


@pytest.mark.parametrize("start, verdict, finding, agreed", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_provision_health_drains_and_resumes_as_nhcs_own_helpers(fresh, monkeypatch, start, verdict, finding, agreed):
    put(fresh, start)
    nhc(fresh, verdict, finding)
    ours(fresh, verdict, finding, monkeypatch)
    after = fresh.states()
    assert seen(after["ours"], "ours") == seen(after["nhc"], "nhc"), (agreed, after)
    if start == "idle" and verdict == "fail":  # the case that shows the comparison compares something
        assert seen(after["ours"], "ours") == ({"IDLE", "DRAIN"}, f"<leader> {XID}")


def test_a_down_node_with_its_own_reason_is_resumed_by_nhc_and_left_down_by_us(fresh, monkeypatch):
    put(fresh, "down_own")
    nhc(fresh, "pass", XID)
    done = ours(fresh, "pass", XID, monkeypatch)
    after = fresh.states()
    assert "DOWN" not in after["nhc"].words and not after["nhc"].reason  # node-mark-online: State=RESUME
    assert "DOWN" in after["ours"].words and after["ours"].reason == f"{selfdrain.PREFIX} {XID}"
    assert done.action == selfdrain.NOTHING and "left alone: DOWN" in done.lines[0]


def test_a_fault_gone_rewrites_the_reason_as_nhc_does_and_a_fault_still_seen_keeps_it(fresh, monkeypatch):
    put(fresh, "own")  # drained for an Xid on GPU 1B; now the port fails and the Xid is gone
    nhc(fresh, "fail", IB)
    done = ours(fresh, "fail", IB, monkeypatch)
    after = fresh.states()
    assert seen(after["ours"], "ours") == seen(after["nhc"], "nhc") == ({"IDLE", "DRAIN"}, f"<leader> {IB}")
    assert done.action == selfdrain.REASON
    # the same finding again: both keep the reason and Slurm's stamp of it (slurmctld keeps an unchanged reason's)
    fresh.scontrol("update", "NodeName=nhc,ours", "State=RESUME")
    put(fresh, "own")
    stamps = {n: fresh.node(n).since for n in LEADERS}
    time.sleep(1.1)  # a new stamp would show (seconds)
    nhc(fresh, "fail", XID)
    assert ours(fresh, "fail", XID, monkeypatch).action == selfdrain.NOTHING
    after = fresh.states()
    assert seen(after["ours"], "ours") == seen(after["nhc"], "nhc") == ({"IDLE", "DRAIN"}, f"<leader> {XID}")
    assert {n: after[n].since for n in LEADERS} == stamps
    # the Xid on 1B still seen, another GPU's now first: NHC's reason names the new one, ours still the first
    other = "xid GPU 00000000:2A:00.0 Xid 79 (GPU has fallen off the bus)"
    nhc(fresh, "fail", other)
    for name, value in fresh.env.items():
        monkeypatch.setenv(name, value)
    call = selfdrain.Judged("fail", f"{selfdrain.PREFIX} {other}", frozenset({"ib_ports"}),
                            frozenset({f"{selfdrain.PREFIX} {other}", f"{selfdrain.PREFIX} {XID}"}))
    assert selfdrain.apply(Scontrol(), "ours", call).action == selfdrain.NOTHING
    after = fresh.states()
    assert after["nhc"].reason == f"NHC: {other}" and after["ours"].reason == f"{selfdrain.PREFIX} {XID}"
    assert after["ours"].since == stamps["ours"]
