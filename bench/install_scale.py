"""Bench: the install at 1, 16 and 64 simulated nodes, a full install and a no-op re-install, in wall
seconds and controller CPU seconds per host.

Prints figures, never passes or fails. For each rack size (``--nodes 1,16,64``) a fresh rack is started
on free loopback addresses, then ``provision install -i RACK`` runs twice (the first installs everything,
the second changes nothing), end to end as the user types it (plan gate, report). Controller CPU is
every CPU second spent on this machine by the ``provision`` process and everything it starts
(ansible-playbook, its forks, ssh clients and their ControlPersist masters, which detach: the process
is made a child subreaper, prctl(2) PR_SET_CHILD_SUBREAPER, and reaps them before it exits), split into
``ours`` (the provision process itself: our Python before and after Ansible, and ansible-runner's
reading and handling of Ansible's events in it) and ``ansible`` (the processes it starts). The nodes'
own CPU (sshd, the modules running on them) is not counted: they are not children of the install.
``--profile`` also runs the provision process under cProfile (timer: process CPU time) and prints its
CPU seconds grouped by package. The machine's load average is printed next to every figure (others may
share the machine).
Per-task figures of the no-op install: ``bench/install_noop.py`` (its helpers are reused here).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install_noop import ROOT, role_seconds, settings, task_seconds, timed  # noqa: E402

PY = sys.executable
MARK = "bench-cpu "
# Runs `provision ARGS` as the console script does, as a child subreaper; at exit it reaps every
# orphaned descendant (waiting at most 30 s) and prints its own and its descendants' CPU seconds.
WRAPPER = r"""
import atexit, ctypes, json, os, resource, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
def _report():
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                time.sleep(0.1)
        except ChildProcessError:
            break
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stderr.write("%s%s\n" % (MARK, json.dumps({"ours": me.ru_utime + me.ru_stime,
                     "ansible": kids.ru_utime + kids.ru_stime, "rss_MiB": me.ru_maxrss / 1024})))
atexit.register(_report)
PROFILE = os.environ.get("BENCH_PROFILE")
from provision.cli import main
if PROFILE:
    import cProfile
    profiler = cProfile.Profile(time.process_time)  # CPU, not the waits on Ansible's output
    code = profiler.runcall(main, sys.argv[1:])
    profiler.dump_stats(PROFILE)
    sys.exit(code)
sys.exit(main(sys.argv[1:]))
""".replace("MARK", repr(MARK))
GROUPS = ("provision", "ansible_runner", "pexpect", "ansible", "yaml", "jinja2", "json", "subprocess", "threading",
          "selectors")


def free_base(nodes: int) -> str:
    """A 127.X.Y.10 base whose next ``nodes`` addresses have nothing listening on port 22."""
    rng = random.SystemRandom()
    for _ in range(50):
        base = f"127.{rng.randrange(20, 250)}.{rng.randrange(0, 250)}"
        if not any(_listening(f"{base}.{10 + i}") for i in range(nodes)):
            return f"{base}.10"
    sys.exit("no free loopback address block found")


def _listening(address: str) -> bool:
    try:
        socket.create_connection((address, 22), timeout=0.2).close()
        return True
    except OSError:
        return False


def install(inv: Path, run_id: str, env: dict, profile: Path | None) -> tuple[float, dict, int]:
    """(wall s, {ours, ansible, rss_MiB}, exit status) of `provision install -i inv`."""
    extra = {"BENCH_PROFILE": str(profile)} if profile else {}
    wall, proc = timed([PY, "-c", WRAPPER, "install", "-i", str(inv), "--run-id", run_id], {**env, **extra})
    lines = [line for line in proc.stderr.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0:
        print(f"#   {run_id}: exit {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}")
    return wall, json.loads(lines[-1][len(MARK):]) if lines else {}, proc.returncode


def by_package(profile: Path) -> str:
    """The profiled process's own CPU seconds (tottime) summed per package, largest first."""
    import pstats

    spent: dict[str, float] = {}
    for (file, _, _), (_, _, tottime, _, _) in pstats.Stats(str(profile)).stats.items():  # type: ignore[attr-defined]
        parts = Path(file).parts
        group = next((g for g in GROUPS if g in parts or Path(file).stem == g), "other")
        spent[group] = spent.get(group, 0.0) + tottime
    return ", ".join(f"{g} {s:.1f}" for g, s in sorted(spent.items(), key=lambda kv: -kv[1]) if s >= 0.05)


def line(kind: str, n: int, wall: float, cpu: dict, rc: int) -> str:
    total = cpu.get("ours", 0.0) + cpu.get("ansible", 0.0)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{n:>5} {kind:<7} {wall:>7.1f} {wall / n:>9.2f} {total:>8.1f} {total / n:>9.2f} "
            f"{cpu.get('ours', 0.0) / n:>9.3f} {cpu.get('ansible', 0.0) / n:>9.2f} {cpu.get('rss_MiB', 0.0):>7.0f} "
            f"{rc:>4}   {load}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="1,16,64")
    p.add_argument("--profile", action="store_true", help="profile the provision process (cProfile), by package")
    p.add_argument("--noop-only", action="store_true", help="report the no-op re-install only (the first install "
                   "still runs, to make it a no-op)")
    args = p.parse_args()
    print(f"# {os.cpu_count()} CPUs; Ansible settings (ansible.cfg; provision passes --forks = hosts): {settings()}")
    print(f"{'nodes':>5} {'install':<7} {'wall s':>7} {'wall/host':>9} {'CPU s':>8} {'CPU/host':>9} "
          f"{'ours/host':>9} {'ans./host':>9} {'RSS MiB':>7} {'exit':>4}   load 1/5/15 min")
    for n in (int(x) for x in args.nodes.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-install-{n}-"))
        inv, runs = work / "rack", work / "runs"
        shutil.copytree(ROOT / "inventory/sim/group_vars", inv / "group_vars")
        env = {"PROVISION_RUNS_DIR": str(runs)}
        _, up = timed([PY, "-m", "provision", "sim", "up", "--nodes", str(n), "--inventory", str(inv),
                       "--address-base", free_base(n)])
        if up.returncode != 0:
            sys.exit(up.stderr[-2000:])
        try:
            for kind in ("full", "no-op"):
                prof = work / f"{kind}.prof" if args.profile else None
                wall, cpu, rc = install(inv, kind, env, prof)
                if kind == "full" and args.noop_only:
                    continue
                report = runs / kind / "report.json"
                changed = sum(h.get("changed", 0) for h in json.loads(report.read_text())["install"].values()) \
                    if report.is_file() else -1
                print(line(kind, n, wall, cpu, rc) + f"   changed {changed}", flush=True)
                if prof and prof.is_file():
                    print(f"#   {kind}: provision process CPU s by package: {by_package(prof)}", flush=True)
            shares = role_seconds(task_seconds(runs / "no-op"))
            print("#   no-op task seconds by role: " + ", ".join(f"{r} {s:.0f}" for r, s in shares.items()), flush=True)
        finally:
            timed([PY, "-m", "provision", "sim", "down", "--inventory", str(inv)])
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
