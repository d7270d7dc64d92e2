"""`provision burnin --local` inside the simulated nodes, as one Slurm task per node runs it, and
`provision merge` of the four nodes' runs: equal to the SSH burn-in of the same four nodes (hosts,
verdicts, every result's outcome and findings, JUnit testcases; fio's noisy figures compared by
outcome only, as in test_shard_merge.py).

Each node gets what a site installs on its nodes: the package and its dependencies (copied from this
virtualenv into the node's own root, through its PID 1's /proc/PID/root; the nodes run the same
Debian 12 Python 3.11) and the rack's inventory. `--local` then runs inside the node as a process of
its own (started over SSH, as srun would start it), with the node's own tools and files only.
Faults as in test_shard_merge.py: node02's GPU 2 link downtrained to x8, node04's GPU 5 off the bus."""
import importlib.metadata
import os
import re
import shutil
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from provision import inventory as inv
from provision import paths
from provision.engine.ssh import SshTransport
from provision.sim import rack
from tests.integration.conftest import own_rack, provision
from tests.integration.test_shard_merge import comparable, junit_cases, report

pytestmark = pytest.mark.integration
CHECKS = "xid,pcie_link,storage"
SITE = "opt/provision"   # the package and its libraries in each node
RUNS = "var/tmp/runs"    # the node's runs folder (on a cluster: a shared PROVISION_RUNS_DIR)


def requirements(name: str, seen: set[str]) -> set[str]:
    """``name``'s distribution and every one it needs (no extras), as importlib.metadata names them."""
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return seen
    seen.add(key)
    for line in importlib.metadata.requires(name) or ():
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            requirements(req.name, seen)
    return seen


def install_into(root: Path, inventory_dir: Path) -> None:
    """The package's source, its dependencies' files and the rack's inventory under ``root``/SITE."""
    site = root / SITE
    shutil.copytree(paths.ROOT / "provision", site / "src/provision",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(paths.ROOT / "ansible.cfg", site / "src/ansible.cfg")
    for name in sorted(requirements("provision", set()) - {"provision"}):
        for file in importlib.metadata.distribution(name).files or ():
            source = Path(str(file.locate()))
            if source.is_file() and "__pycache__" not in file.parts and not str(file).startswith(".."):
                (site / "lib" / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, site / "lib" / file)
    shutil.copytree(inventory_dir, site / "inventory")


def test_four_local_runs_merge_into_the_ssh_burnin(tmp_path):
    tag = str(os.getpid() % 10000)
    with own_rack(tmp_path / "rack", nodes=4) as inv_dir:
        for node, kind, device, value in (("node02", "pcie_downtrain", "2", "x8"), ("node04", "xid79", "5", None)):
            args = ["sim", "fault", node, kind, "--device", device, "--inventory", str(inv_dir)]
            assert provision(*args, *(["--value", value] if value else [])).returncode == 0
        ssh = provision("burnin", "-i", str(inv_dir), "--scope", "node", "--checks", CHECKS, "--run-id", f"ssh-{tag}")
        assert ssh.returncode == 1, ssh.stdout[-2000:]
        hosts = {h.name: h for h in inv.load(inv.resolve(str(inv_dir))).gpu_hosts}
        local_runs = []
        for node in rack.load_nodes(inv_dir):
            install_into(node.root(), inv_dir)
            argv = ["env", f"PYTHONPATH=/{SITE}/src:/{SITE}/lib", f"PROVISION_RUNS_DIR=/{RUNS}",
                    "PROVISION_VALIDATE_REPORTS=1", "python3", "-m", "provision", "burnin", "--local",
                    "-i", f"/{SITE}/inventory", "--checks", CHECKS, "--run-id", f"local-{tag}-{node.name}"]
            conn = SshTransport().connect(hosts[node.name])  # as srun starts a task: a process on the node
            try:
                done = conn.run(argv, 600)
            finally:
                conn.close()
            assert done.rc in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
            assert f"burnin --local: {node.name} from /{SITE}/inventory" in done.stdout, done.stdout[-2000:]
            local = node.root() / RUNS / f"local-{tag}-{node.name}"
            assert (local / "report.json").is_file() and (local / "junit" / f"{node.name}.xml").is_file()
            assert (local / "raw" / node.name / "xid.txt").is_file()  # the same layout as an SSH run's
            shutil.copytree(local, paths.RUNS / local.name)
            local_runs.append(local.name)
        merged = provision("merge", *local_runs, "--run-id", f"merged-{tag}")
        assert merged.returncode == 1, merged.stdout + merged.stderr

    a, m = report(f"ssh-{tag}"), report(f"merged-{tag}")
    assert sorted(m["hosts"]) == sorted(a["hosts"]) == ["node01", "node02", "node03", "node04"]
    assert m["verdicts"] == a["verdicts"]
    assert a["verdicts"]["node02"] == a["verdicts"]["node04"] == "fail" and a["verdicts"]["node01"] == "pass"
    assert comparable(m) == comparable(a)
    assert junit_cases(f"merged-{tag}") == junit_cases(f"ssh-{tag}")
    for r in m["results"]:  # every raw output the merged report names was copied into it
        for raw in r["raw"]:
            assert (paths.RUNS / f"merged-{tag}" / raw["path"]).is_file()
