"""--shard K/N splits the GPU nodes the same way on every controller; `merge` joins the shards' runs."""
import json
import os
import subprocess
import sys

import pytest

from provision.errors import InventoryError, ProvisionError
from provision.inventory import Host, shard
from provision.results import merge
from provision.results.model import CheckResult, HostRecord, Outcome, RawOutput, Run


def hosts(n, racks=None):
    return [Host(f"gpu{i:03d}", f"127.0.5.{i}", 22, "root", None, None, "h100-sxm5-80g-ndr",
                 vars={"provision_rack": racks[i]} if racks else {}) for i in range(n)]


def test_hash_shards_are_disjoint_cover_everything_and_do_not_move_when_a_node_is_added():
    nodes = hosts(64)
    parts = [shard.select(nodes, f"{k}/4") for k in range(1, 5)]
    names = [h.name for part in parts for h in part]
    assert sorted(names) == sorted(h.name for h in nodes) and len(names) == 64
    assert all(8 <= len(p) <= 24 for p in parts)  # sha256 spreads 64 names roughly evenly
    grown = shard.select(hosts(65), "2/4")
    assert [h.name for h in parts[1]] == [h.name for h in grown if h.name != "gpu064"]


def test_rack_shards_keep_racks_whole_and_balance_them():
    racks = ["r1"] * 8 + ["r2"] * 8 + ["r3"] * 4 + ["r4"] * 4
    nodes = hosts(24, racks)
    one, two = shard.select(nodes, "1/2", "rack"), shard.select(nodes, "2/2", "rack")
    assert {h.vars["provision_rack"] for h in one} == {"r1", "r3"} and len(one) == 12
    assert {h.vars["provision_rack"] for h in two} == {"r2", "r4"} and len(two) == 12
    with pytest.raises(InventoryError, match="host gpu000: field 'provision_rack' is needed with --shard-by rack"):
        shard.select(hosts(2), "1/2", "rack")


@pytest.mark.parametrize("text", ["0/2", "3/2", "1-2", "a/b", ""])
def test_a_bad_shard_is_refused(text):
    with pytest.raises(InventoryError, match="--shard .*: K/N with 1 <= K <= N"):
        shard.parse(text)


def run(run_id, names, raw_path="raw/{h}/xid.txt"):
    results = [CheckResult("xid", (h,), Outcome.PASS, "ok", raw=[RawOutput("", h, raw_path.format(h=h))])
               for h in names]
    return Run(run_id=run_id, inventory="inv", phases=["burnin"], started=f"2026-12-01T0{len(names)}:00:00",
               finished="2026-12-01T09:00:00", hosts={h: HostRecord("h100-sxm5-80g-ndr") for h in names},
               results=results, burnin_wall_s=float(len(names)))


def test_merge_joins_hosts_and_results_and_keeps_the_longest_wall_time():
    merged, moves = merge.merge([("a", run("a", ["n1", "n2"])), ("b", run("b", ["n3"]))], "m")
    assert list(merged.hosts) == ["n1", "n2", "n3"] and [r.host for r in merged.results] == ["n1", "n2", "n3"]
    assert merged.verdicts() == {"n1": "pass", "n2": "pass", "n3": "pass"}
    assert merged.started == "2026-12-01T01:00:00" and merged.burnin_wall_s == 2.0
    assert moves == [{"raw/n1/xid.txt": "raw/n1/xid.txt", "raw/n2/xid.txt": "raw/n2/xid.txt"},
                     {"raw/n3/xid.txt": "raw/n3/xid.txt"}]


def test_a_raw_path_both_shards_wrote_moves_under_its_shard():
    shared = "raw/fabric/x.txt"
    merged, moves = merge.merge([("a", run("a", ["n1"], shared)), ("b", run("b", ["n2"], shared))], "m")
    assert moves[0] == {"raw/fabric/x.txt": "raw/shard-1/fabric/x.txt"}
    assert [r.raw[0].path for r in merged.results] == ["raw/shard-1/fabric/x.txt", "raw/shard-2/fabric/x.txt"]


def test_a_host_in_two_shards_is_refused():
    with pytest.raises(ProvisionError, match="merge: host n1 is in both a and b"):
        merge.merge([("a", run("a", ["n1"])), ("b", run("b", ["n1"]))], "m")


def test_a_moved_path_never_lands_on_a_path_another_shard_wrote():
    merged, moves = merge.merge([("a", run("a", ["n1"], "raw/shared.txt")), ("b", run("b", ["n2"], "raw/shared.txt")),
                                 ("c", run("c", ["n3"], "raw/shard-2/shared.txt"))], "m")
    paths = [r.raw[0].path for r in merged.results]
    assert len(set(paths)) == 3 and "raw/shard-2/shared.txt" in paths  # c's own file keeps its name
    assert moves[1]["raw/shared.txt"] == "raw/shard-2-2/shared.txt"


def _report(folder, data):
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(data))


@pytest.mark.parametrize("change, text", [
    ({"schema_version": None}, "schema_version must be 2 or 3"),
    ({"hosts": {}}, "names no host"),
    ({"phases": [{"a": 1}]}, "report.json breaks"),
    ({"results": [{"check": "xid", "hosts": "n1", "outcome": "pass", "message": "ok"}]}, "report.json breaks"),
])
def test_merge_refuses_a_report_that_is_not_a_shards_run(tmp_path, change, text):
    runs = tmp_path / "runs"
    _report(runs / "good", run("good", ["n1"]).to_dict())
    _report(runs / "bad", {**run("bad", ["n2"]).to_dict(), **change})
    proc = subprocess.run([sys.executable, "-m", "provision", "merge", "good", "bad", "--run-id", "m"],
                          capture_output=True, text=True, env={**os.environ, "PROVISION_RUNS_DIR": str(runs)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and text in proc.stderr, proc.stderr
    assert not (runs / "m").exists()  # refused before any folder was made


def test_an_empty_shard_runs_nothing_and_is_not_an_error(tmp_path):
    """More shards than nodes (a Slurm array larger than the cluster): the shard with no node exits 0 and
    makes no run, before any SSH, install or plan."""
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n        n1:\n"
                                   "          ansible_host: 127.0.0.1\n"
                                   "          provision_profile: h100-sxm5-80g-ndr\n")
    mine = shard.select([Host("n1", "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr")], "1/2")
    empty = "2/2" if mine else "1/2"
    runs = tmp_path / "runs"
    for phase in ("burnin", "run"):
        proc = subprocess.run([sys.executable, "-m", "provision", phase, "-i", str(inv), "--shard", empty,
                               "--run-id", f"e-{phase}"], capture_output=True, text=True,
                              env={**os.environ, "PROVISION_RUNS_DIR": str(runs)}, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "falls in this shard; nothing to run" in proc.stdout + proc.stderr
        assert not (runs / f"e-{phase}").exists()
