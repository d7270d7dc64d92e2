"""Bench: one cheap command on every node of a simulated rack, through our transport, clush and Ansible.

Prints figures, never passes or fails. For each rack size (``--nodes 8,32,64``) one rack is started,
then each way runs ``dmesg`` (the ``xid`` check's one command) on every node, ``--repeat`` times,
median wall time end to end as a user types it:

- ``provision burnin -i RACK --scope node --checks xid``: inventory read, SSH to every node
  (paramiko, host keys checked), the check judged, report.json and JUnit written;
- the engine's own part of it (report.json's ``burnin_wall_s``);
- ``clush -w ADDRS -f N -l root -o '<ssh options>' dmesg`` (Debian's clustershell; OpenSSH per node);
- ``ansible gpu_nodes -i RACK -m ansible.builtin.command -a dmesg -f N`` with the repository's
  ansible.cfg (pipelining on, ControlPersist 120 s, fact gathering off for ad-hoc), a cold first run
  and warm ones (ControlPersist sockets reused).

Goal (issue 13): ours <= 0.9 x clush and >= 4 x faster than Ansible at 64 nodes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def sh(argv: list[str], env: dict | None = None, timeout: float = 1800) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          cwd=ROOT)
    return time.monotonic() - start, proc


def rack_up(folder: Path, nodes: int, base: str) -> dict:
    shutil.copytree(ROOT / "inventory/sim/group_vars", folder / "group_vars")
    _, proc = sh([PY, "-m", "provision", "sim", "up", "--nodes", str(nodes), "--inventory", str(folder),
                  "--address-base", base])
    if proc.returncode != 0:
        sys.exit(f"sim up failed: {proc.stderr[-2000:]}")
    import yaml

    data = yaml.safe_load((folder / "hosts.yml").read_text())["all"]
    return {"vars": data["vars"], "hosts": data["children"]["gpu_nodes"]["hosts"]}


def ours(folder: Path, runs: Path, tag: str) -> tuple[float, float, int]:
    wall, proc = sh([PY, "-m", "provision", "burnin", "-i", str(folder), "--scope", "node", "--checks", "xid",
                     "--run-id", tag], env={"PROVISION_RUNS_DIR": str(runs)})
    report = json.loads((runs / tag / "report.json").read_text())
    errors = sum(1 for r in report["results"] if r["outcome"] == "error")
    return wall, float(report.get("burnin_wall_s") or 0), errors + (proc.returncode not in (0, 1))


def clush(rack: dict, nodes: int) -> tuple[float, int]:
    v = rack["vars"]
    opts = (f"-i {v['ansible_ssh_private_key_file']} -oUserKnownHostsFile={v['provision_known_hosts_file']} "
            "-oStrictHostKeyChecking=yes -oKexAlgorithms=curve25519-sha256 -oBatchMode=yes")
    addrs = ",".join(h["ansible_host"] for h in rack["hosts"].values())
    wall, proc = sh(["clush", "-w", addrs, "-f", str(nodes), "-l", "root", "-o", opts, "-q", "dmesg"])
    return wall, int(proc.returncode != 0)


def ansible(folder: Path, nodes: int) -> tuple[float, int]:
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_GATHERING": "explicit"}
    wall, proc = sh([str(Path(PY).parent / "ansible"), "gpu_nodes", "-i", str(folder), "-m", "ansible.builtin.command",
                     "-a", "dmesg", "-f", str(nodes), "-o"], env=env)
    return wall, int(proc.returncode != 0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="8,32,64", help="rack sizes (default 8,32,64)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per way (default 3; the median is printed)")
    args = p.parse_args()
    if shutil.which("clush") is None:
        sys.exit("clush not found: apt-get install clustershell")
    print(f"# {os.cpu_count()} CPUs; median of {args.repeat} runs; seconds end to end")
    print(f"{'nodes':>5} {'ours':>7} {'engine':>7} {'clush':>7} {'ansible cold':>12} {'ansible warm':>12} "
          f"{'ours/clush':>10} {'ansible/ours':>12} {'errors':>6}")
    for n in (int(x) for x in args.nodes.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-fanout-{n}-"))
        rack = rack_up(work / "rack", n, f"127.0.{60 + n // 8}.10")
        try:
            cold, bad = ansible(work / "rack", n)
            walls: dict[str, list[float]] = {"ours": [], "engine": [], "clush": [], "ansible": []}
            errors = bad
            for i in range(args.repeat):
                wall, engine, bad = ours(work / "rack", work / "runs", f"fanout-{n}-{i}")
                walls["ours"].append(wall)
                walls["engine"].append(engine)
                errors += bad
                wall, bad = clush(rack, n)
                walls["clush"].append(wall)
                errors += bad
                wall, bad = ansible(work / "rack", n)
                walls["ansible"].append(wall)
                errors += bad
            m = {k: statistics.median(v) for k, v in walls.items()}
            print(f"{n:>5} {m['ours']:>7.2f} {m['engine']:>7.2f} {m['clush']:>7.2f} {cold:>12.2f} "
                  f"{m['ansible']:>12.2f} {m['ours'] / m['clush']:>10.2f} {m['ansible'] / m['ours']:>12.2f} "
                  f"{errors:>6}", flush=True)
        finally:
            sh([PY, "-m", "provision", "sim", "down", "--inventory", str(work / "rack")])
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
