"""`--shard K/N` and `provision merge` on a simulated rack of 8 nodes: the merged report of two shards
equals the unsharded run's (hosts, verdicts, every result's outcome and findings; measured values too,
except fio's noisy storage figures; JUnit testcases). Checks that need no install: xid (dmesg, part of
the simulated hardware), pcie_link (lspci), storage (the bond and fio). Two faults make it judge something:
node03's GPU 2 link downtrained to x8, node06's GPU 5 fallen off the bus (Xid 79)."""
import json
import xml.etree.ElementTree as ET

import pytest

from provision import paths
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
CHECKS = "xid,pcie_link,storage"
NOISY = {"storage"}  # fio's bandwidth and latency carry the simulator's noise: outcomes compared, not values


def report(run_id):
    return json.loads((paths.RUNS / run_id / "report.json").read_text())


def comparable(rep):
    rows = []
    for r in rep["results"]:
        findings = sorted((f["device"], f["metric"], f["ok"], None if r["check"] in NOISY else f["value"])
                          for f in r["findings"])
        rows.append((tuple(r["hosts"]), r["check"], r["outcome"], tuple(findings)))
    return sorted(rows, key=repr)


def junit_cases(run_id):
    tree = ET.parse(paths.RUNS / run_id / "junit" / "all.xml")
    return sorted((case.get("classname"), case.get("name"), case.find("failure") is not None,
                   case.find("error") is not None) for case in tree.iter("testcase"))


def test_two_shards_merge_into_the_unsharded_report(tmp_path):
    with own_rack(tmp_path / "rack", nodes=8) as inv:
        for node, kind, device, value in (("node03", "pcie_downtrain", "2", "x8"), ("node06", "xid79", "5", None)):
            args = ["sim", "fault", node, kind, "--device", device, "--inventory", str(inv)]
            assert provision(*args, *(["--value", value] if value else [])).returncode == 0
        tag = str(id(inv) % 10000)
        whole = provision("burnin", "-i", str(inv), "--scope", "node", "--checks", CHECKS, "--run-id", f"whole-{tag}")
        assert whole.returncode == 1, whole.stdout[-2000:]
        shards = []
        for k in (1, 2):
            proc = provision("burnin", "-i", str(inv), "--scope", "node", "--checks", CHECKS, "--shard", f"{k}/2",
                             "--run-id", f"shard{k}-{tag}")
            assert proc.returncode in (0, 1) and f"shard {k}/2 by hash: " in proc.stdout, proc.stdout[-2000:]
            shards.append(report(f"shard{k}-{tag}"))
        merged = provision("merge", f"shard1-{tag}", f"shard2-{tag}", "--run-id", f"merged-{tag}")
        assert merged.returncode == 1, merged.stdout + merged.stderr

    a, m = report(f"whole-{tag}"), report(f"merged-{tag}")
    assert not set(shards[0]["hosts"]) & set(shards[1]["hosts"]) and all(s["hosts"] for s in shards)
    assert sorted(m["hosts"]) == sorted(a["hosts"]) == [f"node{i:02d}" for i in range(1, 9)]
    assert m["verdicts"] == a["verdicts"] and a["verdicts"]["node03"] == a["verdicts"]["node06"] == "fail"
    assert comparable(m) == comparable(a)
    assert junit_cases(f"merged-{tag}") == junit_cases(f"whole-{tag}")
    drained = (paths.RUNS / f"merged-{tag}" / "drain.txt").read_text().split()
    assert "node03" in drained and "node06" in drained
    for r in m["results"]:  # every raw output the merged report names was copied into it
        for raw in r["raw"]:
            assert (paths.RUNS / f"merged-{tag}" / raw["path"]).is_file()
