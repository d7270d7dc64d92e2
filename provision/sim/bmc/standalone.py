"""One simulated BMC over a hardware model alone, without a rack: the Redfish service of ``service`` with a power
controller of the caller's choice (``power.FakePower`` by default) and faults from a dict the caller changes. For
fast tests of the service and its clients (DMTF's service validator, ``provision.bmc``) and for trying a client by
hand: ``python -m provision.sim.bmc.standalone ADDRESS PORT FOLDER`` serves an H100 node's BMC, its CA in FOLDER.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

from provision.sim.bmc import tls
from provision.sim.bmc.power import FakePower, PowerController, Switch
from provision.sim.bmc.sel import Sel
from provision.sim.bmc.node import BmcNode
from provision.sim.bmc.service import BmcServer, context


def serve(model: dict, address: str, folder: Path, password: str, power: PowerController | None = None,
          faults: dict | None = None, port: int = 0) -> BmcServer:
    """Start the BMC of the node ``model`` describes on ``address``:``port`` (0: a free port, see
    ``server.server_address``) in a thread; its CA (ca.pem), certificates, SEL and log go to ``folder``.
    ``faults`` (kind -> record) is read on every request: add or remove kinds to inject or heal."""
    name = str(model.get("hostname", "node01"))
    cert, key = tls.issue(folder, name, address)
    old_cert, old_key = tls.issue(folder, name, address, expired=True)
    sel = Sel(folder, name)
    active = faults if faults is not None else {}
    node = BmcNode(name, lambda: model, Switch(power or FakePower(), sel), sel, lambda: active, password,
                   str((model.get("system") or {}).get("uuid") or "00000000-0000-0000-0000-000000000000"))
    server = BmcServer(node, address, port, (context(str(cert), str(key)), context(str(old_cert), str(old_key))))
    threading.Thread(target=server.serve_forever, name=f"bmc-{name}", daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    from provision import profiles
    from provision.sim import hwmodel

    address, port, folder = argv[0], int(argv[1]), Path(argv[2])
    model = hwmodel.build(profiles.load("h100-sxm5-80g-ndr").data, "node01", 0)
    server = serve(model, address, folder, "admin-password", port=port)
    print(f"BMC at https://{address}:{server.server_address[1]} (admin / admin-password, CA {folder / 'ca.pem'})",
          flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
