"""A killed burn-in resumed (``provision burnin --resume RUN``): the controller is killed with SIGKILL in the middle of
a 4-node burn-in's node phase, its resume is killed again in the cluster procedure, and a second resume finishes
it. The final report equals an uninterrupted run's (same verdicts, same results, same findings), each result was
run once across the attempts (none rerun), and each says which attempt gave it. It runs on four nodes
(``--limit``) of the session's shared, installed 8-node H100 rack (conftest.eight_h100)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from provision import paths
from tests.integration.conftest import provision

pytestmark = pytest.mark.integration
LIMIT = "node01,node02,node03,node04"
CHECKS = "gpu_health,xid,ecc_counters,pcie_replays,ib_ports,ib_write_bw,ib_pairs"


def journal(run_id):
    """The journal's result lines (the run's header lines left out)."""
    path = paths.RUNS / run_id / "results.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # the line a kill cut
        if "check" in row:
            rows.append(row)
    return rows


def killed_when(args, run_id, ready, timeout=600):
    """Start `provision ARGS`, SIGKILL it once ``ready(journal rows)`` holds; the rows it had journaled then."""
    proc = subprocess.Popen([sys.executable, "-m", "provision", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready(journal(run_id)):
            assert proc.poll() is None, f"it ended before the kill: {proc.stdout.read()[-3000:]}"
            assert time.monotonic() < deadline, "never reached the point of the kill"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the controller and what it started, as a dead machine would
    finally:
        proc.wait(60)
    return journal(run_id)


def same(result):
    """What an uninterrupted run and a resumed one must agree on: the result and its findings, not timings."""
    return (result["check"], tuple(result["hosts"]), result["outcome"],
            sorted((f.get("host") or "", f["device"], f["metric"], f["ok"]) for f in result["findings"]))


def test_a_burnin_killed_in_its_node_phase_then_in_its_cluster_phase_resumes_to_the_same_report(eight_h100):
    inv = str(eight_h100)
    whole = provision("burnin", "-i", inv, "--limit", LIMIT, "--checks", CHECKS, "--run-id", "resume-whole")
    # every node passes; four nodes of the rack leave some leaf-spine cables without traffic: untested (exit 7)
    assert whole.returncode == 7 and "4 passed of 4 hosts" in whole.stdout, whole.stdout[-3000:]
    run_id = "resume-killed"
    first = killed_when(["burnin", "-i", inv, "--limit", LIMIT, "--checks", CHECKS, "--run-id", run_id], run_id,
                        lambda rows: len(rows) >= 6)
    assert all(r["scope"] == "node" for r in first) and len(first) < 4 * 6, "killed in the node phase"
    second = killed_when(["burnin", "--resume", run_id], run_id,
                         lambda rows: any(r["check"] == "ib_pairs" for r in rows))
    assert second[:len(first)] == first  # the first attempt's results kept as they were
    assert {r.get("attempt") for r in second[len(first):]} == {2}
    done = provision("burnin", "--resume", run_id)
    assert done.returncode == whole.returncode, done.stdout[-3000:]
    assert f"run {run_id}: attempt 3, resumed: {len(second)} results of earlier attempts kept" in done.stdout
    report = json.loads((paths.RUNS / run_id / "report.json").read_text())
    expected = json.loads((paths.RUNS / "resume-whole" / "report.json").read_text())
    assert report["verdicts"] == expected["verdicts"]
    assert [same(r) for r in report["results"]] == [same(r) for r in expected["results"]]
    assert len(report["attempts"]) == 3
    attempts = {r.get("attempt", 1) for r in report["results"]}
    assert attempts == {1, 2, 3}, attempts
    rows = journal(run_id)  # every result journaled once: nothing an attempt gave was run again
    assert len(rows) == len(report["results"])
    assert len({(r["check"], tuple(r["hosts"]), json.dumps(r["raw"]), r["message"]) for r in rows}) == len(rows)
    changed = provision("burnin", "--resume", run_id, "--checks", "xid")
    assert changed.returncode == 2 and "--checks: a resumed run keeps its own inventory and options" in changed.stderr
