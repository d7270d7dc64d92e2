"""Argument parsing only: each command calls one core function.

Exit statuses (``provision.errors.ExitStatus``): 0 every node passed, 1 some node failed or
errored, 2 bad usage or bad input (one line naming file, host and field), 3 the
orchestration itself broke. ``--traceback`` re-raises for debugging.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from provision import core, inventory
from provision.errors import ExitStatus, ProvisionError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="provision", description="Provision GPU nodes and burn them in.")
    p.add_argument("--traceback", action="store_true", help="show the Python traceback on errors")
    sub = p.add_subparsers(dest="command", required=True)
    for name, text in (("run", "install the stack, then burn in (the main job)"),
                       ("install", "run the install roles only"), ("burnin", "run the burn-in checks only")):
        c = sub.add_parser(name, help=text)
        _inventory_options(c, required=True)
        c.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
        c.add_argument("--run-id", help="name of the run folder under runs/")
        if name != "burnin":
            c.add_argument("--tags", help="Ansible tags to run")
        if name != "install":
            c.add_argument("--checks", help="comma-separated check ids (default: all)")
    sim = sub.add_parser("sim", help="the simulated rack").add_subparsers(dest="sim_command", required=True)
    up = sim.add_parser("up", help="start a simulated rack")
    up.add_argument("--nodes", type=int, default=core.DEFAULT_SIM_NODES, help="number of nodes (default 4)")
    up.add_argument("--profile", default=core.DEFAULT_SIM_PROFILE,
                    help=f"hardware profile of every node (default {core.DEFAULT_SIM_PROFILE})")
    up.add_argument("--inventory", default=str(core.SIM_INVENTORY), help="folder to write hosts.yml into")
    up.add_argument("--address-base", default="127.0.1.10", help="first node's loopback address")
    up.add_argument("--os", default=None, help="node OS: ubuntu2204, ubuntu2404, debian12 or rocky9, or a comma "
                    "list given to the nodes in turn (default debian12)")
    up.add_argument("--scenario", help="YAML scenario: nodes, profile, faults per node (overrides --nodes/--profile)")
    fault = sim.add_parser("fault", help="break a simulated node's hardware (see `sim faults`)")
    fault.add_argument("node")
    fault.add_argument("kind")
    fault.add_argument("--device", help="GPU index, HCA name, bond slave, GPU pair a,b or tool name (default: random)")
    fault.add_argument("--value", help="fault parameter (factor, width, rate, version)")
    heal = sim.add_parser("heal", help="restore a simulated node's healthy hardware")
    heal.add_argument("node", help="node name, or 'all'")
    for sub_parser in (fault, heal):
        sub_parser.add_argument("--inventory", default=str(core.SIM_INVENTORY))
    sim.add_parser("base", help="build the nodes' shared base root (debootstrap, once)")
    for name, text in (("down", "stop the simulated rack"), ("status", "show the simulated rack"),
                       ("faults", "list fault kinds and the faults injected now")):
        s = sim.add_parser(name, help=text)
        s.add_argument("--inventory", default=str(core.SIM_INVENTORY))
    ev = sub.add_parser("evaluate", help="judge a saved run again from its raw outputs (touches no node)")
    ev.add_argument("run_dir", help="a run folder, or a run id under runs/ (e.g. latest)")
    ev.add_argument("--profile", help="judge every host against this hardware profile instead")
    ev.add_argument("-i", "--inventory", action="append",
                    help="re-read site overrides (provision_reference_overrides) from it (repeatable)")
    _vault_options(ev)
    _inventory_parser(sub)
    par = sub.add_parser("parse", help="parse a saved tool output and print its JSON")
    par.add_argument("tool")
    par.add_argument("file")
    return p


def _inventory_parser(sub) -> None:
    ls = sub.add_parser("inventory", help="list every host, its address, profile and groups; check them "
                        "(connects nowhere)")
    _inventory_options(ls, required=True)
    ls.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _inventory_options(c: argparse.ArgumentParser, required: bool) -> None:
    c.add_argument("-i", "--inventory", action="append", required=required,
                   help="inventory folder or file, or a name under inventory/; repeat for several (later ones win)")
    _vault_options(c)


def _vault_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--vault-password-file", action="append", default=[], help="vault password file (as Ansible's)")
    c.add_argument("--vault-id", action="append", default=[], help="vault identity [label@]file (as Ansible's)")


def _vault(args: argparse.Namespace) -> inventory.Vault:
    return inventory.Vault(ids=tuple(args.vault_id), password_files=tuple(args.vault_password_file))


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in ("run", "install", "burnin"):
        phases = {"run": ("install", "burnin"), "install": ("install",), "burnin": ("burnin",)}[args.command]
        return core.job(args.inventory, phases, limit=_csv(args.limit), tags=getattr(args, "tags", None),
                        only_checks=_csv(getattr(args, "checks", None)), run_id=args.run_id, vault=_vault(args),
                        progress=lambda line: print(line, flush=True))
    if args.command == "evaluate":
        return core.evaluate(args.run_dir, args.profile, args.inventory, _vault(args))
    if args.command == "inventory":
        return core.inventory(args.inventory, _csv(args.limit), _vault(args), args.json,
                              err=lambda line: print(line, file=sys.stderr))
    if args.command == "parse":
        return _parse(args.tool, args.file)
    return _sim(args)


def _sim(args: argparse.Namespace) -> int:
    from provision.sim import rack

    if args.sim_command == "base":
        from provision.sim.base import ensure_base

        print(f"sim: base root ready at {ensure_base()}")
        return ExitStatus.OK
    folder = Path(args.inventory)
    if args.sim_command == "up":
        return _sim_up(args, folder)
    if args.sim_command in ("fault", "heal", "faults"):
        return _sim_faults(args, folder)
    if args.sim_command == "down":
        rack.down(folder)
    else:
        rows = rack.status(folder)
        if not rows:
            print(f"no simulated rack in {folder}")
            return ExitStatus.NODE_FAILED
        for row in rows:
            print(f"{row['name']:<8} {row['address']:<15} pid {row['pid']:<8} "
                  f"{'running' if row['running'] else 'STOPPED'} ssh {'open' if row['ssh'] else 'CLOSED'}")
        return ExitStatus.OK if all(r["running"] and r["ssh"] for r in rows) else ExitStatus.NODE_FAILED
    return ExitStatus.OK


def _sim_up(args: argparse.Namespace, folder: Path) -> int:
    from provision.sim import rack, scenario

    if args.scenario:
        return scenario.up(Path(args.scenario), folder, args.address_base, args.os)
    if args.nodes < 1:
        raise ProvisionError(f"--nodes: must be at least 1, got {args.nodes}")
    folder.mkdir(parents=True, exist_ok=True)
    rack.up(folder, args.nodes, args.profile, args.address_base, os_arg=args.os)
    return ExitStatus.OK


def _sim_faults(args: argparse.Namespace, folder: Path) -> int:
    from provision.sim import faults, rack

    if args.sim_command == "fault":
        record = faults.inject(folder, args.node, args.kind, args.device, args.value)
        print(f"sim: {args.node}: injected {record['kind']} on {record['label']}")
    elif args.sim_command == "heal":
        names = [n.name for n in rack.load_nodes(folder)] if args.node == "all" else [args.node]
        for name in names:
            print(f"sim: {name}: healed ({faults.heal(folder, name)} faults removed)")
    else:
        for kind in faults.KINDS.values():
            print(f"{kind.kind:<16} --device {kind.target:<6} {kind.description}")
        for node, records in faults.active(folder).items():
            for r in records:
                print(f"active: {node} {r['kind']} on {r['label']}")
    return ExitStatus.OK


def _parse(tool: str, file: str) -> int:
    from provision.parsers import parse_tool

    path = Path(file)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ProvisionError(f"{file}: cannot read: {exc.strerror}") from None
    print(json.dumps(parse_tool(tool, text, source=str(path)), indent=1))
    return ExitStatus.OK


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(_dispatch(args))
    except ProvisionError as exc:
        if args.traceback:
            raise
        print(f"provision: error: {exc}", file=sys.stderr)
        return int(exc.exit_status)
    except BrokenPipeError:  # stdout closed early (`provision parse ... | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitStatus.OK)
    except Exception as exc:  # a bug, not a user's mistake: one line, exit 3; --traceback shows it
        if args.traceback:
            raise
        print(f"provision: internal error: {type(exc).__name__}: {exc} (run with --traceback)", file=sys.stderr)
        return int(ExitStatus.RUNNER)
    except KeyboardInterrupt:
        print("provision: interrupted; results gathered so far are in runs/latest", file=sys.stderr)
        return 130
