"""Bench: the install at 16, 64 and 256 simulated nodes by each method (``--method push,local,image``), a full
install and a no-op re-install: wall seconds, controller CPU seconds per host, the nodes' CPU per host and the bytes
the controller sent per host.

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

Node CPU: the CPU seconds of every node's cgroup (``cpu.stat`` usage_usec of the simulated node's cgroup v2
folder, its services and the roles' work), summed over the rack, per host. On this machine the nodes share the
controller's cores, so wall time grows with the rack's total node CPU; on a real cluster each node has its own.
Bytes sent: the bytes the kernel counted as acknowledged on every TCP connection from this machine to a node's port
22 (``ss -tin``: tcp_info's bytes_acked, sampled every 0.5 s, the highest seen per connection): what push's ssh
clients and local's and image's paramiko sent, the same way for each method; the nodes' downloads from the package
repository (HTTP) are not counted. Each method gets a fresh rack; ``image`` a fresh image cache, so its first install
builds the image.
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
import subprocess
import tempfile
import threading
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


def install(inv: Path, run_id: str, env: dict, profile: Path | None, method: str = "push") -> tuple[float, dict, int]:
    """(wall s, {ours, ansible, rss_MiB}, exit status) of `provision install -i inv --method method`."""
    extra = {"BENCH_PROFILE": str(profile)} if profile else {}
    wall, proc = timed([PY, "-c", WRAPPER, "install", "-i", str(inv), "--run-id", run_id, "--method", method],
                       {**env, **extra})
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


def node_cpu_s(inv: Path) -> float:
    """CPU seconds used so far by every simulated node of the rack in ``inv`` (their cgroups' usage_usec)."""
    from provision.sim import rack

    total = 0
    for node in rack.load_nodes(inv):
        try:
            stat = (Path(node.cgroup) / "cpu.stat").read_text()
        except OSError:
            continue
        total += next((int(v) for k, v in (line.split() for line in stat.splitlines()) if k == "usage_usec"), 0)
    return total / 1e6


class SshBytes:
    """Bytes acknowledged on this machine's TCP connections to port 22 of ``prefix``.* (``ss -tin``, every 0.5 s)."""

    def __init__(self, prefix: str):
        self.prefix, self.seen, self.stop = prefix, {}, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def _loop(self) -> None:
        while not self.stop.wait(0.5):
            self.sample()

    def sample(self) -> None:
        out = subprocess.run(["ss", "-tinH", "state", "established", "( dport = :22 )"], capture_output=True,
                             text=True, check=False).stdout
        peer = None
        for line in out.splitlines():
            words = line.split()
            if len(words) >= 4 and ":" in words[-1] and not line.startswith((" ", "\t")):
                peer = (words[-2], words[-1]) if words[-1].startswith(self.prefix) else None
            elif peer is not None:
                acked = next((int(w.split(":")[1]) for w in words if w.startswith("bytes_acked:")), None)
                if acked is not None:
                    self.seen[peer] = max(self.seen.get(peer, 0), acked)
                peer = None

    @property
    def total(self) -> int:
        return sum(self.seen.values())


def line(kind: str, n: int, wall: float, cpu: dict, rc: int, node_s: float = 0.0, sent: int = 0) -> str:
    total = cpu.get("ours", 0.0) + cpu.get("ansible", 0.0)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{n:>5} {kind:<14} {wall:>7.1f} {wall / n:>9.2f} {total:>8.1f} {total / n:>9.2f} "
            f"{cpu.get('ours', 0.0) / n:>9.3f} {cpu.get('ansible', 0.0) / n:>9.2f} {node_s / n:>9.1f} "
            f"{sent / n / 1e6:>9.2f} {cpu.get('rss_MiB', 0.0):>7.0f} {rc:>4}   {load}")


def main() -> None:
    from importlib import metadata

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="16,64")
    p.add_argument("--method", default="push", help="comma list of push, local, image")
    p.add_argument("--profile", action="store_true", help="profile the provision process (cProfile), by package")
    p.add_argument("--noop-only", action="store_true", help="report the no-op re-install only (the first install "
                   "still runs, to make it a no-op)")
    p.add_argument("--full-only", action="store_true", help="the full install only, no no-op re-install")
    args = p.parse_args()
    print(f"# {os.cpu_count()} CPUs; ansible-core {metadata.version('ansible-core')}, ansible-runner "
          f"{metadata.version('ansible-runner')}; Ansible settings (ansible.cfg; provision passes --forks = hosts): "
          f"{settings()}")
    print(f"{'nodes':>5} {'method/install':<14} {'wall s':>7} {'wall/host':>9} {'CPU s':>8} {'CPU/host':>9} "
          f"{'ours/host':>9} {'ans./host':>9} {'node/host':>9} {'MB/host':>9} {'RSS MiB':>7} {'exit':>4}   "
          "load 1/5/15 min")
    for n in (int(x) for x in args.nodes.split(",")):
        for method in args.method.split(","):
            work = Path(tempfile.mkdtemp(prefix=f"bench-install-{method}-{n}-"))
            inv, runs = work / "rack", work / "runs"
            shutil.copytree(ROOT / "inventory/sim/group_vars", inv / "group_vars")
            env = {"PROVISION_RUNS_DIR": str(runs), "PROVISION_CACHE_DIR": str(work / "cache")}
            base = free_base(n)
            _, up = timed([PY, "-m", "provision", "sim", "up", "--nodes", str(n), "--inventory", str(inv),
                           "--address-base", base])
            if up.returncode != 0:
                sys.exit(up.stderr[-2000:])
            try:
                for kind in ("full",) if args.full_only else ("full", "no-op"):
                    prof = work / f"{kind}.prof" if args.profile else None
                    node_before = node_cpu_s(inv)
                    with SshBytes(base.rsplit(".", 1)[0] + ".") as sent:
                        wall, cpu, rc = install(inv, kind, env, prof, method)
                        sent.sample()
                    node_s = node_cpu_s(inv) - node_before
                    if kind == "full" and args.noop_only:
                        continue
                    report = runs / kind / "report.json"
                    changed = sum(h.get("changed", 0) for h in json.loads(report.read_text())["install"].values()) \
                        if report.is_file() else -1
                    print(line(f"{method}/{kind}", n, wall, cpu, rc, node_s, sent.total) + f"   changed {changed}",
                          flush=True)
                    if prof and prof.is_file():
                        print(f"#   {kind}: provision process CPU s by package: {by_package(prof)}", flush=True)
                if method == "push" and not args.full_only:
                    shares = role_seconds(task_seconds(runs / "no-op"))
                    print("#   no-op task seconds by role: " + ", ".join(f"{r} {s:.0f}" for r, s in shares.items()),
                          flush=True)
            finally:
                timed([PY, "-m", "provision", "sim", "down", "--inventory", str(inv)])
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
