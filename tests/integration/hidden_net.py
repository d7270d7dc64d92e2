"""Simulated nodes the controller cannot reach: a network namespace of their own.

Every simulated node shares this machine's network, and every loopback connection comes from
127.0.0.1, so no sshd can tell a bastion from the controller by address. ``Netns`` is a network
namespace with only its own loopback; ``move_into`` restarts rack nodes inside it (same overlay
state, same host keys; rack.json records their new supervisor so `sim down` stops them); ``Forward``
is the network's edge: it accepts on this machine's ``address:22`` and connects to the same
address inside the namespace (the one way in, as a site's firewall forwards to its bastion).
Only 127.0.0.0/8 is used, on both sides.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from provision.sim import base as sim_base
from provision.sim import rack

CLONE_NEWNET = 0x40000000  # <sched.h>
_libc = ctypes.CDLL(None, use_errno=True)


class Netns:
    def __init__(self, name: str):
        self.name, self.path = name, f"/run/netns/{name}"

    def __enter__(self) -> Netns:
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        subprocess.run(["ip", "-n", self.name, "link", "set", "lo", "up"], check=True)
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], check=False)

    def connect(self, address: str, port: int = 22, timeout_s: float = 5.0) -> socket.socket:
        """A TCP connection made inside the namespace (setns in a thread of its own: a thread's
        network namespace is its own, and the socket keeps the namespace it was made in)."""
        made: dict = {}

        def inside() -> None:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns")
                made["sock"] = socket.create_connection((address, port), timeout=timeout_s)
            except OSError as exc:
                made["error"] = exc
            finally:
                os.close(fd)

        thread = threading.Thread(target=inside)
        thread.start()
        thread.join()
        if "error" in made:
            raise made["error"]
        made["sock"].settimeout(None)
        return made["sock"]


def move_into(inventory_dir: Path, names: list[str], netns: Netns) -> None:
    """Restart the rack's nodes ``names`` inside ``netns`` and wait for their sshd there."""
    sdir = rack.state_dir(inventory_dir)
    data = json.loads((sdir / "rack.json").read_text())
    lower = sim_base.base_path()
    for entry in data["nodes"]:
        if entry["name"] not in names:
            continue
        old = rack.SimNode(entry["name"], entry["address"], int(entry["supervisor"]), entry["cgroup"])
        rack._kill([old])
        node_dir = sdir / "nodes" / entry["name"]
        node = rack._start(node_dir, lower, entry["name"], entry["address"], sdir / "logs" / f"{entry['name']}.log",
                           Path(entry["cgroup"]), prefix=("nsenter", f"--net={netns.path}"))
        entry["supervisor"] = node.supervisor
    (sdir / "rack.json").write_text(json.dumps(data, indent=1))
    for entry in data["nodes"]:
        if entry["name"] in names:
            _wait(lambda a=entry["address"]: netns.connect(a, timeout_s=0.5).close())


def _wait(attempt, timeout_s: float = rack.SSH_READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            attempt()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Forward:
    """``address:port`` on this machine forwarded to the same inside ``netns``; ``close`` cuts it."""

    def __init__(self, netns: Netns, address: str, port: int = 22):
        self.netns, self.target = netns, (address, port)
        self.listener = socket.create_server((address, port))
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                outside, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                inside = self.netns.connect(*self.target)
            except OSError:
                outside.close()
                continue
            self.open += [outside, inside]
            for a, b in ((outside, inside), (inside, outside)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone does not
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
