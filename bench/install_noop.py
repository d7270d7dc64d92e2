"""Bench: a second install where nothing changes, against one ansible-playbook run of a 1-task play.

Prints figures, never passes or fails. For each rack size (``--nodes 16,64``) a rack is started and
installed once (``provision install``, timed: the first install), then:

- ``provision install -i RACK`` again: every role runs and reports ok/unchanged (the no-op install),
  end to end as the user types it, with the plan gate and the report;
- ``ansible-playbook -i RACK noop.yml``: one play, ``gather_facts: false``, one ``ansible.builtin.command:
  "true"`` task, the same ansible.cfg and forks.

It prints both, their ratio, each role's share of the no-op install (ansible-runner's per-task events:
the sum over hosts of each task's duration, by role) and the Ansible settings in force.
"""
from __future__ import annotations

import argparse
import configparser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
NOOP = "---\n- name: One task\n  hosts: gpu_nodes\n  gather_facts: false\n  tasks:\n    - name: Nothing\n" \
       "      ansible.builtin.command: \"true\"\n      changed_when: false\n"


def timed(argv: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})},
                          timeout=7200)
    return time.monotonic() - start, proc


def task_seconds(run_dir: Path) -> dict[tuple[str, str], float]:
    """Seconds per (role, task) of an install (sum over hosts of each task's duration), from ansible-runner's
    per-host task events (runner_on_ok/skipped/failed; a loop's items are inside their task's duration)."""
    spent: dict[tuple[str, str], float] = defaultdict(float)
    for event in sorted((run_dir / "ansible").rglob("job_events/*.json")):
        whole = json.loads(event.read_text())
        data = whole.get("event_data") or {}
        if whole.get("event", "").startswith("runner_on_") and "duration" in data:
            spent[(data.get("role") or "-", data.get("task") or "")] += float(data["duration"] or 0)
    return dict(sorted(spent.items(), key=lambda kv: -kv[1]))


def host_seconds(run_dir: Path) -> dict[str, float]:
    """Seconds of task time per host of an install (the same events as ``task_seconds``)."""
    spent: dict[str, float] = defaultdict(float)
    for event in sorted((run_dir / "ansible").rglob("job_events/*.json")):
        whole = json.loads(event.read_text())
        data = whole.get("event_data") or {}
        if whole.get("event", "").startswith("runner_on_") and "duration" in data:
            spent[data.get("host") or "-"] += float(data["duration"] or 0)
    return spent


def role_seconds(tasks: dict[tuple[str, str], float]) -> dict[str, float]:
    """The task seconds summed per role."""
    spent: dict[str, float] = defaultdict(float)
    for (role, _), seconds in tasks.items():
        spent[role] += seconds
    return dict(sorted(spent.items(), key=lambda kv: -kv[1]))


def settings() -> str:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    d, s = cfg["defaults"], cfg["ssh_connection"]
    return (f"forks={d.get('forks')}, strategy={d.get('strategy', 'linear')}, pipelining={s.get('pipelining')}, "
            f"gathering={d.get('gathering')}, gather_subset={d.get('gather_subset', 'all')}, "
            f"fact_caching={d.get('fact_caching')}, timeout={d.get('timeout', 10)}, ssh_args='{s.get('ssh_args')}'")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="16,64")
    args = p.parse_args()
    print(f"# {os.cpu_count()} CPUs; Ansible settings (ansible.cfg): {settings()}")
    for n in (int(x) for x in args.nodes.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-noop-{n}-"))
        inv, runs = work / "rack", work / "runs"
        shutil.copytree(ROOT / "inventory/sim/group_vars", inv / "group_vars")
        env = {"PROVISION_RUNS_DIR": str(runs)}
        _, up = timed([PY, "-m", "provision", "sim", "up", "--nodes", str(n), "--inventory", str(inv),
                       "--address-base", f"127.0.{120 + n // 8}.10"])
        if up.returncode != 0:
            sys.exit(up.stderr[-2000:])
        try:
            first, proc = timed([PY, "-m", "provision", "install", "-i", str(inv), "--run-id", "first"], env)
            if proc.returncode != 0:
                print(f"# first install exit {proc.returncode}: {proc.stdout[-1500:]}")
            again, proc = timed([PY, "-m", "provision", "install", "-i", str(inv), "--run-id", "again"], env)
            changed = json.loads((runs / "again" / "report.json").read_text())["install"]
            total_changed = sum(h.get("changed", 0) for h in changed.values())
            (work / "noop.yml").write_text(NOOP)
            play, pproc = timed([str(Path(PY).parent / "ansible-playbook"), "-i", str(inv), str(work / "noop.yml")],
                                {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
            print(f"nodes {n}: first install {first:.0f} s; no-op install {again:.1f} s (exit {proc.returncode}, "
                  f"{total_changed} changed); 1-task play {play:.1f} s (exit {pproc.returncode}); "
                  f"ratio {again / play:.1f}", flush=True)
            tasks = task_seconds(runs / "again")
            shares = role_seconds(tasks)
            whole = sum(shares.values()) or 1.0
            print(f"  no-op install: {whole:.0f} task seconds summed over hosts, {len(tasks)} tasks; by role: " +
                  ", ".join(f"{r} {s:.0f} s ({s / whole:.0%})" for r, s in shares.items()))
            per_host = sorted(host_seconds(runs / "again").values())
            print(f"  per host: task seconds min {per_host[0]:.0f}, median {per_host[len(per_host) // 2]:.0f}, "
                  f"max {per_host[-1]:.0f}")
            print("  costliest tasks: " + "; ".join(f"{r}: {t} {s:.0f} s" for (r, t), s in list(tasks.items())[:8]),
                  flush=True)
        finally:
            timed([PY, "-m", "provision", "sim", "down", "--inventory", str(inv)])
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
