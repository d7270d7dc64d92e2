"""What ``provision health`` costs on a node: wall time, CPU and memory per call, on a healthy simulated H100 node and
with each fault a health check is for, as slurmd would run it (the ``health_check`` role's wrapper,
/usr/local/sbin/provision-health, inside the node).

A rack of one node of its own (``provision sim up``), installed by ``provision install`` with the health_check role
on (``health_check_enabled: true`` in the rack's inventory), so the health check runs from the virtualenv the role
made. Per case: the fault injected (``provision sim fault``), ``CALLS`` calls, the fault healed. Printed per case:
the exit status, the median wall seconds of a call seen from here (process start to exit, Python's start included),
the call's own CPU seconds (user + system of the health check's process, from its last.json: ``cpu_s``), its tools'
CPU seconds (``tools_cpu_s``: the simulated nvidia-smi, lspci, ibstat... are Python scripts here; NVIDIA's are
C programs, whose own cost on a real node this does not measure), and its peak memory (``max_rss_kB``).

    .venv/bin/python bench/health.py [--calls 5] [--keep]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provision import paths  # noqa: E402
from provision.sim import rack  # noqa: E402

CASES = [  # (name, fault kind, device, value)
    ("healthy", None, None, None),
    ("xid79", "xid79", "3", None),
    ("dbe_remap", "dbe_remap", "2", None),
    ("gpu_missing", "gpu_missing", "5", None),
    ("ib_port_down", "ib_port_down", "mlx5_1", None),
    ("pcie_downtrain", "pcie_downtrain", "4", "x8"),
    ("nvlink_down", "nvlink_down", "1", None),
    ("hung nvidia-smi", "hung_tool", "nvidia-smi", None),
]
WRAPPER = "/usr/local/sbin/provision-health"


def provision(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, check=False)


def call(node: rack.SimNode) -> tuple[int, float, dict]:
    """One health check in ``node`` as slurmd runs it: (exit status, wall seconds seen from here, its last.json)."""
    argv = ["nsenter", "--target", str(node.pid), "--mount", "--uts", "--ipc", "--pid", "--cgroup", "--", WRAPPER]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    wall = time.monotonic() - started
    last = json.loads((node.root() / "var/lib/provision/health/last.json").read_text())
    return done.returncode, wall, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the rack up")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-health-"))
    shutil.copytree(paths.ROOT / "inventory/sim/group_vars", folder / "group_vars")
    # the site's choice: the health check on its nodes (a group's variables, as tests/integration/conftest.py sets them)
    (folder / "group_vars/gpu_nodes.yml").write_text("health_check_enabled: true\nhealth_check_slurm: true\n")
    up = provision("sim", "up", "--nodes", "1", "--inventory", str(folder), "--address-base", "127.0.88.10")
    if up.returncode != 0:
        sys.exit(up.stderr)
    try:
        began = time.monotonic()
        install = provision("install", "-i", str(folder), "--run-id", f"bench-health-{int(time.time())}")
        if install.returncode != 0:
            sys.exit(install.stdout[-3000:] + install.stderr[-2000:])
        print(f"rack of 1 node installed (the stack and the health check) in {time.monotonic() - began:.0f} s")
        node = rack.load_nodes(folder)[0]
        print(f"{'case':<16} {'exit':>4} {'wall_s':>7} {'cpu_s':>6} {'tools_cpu_s':>11} {'max_rss_MB':>10}  line")
        for name, kind, device, value in CASES:
            if kind:
                more = ["--device", device] + (["--value", value] if value else [])
                fault = provision("sim", "fault", node.name, kind, *more, "--inventory", str(folder))
                if fault.returncode != 0:
                    sys.exit(fault.stderr)
            rows = [call(node) for _ in range(args.calls)]
            statuses = sorted({r[0] for r in rows})
            last = rows[-1][2]
            print(f"{name:<16} {','.join(map(str, statuses)):>4} {statistics.median(r[1] for r in rows):7.2f} "
                  f"{statistics.median(r[2]['cpu_s'] for r in rows):6.2f} "
                  f"{statistics.median(r[2]['tools_cpu_s'] for r in rows):11.2f} "
                  f"{max(r[2]['max_rss_kB'] for r in rows) / 1024:10.1f}  {last['line'][:90]}")
            if not kind:
                print("  per check (s): " + ", ".join(f"{c['check']} {c['duration_s']:.2f}" for c in last["checks"]))
            if kind:
                provision("sim", "heal", "all", "--inventory", str(folder))
                call(node)  # the Xid window: a passing call after the heal (a healed node's kernel log is fresh)
    finally:
        if not args.keep:
            provision("sim", "down", "--inventory", str(folder))
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"rack left up: {folder}")


if __name__ == "__main__":
    main()
