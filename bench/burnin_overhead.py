"""Bench: the burn-in's orchestration overhead, with every simulated tool taking a fixed time T.

Prints figures, never passes or fails. For each rack size (``--nodes 8,32,64``) a rack is started (no
install: the checks that need none run, xid (dmesg), pcie_link (lspci, two steps) and storage (the bond's
status and fio)), the file ``/etc/provision-sim/bench-tool-time-s`` in every node makes each simulated tool
take T seconds (provision/sim/tools/simhw.py ``hang_if_faulted``), and
``provision burnin -i RACK --scope node --checks xid,pcie_link,storage`` runs. A node's test time is then
4 T (dmesg, lspci twice, fio, one after another on the node); the ratio is the burn-in's wall time over it,
for the engine (report.json's burnin_wall_s) and end to end (as the user types it). Errors are results
in error: with healthy nodes every one is a false error. Goal (issue 20): <= 1.15 at the largest size, zero
errors.

Also per size: the controller's cost, from ``wait4(2)``'s rusage of the ``provision burnin`` process (this
bench's child; it starts no processes of its own): CPU seconds (user + system) per node and peak RSS; the
rack's memory per node, measured once every node's systemd says its boot is over (``systemctl
is-system-running --wait`` in the node: running or degraded): the node's cgroup charge (``memory.current``, or
cgroup v1's ``memory.usage_in_bytes`` where the memory controller is on v1: processes, page cache, kernel memory;
``provision.sim.cgroups.memory_bytes``), mean and largest, and the PSS of its processes (systemd, journald, dbus,
logind, sshd, units; ``/proc/PID/smaps_rollup``), user space only; the machine's memory in use
(/proc/meminfo MemTotal - MemAvailable) after the boot less before ``sim up``, per node (what the rack costs the
machine, the overlay's kernel objects included; other work on the machine moves it); ``sim up``'s wall time;
and the load average (the machine may be shared) before and after.
Usage: ``bench/burnin_overhead.py 64 256 1024 [--tool-time T] [--forks N]``.
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


def measured(args: list[str], env: dict, log: Path) -> tuple[float, int, float, float]:
    """Run ``provision ARGS`` (output to ``log``): wall s, exit status, CPU s (user + system) and peak
    RSS in MiB of that process, from wait4(2)'s rusage (Linux: ru_maxrss in KiB)."""
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen([PY, "-m", "provision", *args], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - start, proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def node_pss_MiB(pid: int) -> float:
    """PSS of a node's processes (its PID 1 and every descendant), MiB; 0 for a node gone."""
    total_kB, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kB += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total_kB / 1024


def settle(pid: int, timeout_s: float = 600.0) -> str:
    """Wait until the node whose PID 1 is ``pid`` has finished booting: ``systemctl is-system-running --wait`` in
    its namespaces (nsenter); its answer (running, degraded, ...) or 'timeout'."""
    try:
        proc = subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "-i", "-p", "systemctl", "is-system-running",
                               "--wait"], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return "timeout"
    return proc.stdout.strip() or proc.stderr.strip()


def in_use_MiB() -> float:
    """This machine's memory in use, MiB: MemTotal - MemAvailable (/proc/meminfo, proc(5))."""
    rows = (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    info = {key: int(value.split()[0]) for key, value in rows}
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=int, help="rack sizes (default 8 32 64)")
    p.add_argument("--nodes", help="rack sizes as a comma list (the older form)")
    p.add_argument("--tool-time", type=float, default=5.0, help="T, seconds each simulated tool takes (default 5)")
    p.add_argument("--forks", type=int, help="passed to provision burnin (default: every host at once)")
    args = p.parse_args()
    sizes = args.sizes or [int(x) for x in (args.nodes or "8,32,64").split(",")]
    t = args.tool_time
    print(f"# {os.cpu_count()} CPUs; T = {t:g} s per tool call, {TOOL_CALLS} calls per node: "
          f"test time {TOOL_CALLS * t:g} s")
    print(f"{'nodes':>5} {'up s':>6} {'engine s':>8} {'e2e s':>7} {'engine/test':>11} {'e2e/test':>8} {'errors':>6} "
          f"{'CPU s/node':>10} {'peak RSS MiB':>12} {'node PSS MiB':>12} {'node cgroup MiB':>15} {'max':>6} "
          f"{'machine MiB/node':>16}  "
          "load before -> after")
    for n in sizes:
        try:
            one(n, t, args.forks)
        except RuntimeError as exc:
            print(f"# {n} nodes: stopped: {exc}", flush=True)
            break


def one(n: int, t: float, forks: int | None) -> None:
    """Start a rack of ``n`` nodes, burn it in once, print the figures' row, stop the rack."""
    from provision.sim import rack

    work = Path(tempfile.mkdtemp(prefix=f"bench-overhead-{n}-"))
    shutil.copytree(ROOT / "inventory/sim/group_vars", work / "rack" / "group_vars")
    before, used_before_MiB = load(), in_use_MiB()
    up_s, up = provision("sim", "up", "--nodes", str(n), "--inventory", str(work / "rack"), "--address-base",
                         "127.77.0.10")
    try:
        if up.returncode != 0:
            raise RuntimeError(f"sim up failed: {up.stderr.strip()[-500:]}")
        from provision.sim import cgroups

        nodes = rack.load_nodes(work / "rack")
        states = {settle(node.pid) for node in nodes}
        if not states <= {"running", "degraded"}:  # a node still booting would understate the memory figures
            raise RuntimeError(f"not every node finished booting: {sorted(states)}")
        pss = sum(node_pss_MiB(node.pid) for node in nodes) / len(nodes)
        charged = [cgroups.memory_bytes(Path(node.cgroup)) for node in nodes]
        if None in charged:  # an unreadable charge is not 0 MiB
            raise RuntimeError(f"{charged.count(None)} nodes' cgroup memory could not be read")
        cgroup_MiB, cgroup_max_MiB = sum(charged) / len(nodes) / 2**20, max(charged) / 2**20
        machine_MiB = (in_use_MiB() - used_before_MiB) / len(nodes)
        for node in nodes:
            (node.root() / "etc/provision-sim/bench-tool-time-s").write_text(f"{t}\n")
        extra = ["--forks", str(forks)] if forks else []
        wall, rc, cpu_s, rss_MiB = measured(
            ["burnin", "-i", str(work / "rack"), "--scope", "node", "--checks", CHECKS, "--run-id", f"overhead-{n}",
             *extra], {"PROVISION_RUNS_DIR": str(work / "runs")}, work / "burnin.log")
        report_path = work / "runs" / f"overhead-{n}" / "report.json"
        if not report_path.is_file():
            raise RuntimeError(f"provision burnin exited {rc} without a report: "
                               f"{(work / 'burnin.log').read_text()[-500:]}")
        report = json.loads(report_path.read_text())
        if "burnin_wall_s" not in report:  # a run stopped part-way keeps its results but has no wall time
            done = sum(r["outcome"] != "error" for r in report.get("results", []))
            raise RuntimeError(f"provision burnin exited {rc} before the end ({done} results not in error)")
        engine = float(report["burnin_wall_s"])
        errors = sum(r["outcome"] == "error" for r in report["results"])
        test = TOOL_CALLS * t
        print(f"{n:>5} {up_s:>6.1f} {engine:>8.1f} {wall:>7.1f} {engine / test:>11.2f} {wall / test:>8.2f} "
              f"{errors:>6} {cpu_s / n:>10.3f} {rss_MiB:>12.0f} {pss:>12.2f} {cgroup_MiB:>15.1f} "
              f"{cgroup_max_MiB:>6.1f} {machine_MiB:>16.1f}  "
              f"{before} -> {load()}", flush=True)
        shown = [r for r in report["results"] if r["outcome"] == "error"][:10]
        for r in shown:
            print(f"#   {r['hosts'][0]} {r['check']}: {r['message'][:160]}")
    finally:
        provision("sim", "down", "--inventory", str(work / "rack"))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
