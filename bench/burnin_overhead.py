"""Bench: the burn-in's orchestration overhead, with every simulated tool taking a fixed time T.

Prints figures, never passes or fails. For each rack size (``--nodes 8,32,64``) a rack is started (no
install: the checks that need none run, xid (dmesg), pcie_link (lspci, two steps) and storage (the bond's
status and fio)), the file ``/etc/provision-sim/bench-tool-time-s`` in every node makes each simulated tool
take T seconds (provision/sim/tools/simhw.py ``hang_if_faulted``), and
``provision burnin -i RACK --scope node --checks xid,pcie_link,storage`` runs. A node's test time is then
4 T (dmesg, lspci twice, fio, one after another on the node); the ratio is the burn-in's wall time over it,
for the engine (report.json's burnin_wall_s) and end to end (as the user types it). Errors are results
in error: with healthy nodes every one is a false error. Goal (issue 13): <= 1.15 at 64 nodes, zero errors.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PY = sys.executable
CHECKS = "xid,pcie_link,storage"
TOOL_CALLS = 4  # dmesg; lspci for the GPUs, then the HCAs; fio


def provision(*args: str, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    proc = subprocess.run([PY, "-m", "provision", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=3600)
    return time.monotonic() - start, proc


def main() -> None:
    from provision.sim import rack

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="8,32,64")
    p.add_argument("--tool-time", type=float, default=5.0, help="T, seconds each simulated tool takes (default 5)")
    args = p.parse_args()
    t = args.tool_time
    print(f"# {os.cpu_count()} CPUs; T = {t:g} s per tool call, {TOOL_CALLS} calls per node: "
          f"test time {TOOL_CALLS * t:g} s")
    print(f"{'nodes':>5} {'engine s':>8} {'end-to-end s':>12} {'engine/test':>11} {'e2e/test':>8} {'errors':>6}")
    for n in (int(x) for x in args.nodes.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-overhead-{n}-"))
        shutil.copytree(ROOT / "inventory/sim/group_vars", work / "rack" / "group_vars")
        _, up = provision("sim", "up", "--nodes", str(n), "--inventory", str(work / "rack"), "--address-base",
                          f"127.0.{90 + n // 8}.10")
        if up.returncode != 0:
            sys.exit(up.stderr[-2000:])
        try:
            for node in rack.load_nodes(work / "rack"):
                (node.root() / "etc/provision-sim/bench-tool-time-s").write_text(f"{t}\n")
            wall, proc = provision("burnin", "-i", str(work / "rack"), "--scope", "node", "--checks", CHECKS,
                                   "--run-id", f"overhead-{n}", env={"PROVISION_RUNS_DIR": str(work / "runs")})
            report = json.loads((work / "runs" / f"overhead-{n}" / "report.json").read_text())
            engine = float(report["burnin_wall_s"])
            errors = sum(r["outcome"] == "error" for r in report["results"])
            test = TOOL_CALLS * t
            print(f"{n:>5} {engine:>8.1f} {wall:>12.1f} {engine / test:>11.2f} {wall / test:>8.2f} {errors:>6}",
                  flush=True)
            if errors:
                for r in report["results"]:
                    if r["outcome"] == "error":
                        print(f"#   {r['hosts'][0]} {r['check']}: {r['message'][:160]}")
        finally:
            provision("sim", "down", "--inventory", str(work / "rack"))
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
