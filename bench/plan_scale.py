"""Bench: the work before any node is touched, at cluster size: ``provision plan -i`` and a run's start-up.

Prints figures, never passes or fails. Two synthetic inventories are written to a temp folder:
- ``identical``: ``--hosts`` hosts (default 1,250) in one group, one profile, one OS target;
- ``own-vars``: ``--own`` hosts (default 100), each with host variables of its own: a
  ``provision_reference_overrides`` value and an ``nvidia_driver_branch`` that differ per host.
Addresses are unused 127.x loopback ones and nothing connects to them: ``provision plan`` touches
no node, and the run's start-up is timed in this process up to the point before its first node
(``select.gpu_inventory``: the inventory read once, profiles checked; ``select.selected``: the plan
gate an install passes first; ``select.check_set``: the ``quick`` check set of the hosts' profiles).
``provision plan -i`` is timed as the user types it (a new Python process, imports included).
Each figure is wall seconds and CPU seconds (user + system): on a shared machine the CPU seconds
are what the work costs, the wall seconds what the other processes left of it.
Goal (issue 20): plan <= 10 s and the run's start-up <= 15 s at 1,250 hosts.

    .venv/bin/python bench/plan_scale.py [--hosts 1250] [--own 100] [--profile] [--skip-plan-cli]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from provision.commands._job import select  # noqa: E402
from provision import inventory as inv  # noqa: E402

PROFILE = "h100-sxm5-80g-ndr"
TARGET = "debian12"
ADDRESS_BASE = (127, 77)  # 127.77.0.0/16: loopback addresses no rack of the tests takes (nothing listens)


def address(index: int) -> str:
    return f"{ADDRESS_BASE[0]}.{ADDRESS_BASE[1]}.{index // 250}.{index % 250 + 1}"


def identical(folder: Path, hosts: int) -> Path:
    """``hosts`` hosts in one group with the group's variables only."""
    folder.mkdir(parents=True)
    lines = ["---", "all:", "  children:", "    gpu:", "      vars:", f"        provision_profile: {PROFILE}",
             f"        provision_os: {TARGET}", "      hosts:"]
    lines += [f"        node{i:04d}: {{ansible_host: {address(i)}}}" for i in range(hosts)]
    (folder / "hosts.yml").write_text("\n".join(lines) + "\n")
    return folder


def own_vars(folder: Path, hosts: int) -> Path:
    """``hosts`` hosts in one group, each with its own reference override and driver branch variable."""
    folder.mkdir(parents=True)
    lines = ["---", "all:", "  children:", "    gpu:", "      vars:", f"        provision_profile: {PROFILE}",
             f"        provision_os: {TARGET}", "      hosts:"]
    for i in range(hosts):
        lines += [f"        node{i:04d}:", f"          ansible_host: {address(i)}",
                  f"          nvidia_driver_branch: \"{550 + i % 3}\"",
                  "          provision_reference_overrides:",
                  f"            ib_write_bw: {{bw_avg_Gbps: {{value: {380 - i % 7}}}}}"]
    (folder / "hosts.yml").write_text("\n".join(lines) + "\n")
    return folder


def plan_cli(folder: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of ``provision plan -i folder`` in a new process."""
    started, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "provision", "plan", "-i", str(folder)], capture_output=True,
                          text=True, cwd=ROOT)
    spent, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return spent, cpu_s, proc.returncode


def startup(folder: Path) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds per step of a ``provision run`` start-up (install and burn-in, ``--check-set quick``)."""
    quiet = lambda *_a, **_k: None  # noqa: E731
    spent: dict[str, tuple[float, float]] = {}
    clock = [time.monotonic(), time.process_time()]

    def lap(name: str) -> None:
        now = [time.monotonic(), time.process_time()]
        spent[name] = (now[0] - clock[0], now[1] - clock[1])
        clock[:] = now

    inventory = select.gpu_inventory([str(folder)], None, inv.Vault(), quiet)
    lap("inventory (read, profiles checked)")
    hosts = select.selected(inventory, ("install", "burnin"), None, None, inv.Vault(), None, True, quiet)
    lap("plan gate")
    select.check_set("quick", hosts, None)
    lap("check set")
    return spent


def report(label: str, folder: Path, hosts: int, args: argparse.Namespace) -> None:
    print(f"## {label}: {hosts} hosts ({folder})")
    if not args.skip_plan_cli:
        wall_s, cpu_s, rc = plan_cli(folder)
        print(f"provision plan -i (new process)            wall {wall_s:>7.2f} s  CPU {cpu_s:>7.2f} s  exit {rc}")
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    steps = startup(folder)
    if profiler:
        profiler.disable()
    for name, (wall_s, cpu_s) in steps.items():
        print(f"run start-up: {name:<29} wall {wall_s:>7.2f} s  CPU {cpu_s:>7.2f} s")
    print(f"run start-up: {'total (in process)':<29} wall {sum(w for w, _ in steps.values()):>7.2f} s  "
          f"CPU {sum(c for _, c in steps.values()):>7.2f} s")
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
        print(text.getvalue())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=1250, help="hosts of the identical inventory")
    p.add_argument("--own", type=int, default=100, help="hosts of the inventory with per-host variables")
    p.add_argument("--profile", action="store_true", help="print cProfile's top entries of the start-up")
    p.add_argument("--skip-plan-cli", action="store_true", help="time only the in-process start-up")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-plan-scale-"))
    if args.hosts:
        report("identical", identical(work / "identical", args.hosts), args.hosts, args)
    if args.own:
        report("own host variables", own_vars(work / "own", args.own), args.own, args)


if __name__ == "__main__":
    main()
