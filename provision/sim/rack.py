"""Start, stop and describe the simulated rack.

Each node is a namespace set (mount, UTS, IPC, PID, cgroup) over an overlay of the shared base
root that boots systemd, which runs its own sshd on its own loopback address and the node's units;
a supervisor boots it again when it reboots (``provision/sim/README.md``).
The rack's state lives outside its inventory folder (``state.py``); ``sim up`` writes only
``<inventory>/hosts.yml`` there, so that the rack is an ordinary Ansible inventory with host key
checking on.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import yaml

from provision import external, profiles
from provision.errors import ProvisionError, RunnerError
from provision.sim import synth
from provision.fabric.model import width_speed_for
from provision.sim import base as sim_base
from provision.sim import cgroups, hwmodel, kernelviews, keys, osflavor, repo, rpmrepo, snapshot, state

INIT_SCRIPT = Path(__file__).with_name("node-init.sh")
BOOT_SCRIPT = Path(__file__).with_name("node-boot.sh")  # the node's supervisor, which reboots it
TOOLS_DIR = Path(__file__).with_name("tools")
DEFAULT_ADDRESS_BASE = "127.0.1.10"
DEFAULT_OS = "debian12"
SITE_VARS = Path(__file__).with_name("site.yml")  # the rack's settings, copied into its hosts.yml
# sshd answers once the node's systemd has booted to it: about 1 s on a quiet machine; the bound only
# catches a node that does not boot (128 nodes booting beside a test suite on 2 cores took over 60 s).
SSH_READY_TIMEOUT_S = 300.0
# Nodes prepared and started at once: writing a node's files and starting its namespaces waits on
# the disk and on unshare/sshd, not on this process, so a few threads overlap those waits
# (bench: `time provision sim up --nodes 128`, README "Scale").
START_WORKERS = 8
FABRIC_FILE = "fabric.yaml"  # the rack's fabric in its state folder; each node has a copy
SIM_BONDING_DIR = "/var/lib/provision-sim/net/bonding"  # stands in for /proc/net/bonding
# Stands in for /proc/devices (procfs cannot be written): the nvidia module's character devices, as a loaded
# driver 580 lists them (names from the driver: nvidia-frontend, nvidia-caps, nvidia-caps-imex-channels; NVIDIA
# IMEX guide, "IMEX Channels": the channel major is read from /proc/devices).
SIM_PROC_DEVICES = "/var/lib/provision-sim/proc/devices"
NVIDIA_MAJORS = ((195, "nvidia-frontend"), (234, "nvidia-caps"), (235, "nvidia-caps-imex-channels"),
                 (511, "nvidia-uvm"))
CLUSTER_KEY = "cluster_ed25519"  # the key root uses from node to node (mpirun's ssh), in the state folder
# Open MPI's system-wide MCA parameter file, $sysconfdir/openmpi-mca-params.conf, Debian's sysconfdir
# being /etc/openmpi (https://www.open-mpi.org/faq/?category=tuning#setting-mca-params, Open MPI 4.1).
MPI_PARAMS = "etc/openmpi/openmpi-mca-params.conf"


@dataclass(frozen=True)
class SimNode:
    """One running simulated node. ``supervisor`` is the PID (on this machine) of its node-boot.sh,
    which outlives the node's reboots; ``cgroup`` its cgroup v2 folder; ``pid`` its PID 1 of the
    current boot (systemd), or 0 while it reboots or after it stopped."""

    name: str
    address: str
    supervisor: int
    cgroup: str = ""

    @property
    def pid(self) -> int:
        unshare = _children(self.supervisor)
        return next((p for u in unshare for p in _children(u)), 0)

    def alive(self) -> bool:
        """The supervisor runs (the node is up, or booting again after a reboot); a zombie not yet
        reaped by the process that started it (``sim up`` in this process) is not running."""
        try:
            state = Path(f"/proc/{self.supervisor}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

    def root(self) -> Path:
        """The node's root filesystem, reached through its PID 1."""
        return Path(f"/proc/{self.pid}/root")


def _children(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children (its main thread's); [] when it has none or is gone."""
    try:
        return _read_children(pid)
    except (OSError, ValueError):
        return []


def _read_children(pid: int) -> list[int]:
    """``pid``'s children from /proc (proc(5), /proc/PID/task/TID/children). Raises OSError when it is gone."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def state_dir(inventory_dir: Path) -> Path:
    """The rack's state folder, outside ``inventory_dir`` (``state.folder``)."""
    return state.folder(inventory_dir)


def load_nodes(inventory_dir: Path) -> list[SimNode]:
    """The rack's nodes from its state file; [] when no rack was started there."""
    return _read_nodes(state_dir(inventory_dir))


def _read_nodes(sdir: Path) -> list[SimNode]:
    path = sdir / "rack.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
        # "pid" without "supervisor": a rack of an older version, whose nodes' PID 1 (tini) is that pid
        return [SimNode(n["name"], n["address"], int(n["supervisor"] if "supervisor" in n else n["pid"]),
                        str(n.get("cgroup", ""))) for n in data["nodes"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProvisionError(f"{path}: corrupt rack state ({type(exc).__name__}); stop the nodes by hand "
                             f"and delete {sdir}") from None


def is_up(inventory_dir: Path) -> bool:
    nodes = load_nodes(inventory_dir)
    # a rack whose nodes have no cgroup was started by a version whose nodes did not boot systemd: not up, so
    # that `sim up` stops it and starts the rack again
    return bool(nodes) and all(n.alive() and n.cgroup for n in nodes) and (inventory_dir / "hosts.yml").is_file()


def os_plan(os_arg: str | list[str] | None, nodes: int) -> list[str]:
    """Each node's OS: ``os_arg`` is one OS or a comma list given to the nodes in turn
    (``ubuntu2204,rocky9`` over 4 nodes: ubuntu2204, rocky9, ubuntu2204, rocky9). Raises ProvisionError."""
    names = os_arg if isinstance(os_arg, list) else [o.strip() for o in (os_arg or DEFAULT_OS).split(",") if o.strip()]
    unknown = [o for o in names if o not in osflavor.OS_NAMES]
    if not names or unknown:
        raise ProvisionError(f"--os {os_arg!r}: known: {', '.join(osflavor.OS_NAMES)} (a comma list mixes them)")
    return [names[i % len(names)] for i in range(nodes)]


def up(inventory_dir: Path, nodes: int, profile_name: str, address_base: str = DEFAULT_ADDRESS_BASE,
       log=print, os_arg: str | list[str] | None = None, fabric: dict | None = None) -> list[SimNode]:
    """Start ``nodes`` simulated nodes of ``profile_name``, each of its OS (``os_plan``), on a
    fabric (``fabric_world``; ``fabric`` may set ``leaves``, ``spines``, ``oversubscription``);
    write a self-contained hosts.yml. Raises RunnerError, ProvisionError."""
    if os.geteuid() != 0:
        raise RunnerError("the simulated rack needs root (namespaces, overlay mounts)")
    if inventory_dir.exists() and not inventory_dir.is_dir():
        raise ProvisionError(f"--inventory {inventory_dir}: not a folder")
    if is_up(inventory_dir):
        log(f"sim: rack already running in {inventory_dir} (`provision sim down` first to change it)")
        return load_nodes(inventory_dir)
    down(inventory_dir, log=lambda *_: None)
    plan = os_plan(os_arg, nodes)
    addresses = _addresses(address_base, nodes)
    profile = profiles.load(profile_name)
    names = [f"node{i + 1:02d}" for i in range(nodes)]
    world = fabric_world(profile.data, names, fabric or {})  # a fabric that cannot be built stops here
    lower = sim_base.ensure_base(log)
    sdir = state_dir(inventory_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    client_pub = keys.write_ed25519(sdir / "id_ed25519", "provision-controller")
    repo_url = repo.serve(sdir / "repo", [snapshot.OS_TARGET[o] for o in plan], log)
    os_rpm = rpmrepo.rocky_mirror(sdir / "repo/www", repo_url, sdir / "repo/work",
                                  repo.signing_gpg(sdir / "repo")) if "rocky9" in plan else None
    world_text = dump_yaml(world) if world else ""
    if world:
        (sdir / FABRIC_FILE).write_text(world_text)
        (sdir / f"{FABRIC_FILE}.healthy").write_text(world_text)
    _write_cluster_ssh(sdir, names, addresses)
    _raise_inotify_instances(nodes, log)
    cgroup_dir = cgroups.rack_folder(sdir)

    def start(index: int) -> tuple[str, SimNode]:
        name, address, node_dir = names[index], addresses[index], sdir / "nodes" / names[index]
        host_pub = _prepare_upper(node_dir / "upper", index, profile, client_pub, names, addresses)
        if world:  # one file for the rack: every writer (sim up, faults) writes the same fabric to all nodes
            _link(sdir / FABRIC_FILE, node_dir / "upper/etc/provision-sim/fabric.yaml")
        osflavor.apply(node_dir / "upper", plan[index], repo_url, os_rpm)
        return f"{name},{address} {host_pub.rsplit(' ', 1)[0]}", _start(
            node_dir, lower, name, address, sdir / "logs" / f"{name}.log", cgroup_dir / name)

    known, started = _start_all(start, nodes)
    (sdir / "known_hosts").write_text("\n".join(known) + "\n")
    (sdir / "rack.json").write_text(json.dumps(
        {"inventory": str(inventory_dir.resolve()), "profile": profile.name, "repo_url": repo_url,
         "nodes": [{"name": n.name, "address": n.address, "supervisor": n.supervisor, "cgroup": n.cgroup, "os": o}
                   for n, o in zip(started, plan)]},
        indent=1))
    with ThreadPoolExecutor(START_WORKERS) as pool:
        list(pool.map(_wait_ssh, started))
    from provision.sim.bmc import daemon as bmc_daemon

    bmc_daemon.start(sdir, started)
    _write_inventory(inventory_dir, started, plan, profile.name, repo_url)
    log(f"sim: {len(started)} node{'s' if len(started) > 1 else ''} of {profile.name} up "
        f"({addresses[0]}..{addresses[-1]}; {', '.join(sorted(set(plan)))}), package repository at {repo_url}, "
        f"state in {sdir}")
    return started


INOTIFY_INSTANCES = Path("/proc/sys/fs/inotify/max_user_instances")
# inotify instances a node's systemd, journald, logind and D-Bus hold together (about 5 measured on a node;
# 8 leaves room). The kernel's default of 128 per user (inotify(7)) is all root's on this machine: the
# 26th-odd node's systemd then fails to start ("Too many open files"), as with any systemd containers.
INOTIFY_PER_NODE = 8


def _raise_inotify_instances(nodes: int, log) -> None:
    """Raise fs.inotify.max_user_instances so that this rack's systemd nodes (beside other racks and this
    machine's own users) can boot; never lowers it. Says so when it cannot be written."""
    want = 1024 + INOTIFY_PER_NODE * nodes
    try:
        if int(INOTIFY_INSTANCES.read_text()) < want:
            INOTIFY_INSTANCES.write_text(f"{want}\n")
    except (OSError, ValueError) as exc:
        log(f"sim: warning: could not raise {INOTIFY_INSTANCES} to {want} ({exc}); nodes past the limit will "
            "not boot systemd")


def _start_all(start, nodes: int) -> tuple[list[str], list[SimNode]]:
    """``start(i)`` for every node, ``START_WORKERS`` at a time: (known_hosts lines, nodes) in node
    order. When one fails, the nodes already started are stopped before the error goes on."""
    with ThreadPoolExecutor(START_WORKERS) as pool:
        futures = [pool.submit(start, i) for i in range(nodes)]
        wait(futures)
    done = [f.result() for f in futures if f.exception() is None]
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        _kill([node for _, node in done])
        raise failed[0]  # type: ignore[misc]
    return [line for line, _ in done], [node for _, node in done]


def dump_yaml(data) -> str:
    """``data`` as block YAML in key order, with libyaml's emitter when PyYAML has it (PyYAML's own,
    pure Python, took ~1 s per node for the hardware model and the fabric at 64 nodes on 2 cores)."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=False)


def fabric_world(profile: dict, names: list[str], shape: dict) -> dict | None:
    """The rack's InfiniBand fabric (provision/sim/tools/fabricsim.py reads it): a two-layer
    fat-tree, one plane per HCA (rail), at 1:1 unless ``shape`` says otherwise, its leaves and
    spines those ``shape`` gives or sized from the switch radix of the profile's port rate
    (``synth.size``: two leaves up to radix hosts, then radix/2 hosts per leaf), cabling the HCAs
    the nodes' hardware models carry. None without HCAs."""
    hca = profile.get("hca") or {}
    if not hca.get("count") or hca.get("link_layer", "InfiniBand") != "InfiniBand":
        return None
    ports = {}
    for index, name in enumerate(names):
        model = hwmodel.build(profile, name, index)
        ports[name] = [synth.Port(h["node_guid"], h["lid"], h["name"]) for h in model["hcas"]]
    try:
        built = synth.fat_tree(names, rails=int(hca["count"]), leaves=shape.get("leaves"), spines=shape.get("spines"),
                               width_speed=_width_speed(int(hca["rate_Gbps"])),
                               oversubscription=float(shape.get("oversubscription", 1.0)), ports=ports,
                               name="sim")
    except ValueError as exc:
        raise ProvisionError(f"fabric: {exc}") from None
    return synth.world(built)


def _width_speed(rate_Gbps: int) -> str:
    try:
        return width_speed_for(rate_Gbps)
    except ValueError:
        return "4xNDR"


def _addresses(address_base: str, nodes: int) -> list[str]:
    """``nodes`` consecutive free loopback addresses from ``address_base``. Raises ProvisionError."""
    try:
        first = ipaddress.IPv4Address(address_base)
    except ValueError:
        raise ProvisionError(f"--address-base {address_base!r}: not an IPv4 address") from None
    last = int(first) + nodes - 1
    if first not in ipaddress.IPv4Network("127.0.0.0/8") or last > int(ipaddress.IPv4Address("127.255.255.254")):
        raise ProvisionError(f"--address-base {address_base}: the rack needs {nodes} loopback addresses in 127.0.0.0/8")
    addresses = [str(first + i) for i in range(nodes)]
    taken = [a for a in addresses if _port_open(a)]
    if taken:
        raise ProvisionError(f"--address-base {address_base}: something already listens on {taken[0]}:22 "
                             "(another rack?); choose another --address-base")
    return addresses


def down(inventory_dir: Path, log=print) -> int:
    """Stop every node and the package repository, delete the rack's state folder and hosts.yml
    (also a rack an older version started, whose state was inside the inventory folder). Returns
    the number of nodes stopped."""
    stopped = sum(_stop(sdir) for sdir in (state_dir(inventory_dir), state.legacy_folder(inventory_dir)))
    (inventory_dir / "hosts.yml").unlink(missing_ok=True)
    if stopped:
        log(f"sim: stopped {stopped} nodes")
    return stopped


def _stop(sdir: Path) -> int:
    """Stop the nodes and the repository of the state folder ``sdir``, then delete it."""
    if not sdir.is_dir():
        return 0
    from provision.sim.bmc import daemon as bmc_daemon

    bmc_daemon.stop(sdir)  # first: it may power a node on while the others stop
    nodes = _read_nodes(sdir)
    _kill(nodes)
    repo.stop(sdir / "repo")
    shutil.rmtree(sdir, ignore_errors=True)
    return len(nodes)


def _kill(nodes: list[SimNode]) -> None:
    """Stop each node at once (its disks are disposable, as a power cut leaves them): SIGKILL to the
    supervisor's process group (node-boot.sh and its ``unshare``, whose ``--kill-child`` then kills the
    node's PID 1 and so its whole PID namespace), then every process left in the node's cgroup
    (``cgroup.kill``, Linux 5.14), then its cgroup folders."""
    for node in nodes:
        if node.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if node.cgroup:
                    os.killpg(node.supervisor, signal.SIGKILL)
                else:  # a node of an older version: its recorded pid is its PID 1
                    os.kill(node.supervisor, signal.SIGKILL)
    for node in nodes:
        if node.cgroup:
            cgroups.kill(Path(node.cgroup))
    deadline = time.monotonic() + 10
    while any(n.alive() for n in nodes) and time.monotonic() < deadline:
        time.sleep(0.1)
    for node in nodes:
        if node.cgroup:
            cgroups.remove(Path(node.cgroup))


def status(inventory_dir: Path) -> list[dict]:
    """One row per node: name, address, pid, running, ssh port open."""
    from provision.sim.bmc import daemon as bmc_daemon

    rows = []
    daemon_up = bool(bmc_daemon.running(state_dir(inventory_dir)))
    for node in load_nodes(inventory_dir):
        bmc = bmc_daemon.address_of(node.address)
        rows.append({"name": node.name, "address": node.address, "pid": node.pid, "supervisor": node.supervisor,
                     "running": node.alive(), "ssh": _port_open(node.address), "bmc_address": bmc,
                     "bmc": daemon_up and _port_open(bmc, bmc_daemon.PORT)})
    return rows


@contextlib.contextmanager
def _rack_lock(sdir: Path):
    """Hold the rack's lock (``rack.lock`` in its state folder) while rack.json changes."""
    with open(sdir / "rack.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _named(sdir: Path, name: str) -> SimNode:
    node = next((n for n in _read_nodes(sdir) if n.name == name), None)
    if node is None:
        raise ProvisionError(f"{sdir}: no simulated node {name!r}")
    return node


def stop_node(sdir: Path, name: str) -> None:
    """Power node ``name`` of the rack in ``sdir`` off, as ``sim down`` stops a node but keeping its upper dir
    (its disk); a frozen node (``node_hung``) is thawed first so that nothing of it is left stopped."""
    with _rack_lock(sdir):
        node = _named(sdir, name)
        if node.cgroup:
            with contextlib.suppress(OSError):
                (Path(node.cgroup) / "cgroup.freeze").write_text("0")
        _kill([node])


def start_node(sdir: Path, name: str) -> SimNode:
    """Power node ``name`` of the rack in ``sdir`` on: boot it from its upper dir under a new supervisor (a new
    boot id, node-init.sh) and record that supervisor in rack.json. A node already running stays as it is.
    Raises ProvisionError, RunnerError."""
    with _rack_lock(sdir):
        node = _named(sdir, name)
        if node.alive():
            return node
        cgroup = Path(node.cgroup) if node.cgroup else cgroups.rack_folder(sdir) / name
        started = _start(sdir / "nodes" / name, sim_base.base_path(), name, node.address,
                         sdir / "logs" / f"{name}.log", cgroup)
        path = sdir / "rack.json"
        data = json.loads(path.read_text())
        for row in data["nodes"]:
            if row["name"] == name:
                row.update(supervisor=started.supervisor, cgroup=started.cgroup)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    return started


def _prepare_upper(upper: Path, index: int, profile, client_pub: str, names: list[str], addresses: list[str]) -> str:
    """Write node ``index``'s own files (its name and address: ``names[index]``, ``addresses[index]``) into its
    overlay upper dir; return its host public key line. A host key and cluster key already there
    (``_write_cluster_ssh``) are kept."""
    name, address = names[index], addresses[index]
    (upper / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    host_pub = _host_key(upper, name)
    (upper / "etc/ssh/sshd_config.d/listen.conf").write_text(f"ListenAddress {address}\n")
    (upper / "etc/hostname").write_text(name + "\n")
    hosts = ["127.0.0.1 localhost"] + [f"{a} {n}" for n, a in zip(names, addresses)]
    (upper / "etc/hosts").write_text("\n".join(hosts) + "\n")
    ssh_dir = upper / "root/.ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    ssh_dir.chmod(0o700)
    cluster_pub = ssh_dir / "id_ed25519.pub"
    trusted = [client_pub] + ([cluster_pub.read_text().strip()] if cluster_pub.is_file() else [])
    (ssh_dir / "authorized_keys").write_text("\n".join(trusted) + "\n")
    (ssh_dir / "authorized_keys").chmod(0o600)
    _write_ssh_client_config(ssh_dir)
    _write_mpi_config(upper)
    model = hwmodel.build(profile.data, name, index)
    (upper / "etc/provision-sim").mkdir(parents=True, exist_ok=True)
    text = hwmodel.dump(model)
    (upper / "etc/provision-sim/hardware.yaml").write_text(text)
    (upper.parent / "hardware.healthy.yaml").write_text(text)  # for `sim heal`
    _install_hardware_tools(upper)
    write_kernel_views(upper, model)
    return host_pub


def _host_key(upper: Path, name: str) -> str:
    """The node's host public key line: the one ``_write_cluster_ssh`` made, else a new one."""
    path = upper / "etc/ssh/ssh_host_ed25519_key"
    pub = path.with_name(path.name + ".pub")
    if path.is_file() and pub.is_file():
        return pub.read_text().strip()
    return keys.write_ed25519(path, f"root@{name}")


def _write_cluster_ssh(sdir: Path, names: list[str], addresses: list[str]) -> None:
    """What a cluster gives root (the MPI user) before nodes start: one cluster key pair, made
    once per rack in ``sdir``, in every node's ``/root/.ssh`` (``_prepare_upper`` trusts it in
    authorized_keys), every node's host key made up front, and a ``known_hosts`` naming them all,
    so that mpirun's ssh from one node to the others keeps strict host key checking."""
    cluster_key = sdir / CLUSTER_KEY
    cluster_pub = keys.write_ed25519(cluster_key, "root@cluster")
    known = []
    for name, address in zip(names, addresses):
        upper = sdir / "nodes" / name / "upper"
        (upper / "etc/ssh").mkdir(parents=True, exist_ok=True)
        host_pub = keys.write_ed25519(upper / "etc/ssh/ssh_host_ed25519_key", f"root@{name}")
        known.append(f"{name},{address} {host_pub.rsplit(' ', 1)[0]}")
    (sdir / "cluster_known_hosts").write_text("\n".join(known) + "\n")
    for name in names:
        ssh_dir = sdir / "nodes" / name / "upper/root/.ssh"
        ssh_dir.mkdir(parents=True, exist_ok=True)
        ssh_dir.chmod(0o700)
        shutil.copy(cluster_key, ssh_dir / "id_ed25519")
        (ssh_dir / "id_ed25519").chmod(0o600)
        (ssh_dir / "id_ed25519.pub").write_text(cluster_pub + "\n")
        # One file for the rack (N lines in each of N nodes would be N*N lines to write): ssh only
        # reads it, StrictHostKeyChecking being on (_write_ssh_client_config).
        _link(sdir / "cluster_known_hosts", ssh_dir / "known_hosts")


def _link(source: Path, path: Path) -> None:
    """``path`` becomes a hard link to ``source`` (one file shared by the rack's nodes)."""
    path.unlink(missing_ok=True)
    os.link(source, path)


def _write_ssh_client_config(ssh_dir: Path) -> None:
    """root's ssh client settings for node-to-node logins (mpirun's launcher is ssh)."""
    (ssh_dir / "config").write_text(
        "# Written by `provision sim up`: how root reaches the other nodes of the rack.\n"
        "Host *\n"
        "    # The cluster key every node trusts; no prompt may stall the launcher (Open MPI's ssh launch\n"
        "    # needs non-interactive logins: https://www.open-mpi.org/faq/?category=rsh#ssh-keys).\n"
        "    IdentityFile ~/.ssh/id_ed25519\n"
        "    BatchMode yes\n"
        "    # Host keys are those `sim up` listed in ~/.ssh/known_hosts; an unknown or changed key fails.\n"
        "    StrictHostKeyChecking yes\n"
        "    # OpenSSH's default post-quantum key exchange costs ~0.14 s of CPU per connection on a\n"
        "    # 2-core machine (provision/sim/README.md, \"SSH and host keys\").\n"
        "    KexAlgorithms curve25519-sha256\n")
    (ssh_dir / "config").chmod(0o600)


def _write_mpi_config(upper: Path) -> None:
    """Open MPI's system-wide MCA parameters: Debian's file from the base, plus the rack's own
    lines. The nodes share this machine's network and have only the loopback interface, which
    Open MPI leaves out by default, so its runtime (OOB) and TCP transport (BTL) must use it."""
    debian = sim_base.base_path() / MPI_PARAMS
    lines = [debian.read_text().rstrip("\n")] if debian.is_file() else []
    lines += [
        "",
        "# Written by `provision sim up`. The nodes' only interface is the shared loopback, which",
        "# Open MPI leaves out by default (btl_tcp_if_exclude = 127.0.0.1/8,sppp), so the runtime's",
        "# out-of-band channel and the TCP transport are told to use it (Open MPI 4.1, Debian 12's):",
        "# https://www.open-mpi.org/faq/?category=tcp#tcp-lo, .../faq/?category=tcp#tcp-selection",
        "oob_tcp_if_include = lo",
        "btl_tcp_if_include = lo",
    ]
    path = upper / MPI_PARAMS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write_kernel_views(root: Path, model: dict) -> None:
    """Files the kernel would show under /proc, written where the sim site reads them
    (``provision_storage.bonding_dir`` and ``nvidia_imex_proc_devices`` in provision/sim/site.yml): the bond
    status from the model, and the nvidia module's character devices on a GPU node; and the views node-init.sh
    bind-mounts over /proc/cmdline, /proc/modules, the cpufreq policies and the IOMMU groups (``kernelviews``),
    rewritten in place so that a running node sees a fault at once."""
    kernelviews.write(root, model)
    if any(g for g in model.get("gpus") or ()):
        # The nvidia module's character devices as /proc/devices lists them once it is loaded (majors are the
        # kernel's to assign: fixed here), read by the nvidia_imex role to make IMEX channel 0 (SIM_PROC_DEVICES).
        devices = root / SIM_PROC_DEVICES.lstrip("/")
        devices.parent.mkdir(parents=True, exist_ok=True)
        devices.write_text("Character devices:\n" + "".join(f"{major:3d} {name}\n" for major, name in NVIDIA_MAJORS))
    bonding = _tool_module("bonding")
    bond = (model.get("storage") or {}).get("bond")
    if bond:
        folder = root / SIM_BONDING_DIR.lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / bond["name"]).write_text(bonding.render(model, bond["name"]))


def _install_hardware_tools(upper: Path) -> None:
    """The parts of the simulation that stand for hardware and kernel, not for packages."""
    lib = upper / "usr/lib/provision-sim"
    lib.mkdir(parents=True, exist_ok=True)
    for module in TOOLS_DIR.glob("*.py"):  # simhw and the tools' shared formatters
        if module.name != "__init__.py":
            shutil.copy(module, lib / module.name)
    bindir = upper / "usr/local/bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for tool, command in repo.HARDWARE_TOOLS.items():
        src = TOOLS_DIR / f"{tool}.py"
        if src.is_file():
            shutil.copy(src, bindir / command)
            (bindir / command).chmod(0o755)


@functools.cache
def _tool_module(name: str):
    """Import a simulated tool's module from provision/sim/tools (not a package: the tools run
    as scripts inside the nodes)."""
    spec = importlib.util.spec_from_file_location(f"provision_sim_tool_{name}", TOOLS_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start(node_dir: Path, lower: Path, name: str, address: str, log_path: Path, cgroup: Path,
           prefix: tuple[str, ...] = ()) -> SimNode:
    """Boot one node under its supervisor (node-boot.sh) in ``cgroup``; ``prefix`` runs the supervisor
    (e.g. ``nsenter --net=...``). Returns once its PID 1 exists. Raises RunnerError."""
    for sub in ("upper", "work", "merged"):
        (node_dir / sub).mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cgroup.mkdir(parents=True, exist_ok=True)
    memcg = cgroups.memory_folder(cgroup)
    argv = [*prefix, "/bin/sh", str(BOOT_SCRIPT), str(cgroup), str(memcg or ""), str(INIT_SCRIPT), str(lower),
            str(node_dir / "upper"), str(node_dir / "work"), str(node_dir / "merged"), name, SIM_PROC_DEVICES]
    with open(log_path, "ab") as out:
        proc = external.popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    node = SimNode(name, address, proc.pid, str(cgroup))
    try:
        _child_pid(_child_pid(proc.pid))
    except RunnerError:
        # not registered in the rack, so `sim down` would never stop it: its sshd kept the address
        # and the next rack on it was refused ("something already listens")
        _kill([node])
        proc.wait()
        raise
    return node


def _child_pid(parent: int, timeout_s: float = 300.0) -> int:
    """The node's PID 1: the child ``unshare --fork`` made. The bound only catches a hang: at load
    100 on 2 cores (a 1,024-node rack starting beside other work) ``unshare`` took more than 5 s to
    be scheduled and fork, and the rack failed to start."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pids = _read_children(parent)
        except OSError:
            raise RunnerError(f"simulated node process {parent} exited at start") from None
        if pids:
            return pids[0]
        time.sleep(0.02)
    raise RunnerError(f"simulated node process {parent} made no child in {timeout_s} s")


def _port_open(address: str, port: int = 22) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def _wait_ssh(node: SimNode) -> None:
    deadline = time.monotonic() + SSH_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if _port_open(node.address):
            return
        if not node.alive():
            break
        time.sleep(0.05)
    raise RunnerError(f"simulated node {node.name}: sshd did not answer on {node.address}:22 "
                      f"(log: {node.name}.log in the rack's state folder, logs/)")


# A node's OS as `provision plan` names targets (NVIDIA's repository folders): Rocky 9 installs from rhel9.
PLAN_TARGETS = {"rocky9": "rhel9"}


def _write_inventory(inventory_dir: Path, nodes: list[SimNode], plan: list[str], profile: str,
                     repo_url: str) -> None:
    """hosts.yml that reaches the rack on its own: connection, known_hosts and the rack's site
    settings (``site.yml``) are in it, so a rack started with ``--inventory DIR`` needs nothing else."""
    sdir = state_dir(inventory_dir).resolve()
    site = yaml.safe_load(SITE_VARS.read_text())
    data = {"all": {
        "vars": {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(sdir / "id_ed25519"),
            "provision_known_hosts_file": str(sdir / "known_hosts"),
            "provision_profile": profile,
            "provision_sim_repo_url": repo_url,
            **site,
        },
        "children": {"gpu_nodes": {"hosts": {n.name: {"ansible_host": n.address, "provision_sim_os": o,
                                                      "provision_os": PLAN_TARGETS.get(o, o),
                                                      **nvlink_domain_vars(profile, i), **bmc_vars(sdir, n)}
                                             for i, (n, o) in enumerate(zip(nodes, plan))}}},
    }}
    header = "---\n# Written by `provision sim up`: the simulated rack now running. Do not edit.\n"
    (inventory_dir / "hosts.yml").write_text(header + yaml.dump(data, Dumper=_InventoryDumper, sort_keys=False,
                                                                width=INVENTORY_WIDTH))


def bmc_vars(sdir: Path, node: SimNode) -> dict:
    """The host vars that reach ``node``'s simulated BMC (provision/sim/bmc/daemon.py): Redfish at its BMC address,
    user admin, the rack's password file and CA, and where the node keeps its boot id; {} for a rack without BMCs
    (no ``bmc/password`` in its state folder: ``bmc_daemon.start`` writes it before the inventory)."""
    from provision.sim.bmc import daemon as bmc_daemon

    folder = bmc_daemon.folder(sdir)
    if not (folder / "password").is_file():
        return {}
    return {"provision_bmc_address": bmc_daemon.address_of(node.address), "provision_bmc_protocol": "redfish",
            "provision_bmc_username": "admin", "provision_bmc_password_file": str(folder / "password"),
            "provision_bmc_ca_file": str(folder / "ca.pem"), "provision_boot_id_path": "/run/provision-sim/boot_id"}


def nvlink_domain_vars(profile: str, index: int) -> dict:
    """The host var the nvidia_imex role groups trays by: ``provision_nvlink_domain``, the name of node ``index``'s
    NVLink domain (``hwmodel.nvlink_domain``: consecutive nodes, 18 trays a GB200 NVL72 domain); {} where the
    profile has none."""
    domain = hwmodel.nvlink_domain(profiles.load(profile).data, index)
    return {} if domain is None else {"provision_nvlink_domain": f"nvl{domain:03d}"}


# The written inventory lints as the project's own YAML (`make lint` after `make provision`; .yamllint):
# lists are indented under their key, and long plain values fold at a space. PyYAML breaks a line at
# the first space past this column, so lines run up to a few words longer: 100 keeps them under
# yamllint's 160 (tests/unit/sim/test_inventory_file.py).
INVENTORY_WIDTH = 100


class _InventoryDumper(yaml.SafeDumper):
    """SafeDumper that indents a list under its key, as yamllint's ``indentation`` rule
    (``indent-sequences: true``, its default) wants; PyYAML writes such lists flush with the key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)
