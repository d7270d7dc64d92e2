"""Slurm's node side inside simulated nodes: each node runs its own munged and ``slurmd -D``, as on a real cluster.

``slurm_cluster`` runs every slurmd on this machine (``slurmd -N``); here slurmctld and its munged still run
on this machine (127.0.0.1), but each given simulated node runs munged and slurmd in its own namespaces
(``nsenter`` into its mount, UTS, IPC, PID and cgroup namespaces; the network is shared). So the node's
HealthCheckProgram, Prolog and Epilog run in the node, with the node's files, tools and hostname, and
``scontrol`` inside the node (root, the node's ``/etc/slurm/slurm.conf`` and munged) talks to the slurmctld
here, as LBNL NHC does on a real node.

- ``install_slurm(node)`` copies Slurm's node side from this machine (Debian 12, as the nodes) into the node's
  root: the files of the Debian packages in ``PACKAGES`` (less docs, man pages and init scripts), the
  alternatives' names (``/usr/sbin/slurmd`` -> ``slurmd-wlm``) and every shared library those binaries and
  plugins load that the node lacks (what ``ldd`` run inside the node reports "not found", taken from this
  machine's loader cache, until ``ldd`` in the node finds everything). No apt, no network, no maintainer
  scripts (no users made); a stamp in the node (``STAMP``, the package versions) makes a second call a no-op.
  Measured on the 2-core machine: 162 files and links, 10.5 MB, of which one library the base lacks
  (liblua5.1, for slurm-wlm-basic-plugins), in 1.5-2.8 s; again: 0.01 s.
- ``slurm_in_nodes(folder, nodes, extra_conf, host_nodes)`` starts munged and slurmctld here, and munged and
  slurmd in each node; yields a ``slurm_cluster.SlurmCluster`` (``scontrol``, ``states``, ``node``) once every
  node is IDLE; stops them all by PID and checks that nothing of theirs is left in the nodes.

slurm.conf is byte-identical on both sides (slurmd sends a hash of its slurm.conf and slurmctld logs an error
when it differs), so no ``DebugFlags=NO_CONF_HASH``: its paths, all under ``folder``, name this machine's
files for slurmctld and the same paths inside the node for the node's slurmd and munged (every node has its
own mount namespace). The node's copy is its ``/etc/slurm/slurm.conf``, Slurm's default, so plain
``scontrol`` inside the node works. The node's munged runs as the node's munge user if it has one (the munge
package's postinst makes it), else as root (the simulated base has none), without ``--force``: munged refuses
a key not owned by the user it runs as ("should be owned by UID 0 instead of UID 1000") or readable by group or
others ("should not be readable or writable by group (perms=0644)"), so the key is that user's, mode 0400.
Measured: every node IDLE 0.45 s after the start (munged, slurmctld, slurmd).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from provision.sim import rack
from tests.integration import slurm_cluster

PACKAGES = ("slurmd", "slurm-client", "slurm-wlm-basic-plugins", "munge", "libmunge2")
SKIP = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/lintian/", "/etc/init.d/", "/etc/logrotate.d/")
STAMP = "var/lib/provision-sim/slurm-node.json"  # in the node: what was installed (package versions)
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NODE_DAEMONS = ("munged", "slurmd", "slurmstepd")
# slurmd loads a cgroup plugin even with proctrack/linuxproc and task/none. Autodetected, it finds cgroup v2
# at the node's /sys/fs/cgroup (the node's own subtree) but v1 controllers in /proc/self/cgroup (this
# machine's hybrid hierarchy shows through) and stops: "fatal: Hybrid mode is not supported". Naming v1, as
# autodetection picks on this machine itself (tmpfs at /sys/fs/cgroup), lets it start; nothing uses it.
CGROUP_CONF = "CgroupPlugin=cgroup/v1\n"


def nsenter(node: rack.SimNode) -> list[str]:
    """The argv prefix that runs a command in ``node``'s namespaces (as ``provision.sim.faults`` does)."""
    return ["nsenter", "--target", str(node.pid), "--mount", "--uts", "--ipc", "--pid", "--cgroup", "--"]


def in_node(node: rack.SimNode, *argv: str, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
    """``argv`` run inside ``node`` as root, with a node's PATH and nothing of this machine's environment."""
    return subprocess.run([*nsenter(node), *argv], capture_output=True, text=True, timeout=timeout,
                          env={"PATH": NODE_PATH, "HOME": "/root", "LANG": "C.UTF-8"}, **kw)


def _versions() -> dict[str, str]:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", *PACKAGES], capture_output=True,
                         text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def _host(path: str) -> str:
    """``path`` with its folder resolved on this machine (/lib -> /usr/lib): the node has the same merged /usr,
    and resolving here keeps every write through ``/proc/PID/root`` inside the node."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _package_paths() -> list[str]:
    out = subprocess.run(["dpkg", "-L", *PACKAGES], capture_output=True, text=True, check=True).stdout
    return sorted({p for p in out.splitlines() if p.startswith("/") and p != "/." and not p.startswith(SKIP)})


def _alternatives(paths: list[str]) -> dict[str, str]:
    """Name -> target of the alternatives the packages' scripts make here (``/usr/sbin/slurmd`` -> ``slurmd-wlm``)."""
    links = {}
    for path in paths:
        if path.endswith("-wlm") and os.path.basename(os.path.dirname(path)) in ("bin", "sbin"):
            name = path[: -len("-wlm")]
            if os.path.realpath(name) == os.path.realpath(path):
                links[name] = os.path.basename(path)
    return links


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


_NOT_FOUND = re.compile(r"^\s*(\S+) => not found", re.M)


def _not_found(node: rack.SimNode, elves: list[str]) -> set[str]:
    """The sonames ``ldd`` inside ``node`` (the node's loader, its files) reports as not found for ``elves``."""
    done = in_node(node, "sh", "-c", 'printf "%s\\0" "$@" | xargs -0 -P 4 -n 16 ldd', "ldd", *elves, timeout=120)
    if done.stderr.strip():
        raise AssertionError(f"{node.name}: ldd in the node: {done.stderr[-2000:]}")
    return set(_NOT_FOUND.findall(done.stdout))


def _host_libraries() -> dict[str, str]:
    """soname -> path of every library in this machine's loader cache (``ldconfig -p``, x86-64 ones)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    libs: dict[str, str] = {}
    for m in re.finditer(r"^\s*(\S+) \(([^)]*)\) => (/\S+)$", out, re.M):
        if "x86-64" in m.group(2):
            libs.setdefault(m.group(1), m.group(3))
    return libs


def _copy(src: str, root: Path, dest: str | None = None) -> int:
    """Copy ``src`` (a file, symlink or folder of this machine) to ``dest`` (default the same path) in the node
    whose root is ``root``, unless it is there already (same size and mtime). Returns bytes written."""
    target = root / (dest or src).lstrip("/")
    if os.path.islink(src):
        link = os.readlink(src)
        if os.path.islink(target) and os.readlink(target) == link:
            return 0
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        os.symlink(link, target)
        return 0
    if os.path.isdir(src):
        target.mkdir(parents=True, exist_ok=True)
        return 0
    st = os.stat(src)
    with contextlib.suppress(FileNotFoundError):
        there = os.lstat(target)
        if there.st_size == st.st_size and int(there.st_mtime) == int(st.st_mtime):
            return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, target)
    return st.st_size


def install_slurm(node: rack.SimNode) -> dict:
    """Put Slurm's node side (slurmd, slurmstepd, scontrol, sinfo, sbatch, munged, their plugins and the shared
    libraries they load that the node lacks) into ``node``'s root, from this machine's Debian packages.
    Idempotent: a node whose stamp names the same package versions is left as it is. Returns what was done:
    ``{"skipped": bool, "files": n, "bytes": n, "libraries": [...], "seconds": s}``. Raises AssertionError when
    a copied binary or plugin still misses a library inside the node."""
    start = time.monotonic()
    root = node.root()
    versions = _versions()
    stamp = root / STAMP
    with contextlib.suppress(OSError, ValueError):
        if json.loads(stamp.read_text())["packages"] == versions:
            return {"skipped": True, "files": 0, "bytes": 0, "libraries": [], "seconds": time.monotonic() - start}
    paths = _package_paths()
    size = files = 0
    for path in paths:
        size += _copy(path, root, _host(path))
        files += not os.path.isdir(path)
    for name, target in _alternatives(paths).items():
        link = root / _host(name).lstrip("/")
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        os.symlink(target, link)
        files += 1
    elves = [p for p in paths if not os.path.islink(p) and os.path.isfile(p) and _is_elf(p)]
    # ldd inside the node names what the node lacks; each round copies those libraries from here, the next
    # checks their own dependencies too (ldd lists a binary's whole closure).
    added: list[str] = []
    host = _host_libraries()
    for _ in range(5):
        missing = _not_found(node, elves)
        if not missing:
            break
        unknown = sorted(missing - host.keys())
        assert not unknown, f"{node.name}: libraries neither in the node nor here: {unknown}"
        for soname in sorted(missing):
            name = _host(host[soname])
            real = os.path.realpath(name)
            size += _copy(real, root)
            if real != name and not os.path.lexists(root / name.lstrip("/")):
                os.symlink(os.path.basename(real), root / name.lstrip("/"))
            files += 1 + (real != name)
            added.append(soname)
    else:
        raise AssertionError(f"{node.name}: ldd in the node still misses {sorted(missing)}")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"packages": versions, "libraries": added}))
    return {"skipped": False, "files": files, "bytes": size, "libraries": added, "seconds": time.monotonic() - start}


def _popen(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    """``argv`` in a session of its own (stopped as a process group: nsenter does not forward signals to the
    command it forks into the node's PID namespace), output to ``log``."""
    with open(log, "w") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)


def _wait_for(path: Path, proc: subprocess.Popen, log: Path, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear (exit {proc.poll()}): {log.read_text()[-2000:]}")
        time.sleep(0.05)


def _munge_user(root: Path) -> tuple[int, int]:
    """(uid, gid) of the node's munge user (the munge package's postinst makes it), else root's (0, 0): the
    base has none and ``install_slurm`` copies files only."""
    with contextlib.suppress(OSError):
        for line in (root / "etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == "munge" and len(fields) > 3:
                return int(fields[2]), int(fields[3])
    return 0, 0


def _start_node(folder: Path, node: rack.SimNode, key: bytes, conf: str, procs: list) -> None:
    """Key, slurm.conf and folders into ``node``; its munged, then its slurmd, started inside it."""
    root = node.root()
    munge = root / "etc/munge"
    munge.mkdir(parents=True, exist_ok=True)
    os.chmod(munge, 0o700)
    keyfile = munge / "munge.key"
    with contextlib.suppress(FileNotFoundError):
        keyfile.unlink()
    keyfile.write_bytes(key)
    uid, gid = owner = _munge_user(root)
    os.chown(munge, uid, gid)
    os.chown(keyfile, uid, gid)  # munged(8): the key must be owned by the user munged runs as, mode 0400 or 0600
    os.chmod(keyfile, 0o400)
    (root / "etc/slurm").mkdir(parents=True, exist_ok=True)
    (root / "etc/slurm/slurm.conf").write_text(conf)
    (root / "etc/slurm/cgroup.conf").write_text(CGROUP_CONF)
    inner = root / str(folder).lstrip("/")
    for sub in ("munge", "log", f"spool/{node.name}"):
        (inner / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(inner / "munge", 0o755)  # munged wants its socket's folder searchable, not writable by others
    os.chown(inner / "munge", uid, gid)  # its socket, PID file and seed
    env = {"PATH": NODE_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
    log = folder / "log" / f"{node.name}.munged.out"
    user = [] if owner == (0, 0) else ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups"]
    # No --force: munged's own checks of its key and folders hold in the node, as on a real one.
    munged = _popen([*nsenter(node), *user, "munged", "--foreground", f"--socket={folder}/munge/munge.socket",
                     "--key-file=/etc/munge/munge.key", f"--pid-file={folder}/munge/munged.pid",
                     f"--log-file={folder}/log/munged.log", f"--seed-file={folder}/munge/munged.seed"], log, env)
    procs.append((node, munged))
    _wait_for(inner / "munge/munge.socket", munged, log)
    log = folder / "log" / f"{node.name}.slurmd.out"
    procs.append((node, _popen([*nsenter(node), "slurmd", "-D"], log, env)))


def _stop(procs: list) -> None:
    """SIGTERM to each process group, newest first; SIGKILL to any still running after 15 s."""
    for _, proc in reversed(procs):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for _, proc in reversed(procs):
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def leftovers(node: rack.SimNode) -> list[str]:
    """``PID name`` of every munged, slurmd or slurmstepd still running in ``node`` (PIDs as this machine sees
    them), from a pgrep over the node's PID namespace."""
    if not node.pid:
        return []
    done = subprocess.run(["pgrep", "-l", "--ns", str(node.pid), "--nslist", "pid", "-x", "|".join(NODE_DAEMONS)],
                          capture_output=True, text=True)
    return done.stdout.split("\n")[:-1]


def _reap(nodes: list[rack.SimNode]) -> list[str]:
    """What ``leftovers`` finds is sent SIGTERM by PID (a daemon that left nsenter's process group), given 30 s (a
    slurmd on a loaded 2-core machine takes its time to stop), then killed; returns what was still there then."""
    found: list[str] = []
    deadline = time.monotonic() + 30
    termed: set[int] = set()
    while time.monotonic() < deadline:
        found = [f"{n.name}: {line}" for n in nodes for line in leftovers(n)]
        if not found:
            return []
        for line in found:
            pid = int(line.split(": ", 1)[1].split()[0])
            if pid not in termed:
                termed.add(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        time.sleep(0.2)
    for line in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(": ", 1)[1].split()[0]), signal.SIGKILL)
    return found


@contextlib.contextmanager
def slurm_in_nodes(folder: Path, nodes: list[rack.SimNode], extra_conf: str = "",
                   host_nodes: dict[str, str] | None = None):
    """A Slurm whose controller (munged, slurmctld) runs here and whose nodes are ``nodes`` (simulated, each
    running its own munged and slurmd inside it: Slurm is installed into them first) plus ``host_nodes``
    (NodeName -> loopback address, a ``slurmd -N`` here, as ``slurm_cluster``). ``extra_conf``: lines appended
    to slurm.conf on every side. Yields the ``slurm_cluster.SlurmCluster`` (its ``env`` points a client here at
    the cluster) once every node is IDLE; on exit stops every daemon by PID and raises AssertionError when a
    munged, slurmd or slurmstepd is left running in a node."""
    host_nodes = host_nodes or {}
    every = {**{n.name: n.address for n in nodes}, **host_nodes}
    for node in nodes:
        install_slurm(node)
    for sub in ("munge", "state", "log", *(f"spool/{n}" for n in host_nodes)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(folder / "munge", 0o755)
    conf = slurm_cluster._config(folder, every) + (extra_conf.strip() + "\n" if extra_conf.strip() else "")
    (folder / "slurm.conf").write_text(conf)
    (folder / "cgroup.conf").write_text(CGROUP_CONF)
    cluster = slurm_cluster.SlurmCluster(folder, every, {"SLURM_CONF": str(folder / "slurm.conf"),
                                                        "MUNGE_SOCKET": str(folder / "munge/munge.socket")})
    key = folder / "munge/munge.key"
    key.unlink(missing_ok=True)
    subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, timeout=30)
    in_nodes: list = []
    try:
        slurm_cluster._start(cluster, ["munged", "--foreground", "--force", f"--socket={folder}/munge/munge.socket",
                                       f"--key-file={key}", f"--pid-file={folder}/munge/munged.pid",
                                       f"--log-file={folder}/log/munged.log",
                                       f"--seed-file={folder}/munge/munged.seed"])
        slurm_cluster._wait_for(folder / "munge/munge.socket")
        slurm_cluster._start(cluster, ["slurmctld", "-D", "-i"])
        for name in host_nodes:
            slurm_cluster._start(cluster, ["slurmd", "-D", "-N", name])
        for node in nodes:
            _start_node(folder, node, key.read_bytes(), conf, in_nodes)
        try:
            cluster.wait_idle()
        except AssertionError as e:
            logs = "\n".join(f"--- {n.name}: {p.name}\n{p.read_text()[-1500:]}" for n in nodes
                             for p in sorted((n.root() / str(folder).lstrip("/") / "log").glob("*")))
            raise AssertionError(f"{e}\nin the nodes:\n{logs}") from None
        yield cluster
    finally:
        _stop(in_nodes)
        _stop([(None, p) for p in cluster.procs])
        left = _reap(nodes)
        _keep_logs(folder, nodes)
    # Reached only when the body raised nothing: a leak must not hide the body's own failure.
    assert not left, f"left running in the nodes after stop (killed now): {left}"


def _keep_logs(folder: Path, nodes: list[rack.SimNode]) -> None:
    """Copy each node's Slurm and munge logs to ``folder``/log/NODE/ here: the node's files go with the node."""
    for node in nodes:
        with contextlib.suppress(OSError):
            inner = node.root() / str(folder).lstrip("/") / "log"
            for path in inner.glob("*"):
                (folder / "log" / node.name).mkdir(exist_ok=True)
                shutil.copy(path, folder / "log" / node.name / path.name)


def node_log(folder: Path, node: rack.SimNode, name: str = "slurmd") -> str:
    """``node``'s slurmd (or munged) log, read through its root."""
    path = node.root() / str(folder).lstrip("/") / "log" / (f"slurmd.{node.name}.log" if name == "slurmd"
                                                           else f"{name}.log")
    return path.read_text() if path.exists() else ""
