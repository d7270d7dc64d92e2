"""The rack's BMC daemon: one process per rack (``sim up`` starts it detached, ``sim down`` stops it) serving every
node's BMC on its own loopback address, Redfish over HTTPS on port 443 (and IPMI LAN on UDP 623, ``ipmi``).

Node 127.A.B.N has its BMC at 127.(A+100).B.N (``address_of``). The daemon reads each request's truth from the
rack's state folder: the node's hardware model in its upper dir, the rack's ``faults.json``, the node's SEL
(``bmc/<node>.sel.jsonl``); it powers nodes with ``rack.stop_node``/``rack.start_node`` and so owns the node
processes it boots (it reaps them). Files in ``<state>/bmc/``: ca.pem/ca.key (the rack CA), <node>.pem/.key and
<node>-expired.pem/.key, password (mode 0600), daemon.pid, daemon.log, <node>.log, <node>.sel.jsonl.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

from provision.errors import ProvisionError, RunnerError
from provision.sim.bmc import tls

PORT = 443
FOLDER = "bmc"
READY_TIMEOUT_S = 30.0
MODEL = "upper/etc/provision-sim/hardware.yaml"


def address_of(node_address: str) -> str:
    """The BMC address of the node at ``node_address``: 127.A.B.N -> 127.(A+100).B.N, A+100 taken modulo 256 for
    A above 155 (test racks draw A up to 249; such a BMC shares no address:port with a node, whose services are not
    on 443 or 623). Raises ProvisionError for an address outside 127.0.0.0/8."""
    try:
        address = ipaddress.IPv4Address(node_address)
    except ValueError:
        address = None
    if address is None or address not in ipaddress.IPv4Network("127.0.0.0/8"):
        raise ProvisionError(f"{node_address}: a simulated node's address is in 127.0.0.0/8")
    octets = node_address.split(".")
    return ".".join([octets[0], str((int(octets[1]) + 100) % 256), *octets[2:]])


def folder(sdir: Path) -> Path:
    return sdir / FOLDER


def password(sdir: Path) -> str:
    """The rack's BMC password (``bmc/password``, mode 0600), made once: 20 characters, the most IPMI v2.0 takes."""
    path = folder(sdir) / "password"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(15) + "\n")
    return path.read_text().splitlines()[0]


def start(sdir: Path, nodes: list, port: int = PORT) -> None:
    """Start the rack's BMC daemon (detached, its own session, log in ``bmc/daemon.log``) once its CA, the BMCs'
    certificates and the password exist; return when every BMC accepts connections. Raises RunnerError."""
    bmc_dir = folder(sdir)
    bmc_dir.mkdir(parents=True, exist_ok=True)
    password(sdir)
    for node in nodes:
        for expired in (False, True):
            tls.issue(bmc_dir, node.name, address_of(node.address), expired)
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    with open(bmc_dir / "daemon.log", "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "provision.sim.bmcd", str(sdir), str(port)],
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    (bmc_dir / "daemon.pid").write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = [address_of(n.address) for n in nodes]
    while waiting and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunnerError(f"the rack's BMC daemon exited at start (log: {bmc_dir / 'daemon.log'})")
        waiting = [a for a in waiting if not _accepts(a, port)]
        time.sleep(0.05)
    if waiting:
        raise RunnerError(f"BMC {waiting[0]}:{port} did not answer in {READY_TIMEOUT_S:.0f} s "
                          f"(log: {bmc_dir / 'daemon.log'})")


def running(sdir: Path) -> int:
    """The daemon's PID while it runs, else 0."""
    try:
        pid = int((folder(sdir) / "daemon.pid").read_text())
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return 0
    return pid if state not in ("Z", "X") else 0


def stop(sdir: Path) -> None:
    """Stop the rack's BMC daemon (SIGTERM, then SIGKILL after 5 s); the nodes it booted keep running."""
    pid = running(sdir)
    if not pid:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while running(sdir) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        if running(sdir):
            os.kill(pid, signal.SIGKILL)


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


class Cached:
    """A file's parsed content, parsed again only when its mtime changes."""

    def __init__(self, path: Path, parse, default) -> None:
        self.path, self.parse, self.default = path, parse, default
        self.stamp: float | None = None
        self.value = default

    def get(self):
        try:
            stamp = self.path.stat().st_mtime_ns
        except OSError:
            return self.default
        if stamp != self.stamp:
            with contextlib.suppress(OSError, ValueError, yaml.YAMLError):
                self.value, self.stamp = self.parse(self.path.read_text()), stamp
        return self.value
