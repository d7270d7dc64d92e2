#!/usr/bin/env python3
"""Simulated ``ibnetdiscover`` (infiniband-diags): one plane of the simulated fabric, as the real tool prints it.

Reads the rack's fabric (``/etc/provision-sim/fabric.yaml``, env ``PROVISION_SIM_FABRIC`` overrides it):
``{"planes": [{"name", "switches": [{id, description, lid, ports, guid}], "cas": [{id, description,
host, device, port, lid, guid}], "cables": [{a, a_port, b, b_port, width, speed, ...}]}]}``
(``provision.sim.synth.world``). A cable may also carry:

- ``a_width_speed`` / ``b_width_speed``: what the port at that end reports when the two ends disagree
  (e.g. "1xSDR" at one end of a cable whose other end says "4xSDR", as in ``man ibnetdiscover``'s
  example); each end's port line prints its own end's value, as rdma-core's ``out_switch_port`` and
  ``out_ca_port`` print the printing port's PortInfo LinkWidthActive/LinkSpeedActive;
- ``state: "down"``: a dead port; the cable is printed at neither end.

Options: ``-C/--Ca CA`` and ``-P/--Port PORT`` choose the plane: the one whose ``cas`` has this node's
host name (``socket.gethostname()``, env ``PROVISION_SIM_HOSTNAME`` overrides it for tests) with device
CA; default the node's first HCA (the lowest device number: mlx5_0). Others are accepted and ignored.

Format: rdma-core ``infiniband-diags/ibnetdiscover.c`` (``dump_topology``, ``out_switch``, ``out_ca``,
``out_switch_port``, ``out_ca_port``): the header, switches then CAs, tab separators, node ids
``S-``/``H-`` and 16 hex digits, other GUIDs in ``%x``. Identity values the parser does not read come
from the real Quantum-2 dump in tests/data/ibnetdiscover/topograph_ndr_*: vendid 0x2c9 (Mellanox),
switch devid 0xd2f2 (Quantum-2, for every simulated switch), CA devid 0x1021 (ConnectX-7, the GB200
dump there), a CA port GUID equal to its node GUID (ConnectX-4 and later, both dumps). When the chosen
HCA's own cable is down the output is that CA's block alone, as the real GB200 dump without a link.
Exit 255 with ibdiag's "iberror" line (``ibexit``, exit(-1)) when there is no such CA or fabric.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import time

import yaml

FABRIC_PATH = "/etc/provision-sim/fabric.yaml"
VENDID, SWITCH_DEVID, CA_DEVID = 0x2C9, 0xD2F2, 0x1021  # module docstring


def load_fabric() -> dict:
    """The world dict (module docstring). Raises OSError or yaml.YAMLError."""
    with open(os.environ.get("PROVISION_SIM_FABRIC", FABRIC_PATH), encoding="utf-8") as fh:
        # libyaml's parser where PyYAML has it: pure Python took seconds for the MBs of a 1,024-node fabric
        return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def choose(world: dict, host: str, ca: str | None, port: int | None) -> tuple[dict, dict] | None:
    """(plane, ca record) of ``host``'s HCA ``ca`` (default its lowest-numbered device), or None."""
    mine = [(p, c) for p in world.get("planes", []) for c in p.get("cas", []) if c.get("host") == host]
    if ca is not None:
        mine = [(p, c) for p, c in mine if c.get("device") == ca]
    if port is not None:
        mine = [(p, c) for p, c in mine if int(c.get("port", 1)) == port]
    return min(mine, key=lambda pc: _device_order(pc[1].get("device") or "")) if mine else None


def _device_order(device: str) -> tuple[str, int]:
    m = re.match(r"^(.*?)(\d+)$", device)
    return (m.group(1), int(m.group(2))) if m else (device, 0)


def render(plane: dict, start: dict, when: str | None = None) -> str:
    """The plane as ibnetdiscover prints it, discovered from CA record ``start``."""
    nodes = {s["id"]: s for s in plane.get("switches", [])}
    nodes.update({c["id"]: c for c in plane.get("cas", [])})
    ports = _ports(plane)
    by_node: dict[str, list[tuple[int, tuple[str, int, str]]]] = {}  # node -> its cabled ports, in port order
    for (node, port), far in sorted(ports.items(), key=lambda kv: kv[0][1]):
        by_node.setdefault(node, []).append((port, far))
    guid = _hex(start["guid"])
    out = ["#", f"# Topology file: generated on {when or time.ctime()}", "#",
           f"# Initiated from node {guid:016x} port {guid:016x}"]
    if (start["id"], int(start.get("port", 1))) not in ports:
        return "\n".join(out + [""] + _ca_block(start, {}, nodes)) + "\n"
    for sw in plane.get("switches", []):
        if sw["id"] in by_node:
            out += [""] + _switch_block(sw, by_node[sw["id"]], nodes)
    for ca in plane.get("cas", []):
        if ca["id"] in by_node:
            out += [""] + _ca_block(ca, ports, nodes)
    return "\n".join(out) + "\n"


def _ports(plane: dict) -> dict[tuple[str, int], tuple[str, int, str]]:
    """(node, port) -> (far node, far port, width+speed this end reports), for every cable not down."""
    ports = {}
    for c in plane.get("cables", []):
        if c.get("state") == "down":
            continue
        both = f"{c['width']}{c['speed']}"
        ports[(c["a"], int(c["a_port"]))] = (c["b"], int(c["b_port"]), c.get("a_width_speed") or both)
        ports[(c["b"], int(c["b_port"]))] = (c["a"], int(c["a_port"]), c.get("b_width_speed") or both)
    return ports


def _switch_block(sw: dict, cabled: list, nodes: dict) -> list[str]:
    g = _hex(sw["guid"])
    lines = [f"vendid=0x{VENDID:x}", f"devid=0x{SWITCH_DEVID:x}", f"sysimgguid=0x{g:x}", f"switchguid=0x{g:x}({g:x})",
             f'Switch\t{sw["ports"]} "{sw["id"]}"\t\t# "{sw["description"]}" enhanced port 0 lid {sw["lid"]} lmc 0']
    for port, (far, far_port, ws) in cabled:
        other = nodes[far]
        guid = "" if far.startswith("S-") else f"({_hex(other['guid']):x}) "
        lines.append(f'[{port}]\t"{far}"[{far_port}]{guid}\t\t# "{other["description"]}" lid {other["lid"]} {ws}')
    return lines


def _ca_block(ca: dict, ports: dict, nodes: dict) -> list[str]:
    g = _hex(ca["guid"])
    lines = [f"vendid=0x{VENDID:x}", f"devid=0x{CA_DEVID:x}", f"sysimgguid=0x{g:x}", f"caguid=0x{g:x}",
             f'Ca\t1 "{ca["id"]}"\t\t# "{ca["description"]}"']
    port = int(ca.get("port", 1))
    if (ca["id"], port) in ports:
        far, far_port, ws = ports[(ca["id"], port)]
        other = nodes[far]
        remote_guid = "" if far.startswith("S-") else f" ({_hex(other['guid']):x}) "
        lines.append(f'[{port}]({g:x}) \t"{far}"[{far_port}]{remote_guid}\t\t# lid {ca["lid"]} lmc 0 '
                     f'"{other["description"]}" lid {other["lid"]} {ws}')
    return lines


def _hex(guid: str) -> int:
    return int(str(guid), 16)


def main(argv: list[str]) -> int:
    """Run ``ibnetdiscover ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="ibnetdiscover")
    p.add_argument("-C", "--Ca", dest="ca")
    p.add_argument("-P", "--Port", dest="port", type=int)
    p.add_argument("topology_file", nargs="?")
    args, _unknown = p.parse_known_args(argv)
    host = os.environ.get("PROVISION_SIM_HOSTNAME") or socket.gethostname()
    try:
        world = load_fabric()
    except (OSError, yaml.YAMLError):
        world = {}
    found = choose(world, host, args.ca, args.port)
    if found is None:
        # libibnetdisc cannot open the MAD port, then ibnetdiscover's IBEXIT("discover failed")
        print(f"ibwarn: [{os.getpid()}] ibnd_discover_fabric: can't open MAD port "
              f"({args.ca or 'mlx5_0'}:{args.port or 1})", file=sys.stderr)
        print("ibnetdiscover: iberror: failed: discover failed")
        return 255
    text = render(*found)
    if args.topology_file:
        with open(args.topology_file, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
