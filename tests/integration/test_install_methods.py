"""``provision install --method push|local|image`` on one simulated rack of five nodes, two distributions (issue 39).

node01 is installed by push, node02 by local (first with a role that fails on it alone, then ``--retry-failed``),
node03-node05 by image: node03 and node04 are Debian 12 (one image, built on one of them, unpacked on the other),
node05 Rocky 9 (a second image): the three installs run at once. Then every node installed by local and image holds
what the push node holds, file by file under the roles' paths, package by package, with the same holds and units
(``node_state``); the five pass the node burn-in; and a second install of each changes nothing (local run on the push
node included: the two methods agree)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from provision import paths
from provision.sim import rack
from tests.integration import node_state
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration


def _start(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "provision", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})


def _install(run_id: str, env: dict) -> dict:
    return json.loads((paths.RUNS / run_id / "report.json").read_text())["install"]


def test_local_and_image_nodes_hold_what_push_installs_and_pass_the_burnin(tmp_path):
    env = {"PROVISION_CACHE_DIR": str(tmp_path / "cache")}
    with own_rack(tmp_path / "rack", nodes=5, os_names="debian12,debian12,debian12,debian12,rocky9") as folder:
        inv = str(folder)
        (folder / "host_vars").mkdir()
        broken = folder / "host_vars/node02.yml"
        broken.write_text("nvidia_repo_doca_version: not a release\n")  # nvidia_repo's assert refuses it
        tag = os.getpid()
        runs = {"push": f"methods-push-{tag}", "local": f"methods-local-{tag}", "image": f"methods-image-{tag}"}
        procs = {"push": _start("install", "-i", inv, "--limit", "node01", "--run-id", runs["push"], env=env),
                 "local": _start("install", "-i", inv, "--limit", "node02", "--method", "local",
                                 "--run-id", runs["local"], env=env),
                 "image": _start("install", "-i", inv, "--limit", "node03,node04,node05", "--method", "image",
                                 "--run-id", runs["image"], env=env)}
        out = {k: p.communicate(timeout=1800)[0] for k, p in procs.items()}
        assert procs["push"].returncode == 0, out["push"][-3000:]
        assert procs["image"].returncode == 0, out["image"][-3000:]
        # a role failing on a node that installs itself is named with its role and task, as push names it
        assert procs["local"].returncode == 1, out["local"][-3000:]
        failed = _install(runs["local"], env)["node02"]
        assert failed["status"] == "failed"
        assert failed["roles"]["nvidia_repo"]["failed"][0]["task"] == "Check the repository names and URLs"
        assert "nvidia_repo" in out["local"] and "Check the repository names and URLs" in out["local"]
        # two distributions, two images: each built once on one node, the other Debian node given the built one
        assert "2 image(s) for 3 hosts" in out["image"], out["image"][-3000:]
        image = _install(runs["image"], env)
        builders = [h for h in ("node03", "node04") if "image" not in image[h]["roles"]]
        [rolled] = [h for h in ("node03", "node04") if h not in builders]
        assert image[rolled]["roles"]["image"]["changed"] == 1 and image[rolled]["status"] == "ok"
        assert image["node05"]["status"] == "ok" and "image" not in image["node05"]["roles"]  # Rocky's builder

        broken.unlink()
        retry = provision("install", "-i", inv, "--method", "local", "--retry-failed", runs["local"],
                          "--run-id", f"methods-retry-{tag}", env=env)
        assert retry.returncode == 0, retry.stdout[-3000:]
        assert _install(f"methods-retry-{tag}", env)["node02"]["changed"] > 0

        nodes = {n.name: n for n in rack.load_nodes(folder)}
        pushed = node_state.read(nodes["node01"])
        assert len(pushed["files"]) > 10000 and any(p.startswith("nvidia") for p in pushed["holds"])
        assert pushed["units"]["nvidia-persistenced.service"] == ["enabled", "active"]
        for name in ("node02", rolled, builders[0]):
            assert node_state.differences(pushed, node_state.read(nodes[name])) == [], name

        burnin = provision("burnin", "-i", inv, "--scope", "node", "--run-id", f"methods-burnin-{tag}", env=env)
        assert burnin.returncode == 0, burnin.stdout[-3000:]
        report = json.loads((paths.RUNS / f"methods-burnin-{tag}" / "report.json").read_text())
        assert sorted(report["hosts"]) == [f"node0{i}" for i in range(1, 6)]

        again = {"image": provision("install", "-i", inv, "--limit", "node03,node04,node05", "--method", "image",
                                    "--run-id", f"methods-image-again-{tag}", env=env),
                 "local": provision("install", "-i", inv, "--limit", "node01,node02", "--method", "local",
                                    "--run-id", f"methods-local-again-{tag}", env=env)}
        for method, proc in again.items():
            assert proc.returncode == 0, proc.stdout[-3000:]
            record = _install(f"methods-{method}-again-{tag}", env)
            assert {h: r["changed"] for h, r in record.items()} == {h: 0 for h in record}, method
