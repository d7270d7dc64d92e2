#!/usr/bin/env python3
"""Simulated ``ibstat`` (infiniband-diags): CA and port attributes from the hardware model.

Format from ibstat_h100_mixed_down_ports: ``CA 'mlx5_0'``, tab-indented attributes,
``Port 1:`` with doubly indented port attributes. Options: ``[CA [PORT]]``, ``-l`` (list
CA names), ``-p`` (port GUIDs), ``-s`` (short).
"""
from __future__ import annotations

import argparse
import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import ib_common  # noqa: E402
import simhw  # noqa: E402

# Capability masks of a ConnectX-7 IB port and of an Ethernet (RoCE) port (ibstat capture).
CAP_MASK = {"InfiniBand": "0xa751e848", "Ethernet": "0x00010000"}


def ca_block(hca: dict, short: bool = False) -> str:
    """The ``CA 'name'`` block of one HCA."""
    ib = hca.get("link_layer", "InfiniBand") == "InfiniBand"
    lines = [f"CA '{hca['name']}'", f"\tCA type: {hca.get('ca_type', 'MT4129')}", "\tNumber of ports: 1",
             f"\tFirmware version: {hca['fw_ver']}", "\tHardware version: 0",
             f"\tNode GUID: {hca['node_guid']}", f"\tSystem image GUID: {hca['node_guid']}"]
    port = [f"\tPort {hca.get('port', 1)}:", f"\t\tState: {hca['state']}",
            f"\t\tPhysical state: {hca['physical_state']}", f"\t\tRate: {hca['rate_Gbps']}"]
    if not short:
        port += [f"\t\tBase lid: {hca['lid'] if ib else 0}", "\t\tLMC: 0",
                 f"\t\tSM lid: {hca['sm_lid'] if ib else 0}",
                 f"\t\tCapability mask: {CAP_MASK.get(hca.get('link_layer', 'InfiniBand'), CAP_MASK['InfiniBand'])}",
                 f"\t\tPort GUID: {hca['port_guid']}", f"\t\tLink layer: {hca.get('link_layer', 'InfiniBand')}"]
    return "\n".join(lines + port) + "\n"


def main(argv: list[str]) -> int:
    """Run ``ibstat ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="ibstat")
    p.add_argument("ca", nargs="?")
    p.add_argument("port", nargs="?", type=int)
    p.add_argument("-l", "--list_of_cas", action="store_true")
    p.add_argument("-p", "--port_list", action="store_true")
    p.add_argument("-s", "--short", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("ibstat", model)
    hcas = ib_common.sorted_hcas(model)
    if args.ca:
        hcas = [h for h in hcas if h["name"] == args.ca]
        if not hcas:
            print(f"ibpanic: [{os.getpid()}] main: '{args.ca}' IB device can't be found: No such file or directory",
                  file=sys.stderr)
            return 1
    if args.list_of_cas:
        sys.stdout.write("".join(h["name"] + "\n" for h in hcas))
    elif args.port_list:
        sys.stdout.write("".join(h["port_guid"] + "\n" for h in hcas))
    else:
        sys.stdout.write("".join(ca_block(h, args.short) for h in hcas))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
