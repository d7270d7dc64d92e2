"""A real Slurm on this machine for the tests: Debian's slurm-wlm and munge, nothing simulated.

munged runs with a key generated for the cluster and its own socket; slurmctld listens on 127.0.0.1;
one slurmd per node runs here too (``slurmd -N <node>``: Debian's build has multiple-slurmd support),
each on its own port, with ``NodeAddr`` the node's loopback address. Every daemon runs in the
foreground as a child of the test (stopped by its PID), and its config, keys, state, spool, logs and
sockets are in one folder. ProctrackType=proctrack/linuxproc and TaskPlugin=task/none: no cgroups
and no systemd are needed. RebootProgram=/bin/false lets ``scontrol reboot`` be requested (and cancelled); a reboot
issued would fail, never reboot this machine. slurm.conf(5): https://slurm.schedmd.com/slurm.conf.html; munged(8).

Measured on a 2-core machine: munged up in 0.02 s, slurmctld answering in about 1 s, every slurmd
registered (state IDLE) in about 2 s.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from provision.slurm.scontrol import NodeState, parse_show_node

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "scontrol")
CONF = """\
ClusterName=provtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={folder}/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool/%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/spool/%n/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
RebootProgram=/bin/false
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=60
{nodes}
PartitionName=burn Nodes=ALL Default=YES State=UP
"""


def missing() -> str | None:
    """Why no Slurm can start here (a daemon or command not installed), else None."""
    absent = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    return f"Slurm or munge is not installed ({', '.join(absent)} missing: make test installs slurmctld slurmd " \
           "slurm-client munge)" if absent else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SlurmCluster:
    """A running cluster: ``env`` makes a Slurm client use it (SLURM_CONF)."""

    folder: Path
    nodes: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def scontrol(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30,
                              env={**os.environ, **self.env})

    def states(self) -> dict[str, NodeState]:
        return parse_show_node(self.scontrol("show", "node", "-o").stdout)

    def node(self, name: str) -> NodeState:
        return self.states()[name]

    def wait_idle(self, timeout_s: float = 60) -> None:
        """Until every node is IDLE (its slurmd registered). Raises AssertionError with the logs."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            states = self.states() if self.scontrol("ping").returncode == 0 else {}
            if len(states) == len(self.nodes) and all(s.words == {"IDLE"} for s in states.values()):
                return
            time.sleep(0.3)
        logs = "\n".join(p.read_text()[-1500:] for p in sorted((self.folder / "log").glob("*.log")))
        raise AssertionError(f"Slurm nodes not idle after {timeout_s} s: {self.states()}\n{logs}")


def _config(folder: Path, nodes: dict[str, str]) -> str:
    lines = [f"NodeName={name} NodeAddr={address} Port={free_port()} CPUs=1 RealMemory=1 State=UNKNOWN"
             for name, address in nodes.items()]
    return CONF.format(folder=folder, ctld_port=free_port(), slurmd_port=free_port(), nodes="\n".join(lines))


def _start(cluster: SlurmCluster, argv: list[str]) -> None:
    log = open(cluster.folder / "log" / f"{Path(argv[0]).name}.{len(cluster.procs)}.out", "w")
    with log:
        cluster.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              env={**os.environ, **cluster.env}, start_new_session=True))


@contextlib.contextmanager
def slurm_cluster(folder: Path, nodes: dict[str, str]):
    """Start munged, slurmctld and a slurmd per node of ``nodes`` (NodeName -> loopback address) with
    everything in ``folder``; yield the SlurmCluster once every node is IDLE; stop them all."""
    for sub in ("munge", "state", "log", *(f"spool/{n}" for n in nodes)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(folder / "munge", 0o755)  # munged wants its socket's folder searchable by all
    (folder / "slurm.conf").write_text(_config(folder, nodes))
    cluster = SlurmCluster(folder, nodes, {"SLURM_CONF": str(folder / "slurm.conf"),
                                           "MUNGE_SOCKET": str(folder / "munge/munge.socket")})
    key = folder / "munge/munge.key"
    subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, timeout=30)
    try:
        _start(cluster, ["munged", "--foreground", "--force", f"--socket={folder}/munge/munge.socket",
                         f"--key-file={key}", f"--pid-file={folder}/munge/munged.pid",
                         f"--log-file={folder}/log/munged.log", f"--seed-file={folder}/munge/munged.seed"])
        _wait_for(folder / "munge/munge.socket")
        _start(cluster, ["slurmctld", "-D", "-i"])
        for name in nodes:
            _start(cluster, ["slurmd", "-D", "-N", name])
        cluster.wait_idle()
        yield cluster
    finally:
        for proc in reversed(cluster.procs):
            proc.terminate()
        for proc in reversed(cluster.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def _wait_for(path: Path, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.05)
