"""The ``provision sim ...`` commands: argument parsing only, each command calls the simulator.

Reached only through ``provision.embedded``, which gives the embedded default (inventory folder,
node count, profile). Nothing heavy is imported at the top: every ``provision`` command builds
this parser, and only ``provision sim ...`` should load the simulator.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from provision.errors import ExitStatus, ProvisionError


def add_commands(subparsers, inventory: Path, nodes: int, profile: str) -> None:
    """Add ``sim`` and its subcommands to the top-level ``subparsers``; ``inventory``, ``nodes``
    and ``profile`` are the defaults (the embedded rack)."""
    sim = subparsers.add_parser("sim", help="the simulated rack").add_subparsers(dest="sim_command", required=True)
    up = sim.add_parser("up", help="start a simulated rack")
    up.add_argument("--nodes", type=int, default=nodes, help=f"number of nodes (default {nodes})")
    up.add_argument("--profile", default=profile, help=f"hardware profile of every node (default {profile})")
    up.add_argument("--inventory", default=str(inventory), help="folder to write hosts.yml into")
    up.add_argument("--address-base", default="127.0.1.10", help="first node's loopback address")
    up.add_argument("--os", default=None, help="node OS: ubuntu2204, ubuntu2404, debian12 or rocky9, or a comma "
                    "list given to the nodes in turn (default debian12)")
    up.add_argument("--scenario", help="YAML scenario: nodes, profile, faults per node (overrides --nodes/--profile)")
    fault = sim.add_parser("fault", help="break a simulated node's hardware (see `sim faults`)")
    fault.add_argument("node", help="the simulated node to break, e.g. node02")
    fault.add_argument("kind", help="the fault kind (`provision sim faults` lists them), e.g. vbios_mismatch")
    fault.add_argument("--device", help="GPU index, HCA name, bond slave, GPU pair a,b or tool name (default: random)")
    fault.add_argument("--value", help="fault parameter (factor, width, rate, version)")
    heal = sim.add_parser("heal", help="restore a simulated node's healthy hardware")
    heal.add_argument("node", help="node name, or 'all'")
    flash = sim.add_parser("flash", help="flash a simulated node's HCA firmware (a stack change, not a fault)")
    flash.add_argument("node")
    flash.add_argument("--fw", required=True, help="firmware version, e.g. 28.40.1000")
    for sub_parser in (fault, heal, flash):
        sub_parser.add_argument("--inventory", default=str(inventory))
    sim.add_parser("base", help="build the nodes' shared base root (debootstrap, once)")
    for name, text in (("down", "stop the simulated rack"), ("status", "show the simulated rack"),
                       ("faults", "list fault kinds and the faults injected now")):
        s = sim.add_parser(name, help=text)
        s.add_argument("--inventory", default=str(inventory))


def dispatch(args: argparse.Namespace) -> int:
    """Run the ``provision sim`` subcommand in ``args``; return its exit status."""
    if args.sim_command == "base":
        from provision.sim.base import ensure_base

        print(f"sim: base root ready at {ensure_base()}")
        return ExitStatus.OK
    folder = Path(args.inventory)
    if args.sim_command == "up":
        return _up(args, folder)
    if args.sim_command in ("fault", "heal", "faults", "flash"):
        return _faults(args, folder)
    if args.sim_command == "down":
        from provision.sim import rack

        rack.down(folder)
        return ExitStatus.OK
    return _status(folder)


def _up(args: argparse.Namespace, folder: Path) -> int:
    from provision.sim import rack, scenario

    if args.scenario:
        return scenario.up(Path(args.scenario), folder, args.address_base, args.os)
    if args.nodes < 1:
        raise ProvisionError(f"--nodes: must be at least 1, got {args.nodes}")
    folder.mkdir(parents=True, exist_ok=True)
    rack.up(folder, args.nodes, args.profile, args.address_base, os_arg=args.os)
    return ExitStatus.OK


def _status(folder: Path) -> int:
    from provision.sim import rack

    rows = rack.status(folder)
    if not rows:
        print(f"no simulated rack in {folder}")
        return ExitStatus.NODE_FAILED
    for row in rows:
        print(f"{row['name']:<8} {row['address']:<15} pid {row['pid']:<8} "
              f"{'running' if row['running'] else 'STOPPED'} ssh {'open' if row['ssh'] else 'CLOSED'} "
              f"bmc {row['bmc_address']} {'up' if row['bmc'] else 'DOWN'}")
    return ExitStatus.OK if all(r["running"] and r["ssh"] for r in rows) else ExitStatus.NODE_FAILED


def _faults(args: argparse.Namespace, folder: Path) -> int:
    from provision.sim import faults, rack

    if args.sim_command == "fault":
        record = faults.inject(folder, args.node, args.kind, args.device, args.value)
        print(f"sim: {args.node}: injected {record['kind']} on {record['label']}")
    elif args.sim_command == "flash":
        print(f"sim: {args.node}: {faults.flash(folder, args.node, args.fw)} HCAs flashed to firmware {args.fw}")
    elif args.sim_command == "heal":
        names = [n.name for n in rack.load_nodes(folder)] if args.node == "all" else [args.node]
        for name in names:
            removed = faults.heal(folder, name)
            print(f"sim: {name}: healed ({removed} fault{'' if removed == 1 else 's'} removed)")
    else:
        _list_faults(folder)
    return ExitStatus.OK


def _list_faults(folder: Path) -> None:
    from provision.sim import faults

    for kind in faults.KINDS.values():
        print(f"{kind.kind:<16} --device {kind.target:<6} {kind.description}")
    for name, (text, _how) in faults.FABRIC_KINDS.items():
        print(f"{name:<16} --device cable  {text}")
    for name, (text, _unit) in faults.SERVICE_KINDS.items():
        print(f"{name:<16} --device node   {text}")
    for name, text in faults.bf.BMC_KINDS.items():
        print(f"{name:<16} --device bmc    {text}")
    for node, records in faults.active(folder).items():
        for r in records:
            print(f"active: {node} {r['kind']} on {r['label']}")
