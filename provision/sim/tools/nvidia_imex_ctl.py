#!/usr/bin/python3
"""Simulated ``nvidia-imex-ctl -N [-j] [-H]``: the IMEX domain's status from its daemons.

The domain is the one the real tool reads: the addresses of /etc/nvidia-imex/nodes_config.cfg (the IMEX role
writes it from the inventory; env ``PROVISION_SIM_IMEX_NODES`` overrides the path), named from /etc/hosts for
``-H``; this node is the address whose name is the model's ``hostname`` (``imexdomain``). Its own entry is READY
only while its nvidia-imex daemon runs (the pid file the simulated service writes, ``PROVISION_SIM_IMEX_PID``);
a peer is READY when its daemon accepts a TCP connection at the peer's address and IMEX's SERVER_PORT (config.cfg,
default 50000: NVIDIA IMEX guide, "IMEX Service Config Options",
https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html), which the simulated daemon listens on
(tools/daemon.py); a refused or unreachable peer is UNAVAILABLE, and the matrix shows "I" ("Node wasn't
reachable, no connection status available") toward it. The model's ``imex_faults.disconnected`` (pairs [from, to,
legend code], e.g. [2, 9, "D"]) marks a connection lost between two READY daemons, which no daemon here can
produce. A model's ``imex`` block ({``nodes``: [{host, hostname, status}], ``version``, ``self``,
``disconnected``}) replaces all of that (the captures of tests/data/imex are printed from such blocks).

Formats (see provision/parsers/imex_ctl.py for their sources): the text form with the Connectivity Table
Legend of nvidia-imex 570.172, ``Node #i - <ip> - <STATUS> - Version: <v>``, the matrix and
``Domain State: UP``; the ``-j`` JSON of NVIDIA/DCGM's IMEX tests (nodes by index with status, host,
hostName, version, changed and connections; timestamp; status UP/DEGRADED/DOWN). With no ``imex`` block
it prints DCGM's configuration error ("Failed to read node configuration file") and exits 1.
"""
from __future__ import annotations

import json
import os
import sys

LEGEND = ("Connectivity Table Legend:\n"
          "I - Invalid - Node wasn't reachable, no connection status available\n"
          "N - Never Connected\n"
          "R - Recovering - Connection was lost, but clean up has not yet been triggered.\n"
          "D - Disconnected - Connection was lost, and clean up has been triggreed.\n"  # sic, as printed
          "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.\n"
          "!V! - Version mismatch, communication disabled.\n"
          "!M! - Node map mismatch, communication disabled.\n"
          "C - Connected - Ready for operation\n")
TIMESTAMP = "12/2/2026 20:00:00.000"  # fixed: captures are remade byte for byte
# The JSON word of a connection: CONNECTED is the word NVIDIA/DCGM's sample shows; the others are this
# simulator's spelling of the legend (no published JSON shows them); the check reads anything else as not connected.
JSON_WORDS = {"C": "CONNECTED", "D": "DISCONNECTED", "N": "NEVER_CONNECTED", "R": "RECOVERING", "I": "INVALID",
              "A": "AUTHENTICATING", "!V!": "VERSION_MISMATCH", "!M!": "NODE_MAP_MISMATCH"}


def cells(imex: dict) -> dict[int, dict[int, str]]:
    """from -> to -> legend letter; a node that is not READY answers for none and is reached by none."""
    nodes = imex["nodes"]
    ready = {i for i, n in enumerate(nodes) if n["status"] == "READY"}
    cut = {(a, b): code for a, b, code in imex.get("disconnected") or ()}
    return {a: {b: cut.get((a, b), "C" if b in ready else "I") for b in range(len(nodes))}
            for a in range(len(nodes)) if a in ready}


def domain_state(imex: dict) -> str:
    statuses = [n["status"] for n in imex["nodes"]]
    if all(s == "READY" for s in statuses) and not imex.get("disconnected"):
        return "UP"
    return "DOWN" if not any(s == "READY" for s in statuses) else "DEGRADED"


def render_text(imex: dict, hostnames: bool = False) -> str:
    table = cells(imex)
    out = [LEGEND, TIMESTAMP, "Nodes:"]
    for i, node in enumerate(imex["nodes"]):
        host = f"{node['host']} ({node['hostname']})" if hostnames else node["host"]
        row = f"Node #{i:<3} - {host:<15} - {node['status']:<20}"
        out.append(row + (f" - Version: {imex['version']}" if node["status"] == "READY" else "").rstrip())
    n = len(imex["nodes"])
    out += ["", " Nodes From\\To  " + "".join(f"{b:<4}" for b in range(n)).rstrip()]
    for a in range(n):
        out.append(f"{a:>8}        " + "".join(f"{table.get(a, {}).get(b, 'I'):<4}" for b in range(n)).rstrip())
    out += ["", f"Domain State: {domain_state(imex)}"]
    return "\n".join(out) + "\n"


def render_json(imex: dict, hostnames: bool = False) -> str:
    table = cells(imex)
    nodes = {}
    for i, node in enumerate(imex["nodes"]):
        entry: dict = {"status": node["status"], "host": node["host"]}
        if node["status"] == "READY":
            entry["connections"] = {str(b): {"host": imex["nodes"][b]["host"], "status": JSON_WORDS[code],
                                             "changed": True} for b, code in table[i].items()}
            entry["changed"] = True
            entry["version"] = imex["version"]
        entry["hostName"] = node["hostname"] if hostnames else ""
        nodes[str(i)] = entry
    return json.dumps({"nodes": nodes, "timestamp": TIMESTAMP, "status": domain_state(imex)}, indent=1) + "\n"


def domain_from_config(model: dict, version: str) -> dict | None:
    """The ``imex`` block of this node from nodes_config.cfg, /etc/hosts and the peers' daemons."""
    import imexdomain

    hosts = imexdomain.addresses()
    if hosts is None:
        return None
    names = imexdomain.host_names()
    own = imexdomain.own_address(model, hosts)
    port = imexdomain.server_port()
    nodes = [{"host": h, "hostname": names.get(h, ""),
              "status": "READY" if h == own or imexdomain.answers(h, port) else "UNAVAILABLE"} for h in hosts]
    faults = model.get("imex_faults") or {}
    return {"nodes": nodes, "version": version, "self": hosts.index(own) if own in hosts else None,
            "disconnected": faults.get("disconnected") or []}


def main(argv: list[str]) -> int:
    # The node's copy of simhw is /usr/lib/provision-sim/simhw.py (this tool is installed as /usr/bin/nvidia-imex-ctl
    # by the package, away from it); beside this file when run from the source tree.
    for path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
        if path not in sys.path:
            sys.path.insert(0, path)
    import imexdomain
    import simhw

    model = simhw.load() or {}
    driver = simhw.driver() or {}
    imex = model.get("imex") or domain_from_config(model, str(driver.get("version", "")))
    if "-N" not in argv:
        print("Usage: nvidia-imex-ctl [-i <IP> <PORT>|-u <unix domain socket path>|-c <nvidia-imex config.cfg "
              "path>] <-n|-N|-q|-s|-d|-m> [-t <timeout>] (simulated: -N only)", file=sys.stderr)
        return 1
    if not imex:
        print("Failed to read node configuration file /etc/nvidia-imex/nodes_config.cfg")
        return 1
    own = imex.get("self")
    if own is not None and not imexdomain.daemon_running():
        imex = {**imex, "nodes": [{**n, "status": "UNAVAILABLE"} if i == own else n
                                  for i, n in enumerate(imex["nodes"])]}
    render = render_json if "-j" in argv else render_text
    sys.stdout.write(render(imex, hostnames="-H" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
