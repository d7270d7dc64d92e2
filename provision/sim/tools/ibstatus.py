#!/usr/bin/env python3
"""Simulated ``ibstatus`` (infiniband-diags script) from the hardware model.

Format from ibstatus_a100_hdr_plus_eth: ``Infiniband device 'mlx5_0' port 1 status:``
then ``\\tname:\\t value`` lines (tabs as the script prints them) and a blank line.
Arguments: ``[DEVICE[:PORT] ...]``.
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


def status_block(hca: dict) -> str:
    """One device/port block."""
    ib = hca.get("link_layer", "InfiniBand") == "InfiniBand"
    num, word, _ = ib_common.port_state(hca)
    pnum = ib_common.phys_state(hca)[0]
    gid = "fe80:0000:0000:0000:" + ib_common.guid_colon(hca["port_guid"]) if ib else "unknown"
    lid = hca["lid"] if ib else 0
    sm = hca["sm_lid"] if ib else 0
    return (f"Infiniband device '{hca['name']}' port {hca.get('port', 1)} status:\n"
            f"\tdefault gid:\t {gid}\n\tbase lid:\t 0x{lid:x}\n\tsm lid:\t\t 0x{sm:x}\n"
            f"\tstate:\t\t {num}: {word}\n\tphys state:\t {pnum}: {hca['physical_state']}\n"
            f"\trate:\t\t {hca['rate_Gbps']} Gb/sec ({ib_common.rate_info(hca['rate_Gbps'])[0]})\n"
            f"\tlink_layer:\t {hca.get('link_layer', 'InfiniBand')}\n\n")


def main(argv: list[str]) -> int:
    """Run ``ibstatus ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="ibstatus")
    p.add_argument("devices", nargs="*")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("ibstatus", model)
    hcas = ib_common.sorted_hcas(model)
    if args.devices:
        names = [d.split(":")[0] for d in args.devices]
        missing = [n for n in names if simhw.hca(model, n) is None]
        if missing:
            print(f"Fatal error:  device '{missing[0]}': sys files not found "
                  f"(/sys/class/infiniband/{missing[0]}/ports)", file=sys.stderr)
            return 1
        hcas = [h for h in hcas if h["name"] in names]
    sys.stdout.write("".join(status_block(h) for h in hcas))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
