#!/usr/bin/env python3
"""Simulated ``ibv_devinfo`` (rdma-core) from the hardware model.

Layout of rdma-core's ibv_devinfo.c: ``hca_id:\\tmlx5_0`` then tab-aligned attributes and a
``port:`` block; ``board_id`` (the PSID) after ``hw_ver`` where the model has one, and the port's
``max_mtu``/``active_mtu`` from the model (a public ConnectX-7 ibv_devinfo paste: "board_id: MT_0000000838",
"max_mtu: 4096 (5)", "active_mtu: 4096 (5)"). ``-v`` adds ``phys_state``, ``active_width`` and
``active_speed`` (the only place this tool shows the rate). Options: ``-d DEV``, ``-i PORT``, ``-l``, ``-v``.
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

# Mellanox PCI vendor id and ConnectX part numbers (PCI ID repository, vendor 15b3).
VENDOR_ID = "0x02c9"
PART_IDS = {"MT4129": 4129, "MT4125": 4125, "MT4123": 4123}


# IB MTU in bytes -> the enum ibv_mtu value ibv_devinfo prints beside it (verbs.h IBV_MTU_256=1 .. IBV_MTU_4096=5).
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


def _mtu(size) -> str:
    """``4096 (5)``: the MTU and its verbs code, as rdma-core's ibv_devinfo prints it."""
    return f"{int(size)} ({MTU_CODES.get(int(size), 5)})"


def port_block(hca: dict, verbose: bool) -> list[str]:
    """The ``port:`` lines of one HCA."""
    ib = hca.get("link_layer", "InfiniBand") == "InfiniBand"
    num, _, word = ib_common.port_state(hca)
    active = _mtu(hca.get("active_mtu", 4096)) if ib else _mtu(1024)
    lines = [f"\t\tport:\t{hca.get('port', 1)}", f"\t\t\tstate:\t\t\t{word} ({num})",
             f"\t\t\tmax_mtu:\t\t{_mtu(hca.get('max_mtu', 4096))}", f"\t\t\tactive_mtu:\t\t{active}",
             f"\t\t\tsm_lid:\t\t\t{hca['sm_lid'] if ib else 0}", f"\t\t\tport_lid:\t\t{hca['lid'] if ib else 0}",
             "\t\t\tport_lmc:\t\t0x00", f"\t\t\tlink_layer:\t\t{hca.get('link_layer', 'InfiniBand')}"]
    if verbose:
        _name, lanes, lane_Gbps, code = ib_common.rate_info(hca["rate_Gbps"])
        pnum, pword = ib_common.phys_state(hca)
        lines += [f"\t\t\tactive_width:\t\t{lanes}X ({ib_common.WIDTH_CODES.get(lanes, 2)})",
                  f"\t\t\tactive_speed:\t\t{lane_Gbps:.1f} Gbps ({code})",
                  f"\t\t\tphys_state:\t\t{pword} ({pnum})"]
    return lines


def device_block(hca: dict, verbose: bool) -> str:
    """The ``hca_id:`` block of one HCA."""
    lines = [f"hca_id:\t{hca['name']}", "\ttransport:\t\t\tInfiniBand (0)", f"\tfw_ver:\t\t\t\t{hca['fw_ver']}",
             f"\tnode_guid:\t\t\t{ib_common.guid_colon(hca['node_guid'])}",
             f"\tsys_image_guid:\t\t\t{ib_common.guid_colon(hca['node_guid'])}",
             f"\tvendor_id:\t\t\t{VENDOR_ID}",
             f"\tvendor_part_id:\t\t\t{PART_IDS.get(hca.get('ca_type', 'MT4129'), 4129)}",
             "\thw_ver:\t\t\t\t0x0"]
    if hca.get("board_id"):  # after hw_ver, as rdma-core prints the PSID ("board_id:\t\t\tMT_0000000838")
        lines.append(f"\tboard_id:\t\t\t{hca['board_id']}")
    lines.append("\tphys_port_cnt:\t\t\t1")
    return "\n".join(lines + port_block(hca, verbose)) + "\n\n"


def main(argv: list[str]) -> int:
    """Run ``ibv_devinfo ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="ibv_devinfo")
    p.add_argument("-d", "--ib-dev")
    p.add_argument("-i", "--ib-port", type=int)
    p.add_argument("-l", "--list", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("ibv_devinfo", model)
    hcas = ib_common.sorted_hcas(model)
    if not hcas:
        print("No IB devices found")
        return 255
    if args.list:
        sys.stdout.write(f"{len(hcas)} HCAs found:\n" + "".join(f"\t{h['name']}\n" for h in hcas))
        return 0
    if args.ib_dev:
        hcas = [h for h in hcas if h["name"] == args.ib_dev]
        if not hcas:
            print(f"IB device '{args.ib_dev}' wasn't found", file=sys.stderr)
            return 255
    sys.stdout.write("".join(device_block(h, args.verbose) for h in hcas))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
