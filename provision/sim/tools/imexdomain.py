"""The node's IMEX domain as its files and its peers' daemons show it (stdlib only), for the simulated nvidia-imex
daemon, nvidia-imex-ctl, all_reduce_perf over MNNVL and mnubergemm.

Installed inside each node as ``/usr/lib/provision-sim/imexdomain.py``. Nothing here is declared: a peer's daemon
is READY when its TCP port answers, this node's when its process runs, channel 0 when its device node exists.

- ``/etc/nvidia-imex/config.cfg`` (env ``PROVISION_SIM_IMEX_CONFIG``): ``SERVER_PORT``, "TCP port number for the IMEX
  internal communication/IPC", default 50000; ``BIND_INTERFACE_IP``, empty by default: the daemon "will
  automatically try to find an IP address in the IMEX_NODE_CONFIG_FILE that matches the IP addresses available via
  the system interface list"; ``IMEX_NODE_CONFIG_FILE``, default ``/etc/nvidia-imex/nodes_config.cfg`` (NVIDIA IMEX
  guide, "IMEX Service Config Options", https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html).
  The nodes share this machine's loopback, where every node's address is local, so this node's own address is the
  one whose /etc/hosts name is the model's ``hostname``.
- nodes_config.cfg (env ``PROVISION_SIM_IMEX_NODES``): one address per line (the same guide).
- IMEX channel 0: ``/dev/nvidia-caps-imex-channels/channel0`` (env ``PROVISION_SIM_IMEX_CHANNELS`` moves the
  folder), the device the nvidia_imex role makes with mknod (NVIDIA IMEX guide, "IMEX Channels").
- The daemon's pid file ``/run/nvidia-imex/nvidia-imex.pid`` (env ``PROVISION_SIM_IMEX_PID``), written by the
  simulated daemon (daemon.py).
"""
from __future__ import annotations

import os
import socket

CONFIG = "/etc/nvidia-imex/config.cfg"
NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
SERVER_PORT = 50000  # the IMEX guide's default SERVER_PORT
CHANNELS_DIR = "/dev/nvidia-caps-imex-channels"
IMEX_PID = "/run/nvidia-imex/nvidia-imex.pid"
# How long a peer's daemon may take to accept: on the shared loopback a stopped daemon refuses at once, so the
# timeout only bounds an address nothing routes to.
CONNECT_TIMEOUT_S = 1.0
# Why MNNVL cannot share memory on this node (mnnvl_problem's kinds).
DAEMON_DOWN, CHANNEL_MISSING, PEER_UNREACHABLE = "daemon_down", "channel_missing", "peer_unreachable"


def config() -> dict[str, str]:
    """config.cfg's ``KEY=value`` settings ({} where the file is missing)."""
    out: dict[str, str] = {}
    try:
        with open(os.environ.get("PROVISION_SIM_IMEX_CONFIG", CONFIG), encoding="utf-8") as fh:
            for line in fh:
                key, sep, value = line.split("#", 1)[0].partition("=")
                if sep and key.strip():
                    out[key.strip()] = value.strip()
    except OSError:
        pass
    return out


def server_port(settings: dict[str, str] | None = None) -> int:
    """The daemons' TCP port: config.cfg's SERVER_PORT, else the guide's default."""
    text = (config() if settings is None else settings).get("SERVER_PORT", "")
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else SERVER_PORT


def addresses() -> list[str] | None:
    """nodes_config.cfg's addresses in order (None where the file is missing)."""
    path = os.environ.get("PROVISION_SIM_IMEX_NODES") or config().get("IMEX_NODE_CONFIG_FILE") or NODES_CONFIG
    try:
        with open(path, encoding="utf-8") as fh:
            return [ln.split("#", 1)[0].strip() for ln in fh if ln.split("#", 1)[0].strip()]
    except OSError:
        return None


def host_names() -> dict[str, str]:
    """address -> its first name in /etc/hosts (env ``PROVISION_SIM_HOSTS``)."""
    names: dict[str, str] = {}
    try:
        with open(os.environ.get("PROVISION_SIM_HOSTS", "/etc/hosts"), encoding="utf-8") as fh:
            for line in fh:
                fields = line.split("#", 1)[0].split()
                if len(fields) >= 2:
                    names.setdefault(fields[0], fields[1])
    except OSError:
        pass
    return names


def own_address(model: dict, listed: list[str] | None = None) -> str | None:
    """This node's IMEX address: config.cfg's BIND_INTERFACE_IP, else the listed address named as the model's
    hostname."""
    bind = config().get("BIND_INTERFACE_IP", "")
    if bind:
        return bind
    names = host_names()
    hostname = model.get("hostname")
    return next((a for a in (addresses() if listed is None else listed) or () if hostname and names.get(a) == hostname),
                None)


def answers(address: str, port: int | None = None, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether an IMEX daemon accepts a TCP connection at ``address``."""
    try:
        with socket.create_connection((address, server_port() if port is None else port), timeout=timeout_s):
            return True
    except OSError:
        return False


def daemon_running() -> bool:
    """Whether this node's nvidia-imex daemon runs (its pid file names a live process)."""
    try:
        with open(os.environ.get("PROVISION_SIM_IMEX_PID", IMEX_PID), encoding="utf-8") as fh:
            os.kill(int(fh.read().strip()), 0)
    except (OSError, ValueError):
        return False
    return True


def channel0() -> bool:
    """Whether IMEX channel 0's device node exists in this node."""
    return os.path.exists(os.path.join(os.environ.get("PROVISION_SIM_IMEX_CHANNELS", CHANNELS_DIR), "channel0"))


def mnnvl_problem(model: dict, peers: list[str] | None = None) -> tuple[str, str] | None:
    """Why this node cannot share GPU memory over MNNVL, as (kind, detail), or None: its own daemon not running
    (a fabric handle needs it), channel 0 missing (no FABRIC allocation without a channel), or the daemon of a peer
    of the job not answering (its handles cannot be imported). ``peers`` are the job's other nodes (addresses or
    names as /etc/hosts gives them); None: every other node of nodes_config.cfg."""
    if not daemon_running():
        return DAEMON_DOWN, f"{model.get('hostname') or 'this node'}: nvidia-imex is not running"
    if not channel0():
        return CHANNEL_MISSING, f"{os.environ.get('PROVISION_SIM_IMEX_CHANNELS', CHANNELS_DIR)}/channel0 missing"
    listed = addresses() or []
    own = own_address(model, listed)
    names = host_names()
    if peers is None:
        peers = [a for a in listed if a != own]
    by_name = {n: a for a, n in names.items()}
    port = server_port()
    for peer in peers:
        address = peer if peer in listed else by_name.get(peer, peer)
        if address == own or peer == model.get("hostname"):
            continue
        if address not in listed or not answers(address, port):
            return PEER_UNREACHABLE, f"IMEX daemon of {names.get(address, peer)} ({address}:{port}) not answering"
    return None
