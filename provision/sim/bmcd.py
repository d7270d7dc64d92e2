"""The simulated rack's BMC daemon process (``python -m provision.sim.bmcd STATE_DIR [PORT]``, started and stopped by
``provision.sim.bmc.daemon``): every node's BMC of the rack in STATE_DIR, Redfish on PORT (443) and IPMI on UDP 623
of the node's BMC address, each powering its node through the rack (``RackPower``: ``rack.stop_node`` and
``rack.start_node``). It sits beside ``rack``, above ``provision.sim.bmc``: the rack starts the daemon by name, and
the daemon's power reaches the rack, with no import cycle between them.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import yaml

from provision.sim import rack
from provision.sim.bmc.daemon import MODEL, PORT, Cached, address_of, folder, password
from provision.sim.bmc.node import BmcNode
from provision.sim.bmc.power import Switch
from provision.sim.bmc.sel import Sel
from provision.sim.bmc.service import BmcServer, context


class RackPower:
    """The power of node ``name`` of the rack whose state folder is ``sdir``: off stops its supervisor and cgroup
    (keeping its upper dir), on boots it again with a new boot id (``rack.start_node``)."""

    def __init__(self, sdir: Path, name: str) -> None:
        self.sdir, self.name = sdir, name

    def state(self) -> str:
        node = next((n for n in rack._read_nodes(self.sdir) if n.name == self.name), None)
        return "On" if node is not None and node.alive() else "Off"

    def on(self) -> None:
        rack.start_node(self.sdir, self.name)

    def off(self) -> None:
        rack.stop_node(self.sdir, self.name)



def bmc_nodes(sdir: Path) -> list[tuple[BmcNode, str]]:
    """(BMC, address) of every node of the rack in ``sdir``."""
    secret = password(sdir)
    faults = Cached(sdir / "faults.json", json.loads, {})
    out = []
    for node in rack._read_nodes(sdir):
        model = Cached(sdir / "nodes" / node.name / MODEL, yaml.safe_load, {})
        sel = Sel(folder(sdir), node.name)
        uuid = str((model.get().get("system") or {}).get("uuid") or "00000000-0000-0000-0000-000000000000")

        def active(name: str = node.name) -> dict:
            return {r["kind"]: r for r in (faults.get().get(name) or [])}

        out.append((BmcNode(node.name, model.get, Switch(RackPower(sdir, node.name), sel), sel, active, secret, uuid),
                    address_of(node.address)))
    return out


def _reap() -> None:
    """Reap the node supervisors this daemon booted (their exit status is of no use here)."""
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        time.sleep(0.2)


def serve(sdir: Path, port: int = PORT) -> list[BmcServer]:
    """Start every BMC of the rack in ``sdir`` in threads; return their servers."""
    servers = []
    bmc_dir = folder(sdir)
    for bmc, address in bmc_nodes(sdir):
        contexts = (context(str(bmc_dir / f"{bmc.name}.pem"), str(bmc_dir / f"{bmc.name}.key")),
                    context(str(bmc_dir / f"{bmc.name}-expired.pem"), str(bmc_dir / f"{bmc.name}-expired.key")))
        server = BmcServer(bmc, address, port, contexts)
        threading.Thread(target=server.serve_forever, name=f"bmc-{bmc.name}", daemon=True).start()
        servers.append(server)
    return servers


def main(argv: list[str]) -> int:
    sdir, port = Path(argv[0]), int(argv[1]) if len(argv) > 1 else PORT
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    threading.Thread(target=_reap, name="reaper", daemon=True).start()
    servers = serve(sdir, port)
    print(f"bmc daemon: {len(servers)} BMCs on port {port}", flush=True)
    try:
        from provision.sim.bmc import ipmi

        ipmi.serve([s.bmc for s in servers], [str(s.server_address[0]) for s in servers])
    except (ImportError, OSError) as exc:  # the Redfish BMCs still serve
        print(f"bmc daemon: no IPMI endpoint ({exc})", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
