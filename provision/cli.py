"""Argument parsing only: each command is one module of ``provision.commands``, imported only when chosen
(``COMMANDS``), so that ``provision checks --help`` loads no SSH, template, metrics or Ansible library.

Exit statuses (``provision.errors.ExitStatus``): 0 every node passed, 1 some node failed or
errored, 2 bad usage or bad input (one line naming file, host and field), 3 the
orchestration itself broke, 4 a program is missing, 5 a result file could not be written, 6 hosts taken
by another run, 7 not failed but not known to work (``UNCHECKED``: a stack outside plan's tables;
``UNTESTED``: a burn-in's coverage gap), 8 a BMC did not answer or refused (``provision bmc``), 9 a power
action not confirmed (no --yes without a terminal).
``--traceback`` re-raises for debugging.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from provision import embedded
from provision.errors import NOT_WRITABLE, ExitStatus, ProvisionError, not_written
from provision.arguments import INPUT_ERRNOS, Parser, refuse_empty, shown

COMMANDS = {  # verb -> its module, whose main(args) runs it
    "run": "provision.commands.run", "install": "provision.commands.install", "burnin": "provision.commands.burnin",
    "plan": "provision.commands.plan", "merge": "provision.commands.merge", "sim": "provision.commands.sim",
    "evaluate": "provision.commands.evaluate", "inventory": "provision.commands.inventory",
    "checks": "provision.commands.checks", "parse": "provision.commands.parse", "fabric": "provision.commands.fabric",
    "history": "provision.commands.history", "report": "provision.commands.report", "bmc": "provision.commands.bmc",
    "health": "provision.commands.health",
}


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="provision", description="Provision GPU nodes and burn them in.")
    p.add_argument("--traceback", action="store_true", help="show the Python traceback on errors")
    sub = p.add_subparsers(dest="command", required=True)
    for name, text in (("run", "install the stack, then burn in (the main job)"),
                       ("install", "run the install roles only"), ("burnin", "run the burn-in checks only")):
        c = sub.add_parser(name, help=text)
        _inventory_options(c, required=name == "install")  # burnin --local and --resume may go without one
        c.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
        c.add_argument("--run-id", help="name of the run folder under runs/")
        if name != "install":
            c.add_argument("--resume", metavar="RUN", help="continue a killed run (a run folder or id) in its own "
                           "folder with its own inventory and options: the results it journaled are kept, never run "
                           "again; a changed inventory is refused")
        if name != "burnin":
            c.add_argument("--tags", help="Ansible tags to run")
            c.add_argument("--retry-failed", metavar="RUN", help="only the hosts whose install did not end ok in "
                           "that run (a run folder or id, e.g. latest)")
            c.add_argument("--method", choices=("push", "local", "image"), default="push",
                           help="push: Ansible here works every node (default; a rack); local: every node runs the "
                           "roles itself, sent the bundle and its own variables; image: the roles run once per kind "
                           "of node, the result unpacked on the others, which then run the roles themselves (a no-op "
                           "but for their own files). README: which to use when")
        if name != "install":
            c.add_argument("--checks", help="comma-separated check ids (default: all)")
            c.add_argument("--scope", choices=("node", "cluster", "all"), default="all",
                           help="node checks, the cluster procedure (fabric, IB pairs, NCCL across nodes, "
                           "localization), or both (default)")
            c.add_argument("--schedule", choices=("quick", "full"),
                           help="IB pair rounds: quick (one round, partners on other leaves) or full (own leaf, "
                           "then until every leaf-spine cable carried traffic); default: the check set's (full for "
                           "acceptance), else quick")
            c.add_argument("--drain", choices=("slurm",), help="drain the failing nodes in Slurm (scontrol), never "
                           "one that someone else drained or downed; runs/<id>/drain.txt lists them either way")
            c.add_argument("--resume-passed", action="store_true", help="with --drain slurm: return to service the "
                           "nodes this tool drained (Reason 'burnin: ...') that now pass the checks they failed")
            _breaker_options(c)
            c.add_argument("--check-set", metavar="NAME", help="a named set of checks with its durations: quick "
                           "(nightly, minutes), deep (every check, short stress), acceptance (a new node: 30 min "
                           "gpu-burn, DCGM level 3, full IB pair schedule); less the profile's exclude_checks; not "
                           "with --checks")
            _history_option(c)
            _bmc_run_options(c)
        if name == "burnin":
            _local_options(c)
        if name != "burnin":
            c.add_argument("--force", action="store_true", help="install even when `provision plan` finds an error")
        c.add_argument("--shard", metavar="K/N", help="only the K-th of N disjoint shards of the GPU nodes (several "
                       "controllers or Slurm array tasks; `provision merge` joins their runs)")
        c.add_argument("--shard-by", choices=("hash", "rack"), help="split by host name hash "
                       "(default) or by whole racks (host variable provision_rack)")
        c.add_argument("-v", "--verbose", action="store_true", help="a line per host and job (default: a line per "
                       "check and per role, redrawn on a terminal, at most every 30 s in a log)")
        c.add_argument("--forks", metavar="N", help="work on at most N hosts at once (default: every host)")
        c.add_argument("--wait", nargs="?", const="3600", metavar="SECONDS", help="when another run holds some of "
                       "the hosts, wait up to SECONDS (default 3600) for them instead of refusing (exit 6)")
    _plan_parser(sub)
    mer = sub.add_parser("merge", help="join the runs of a sharded job (--shard K/N) into one run: report, JUnit, "
                         "raw outputs, drain.txt; exit as the job's")
    mer.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders, or run ids under runs/")
    mer.add_argument("--run-id", help="name of the merged run's folder under runs/")
    embedded.add_commands(sub)
    ev = sub.add_parser("evaluate", help="judge a saved run again from its raw outputs (touches no node)")
    ev.add_argument("run_dir", help="a run folder, or a run id under runs/ (e.g. latest)")
    ev.add_argument("--profile", help="judge every host against this hardware profile instead")
    ev.add_argument("-i", "--inventory", action="append",
                    help="re-read site overrides (provision_reference_overrides) from it (repeatable)")
    _vault_options(ev)
    _inventory_parser(sub)
    lst = sub.add_parser("checks", help="list the burn-in checks in run order (found in provision/checks and "
                         "PROVISION_CHECK_PATH)")
    lst.add_argument("--markdown", action="store_true", help="print the Markdown table README.md shows")
    lst.add_argument("--sets", action="store_true", help="print the check sets as README.md's Markdown table (checks, "
                     "IB pair schedule, time per node)")
    lst.add_argument("--profiles", action="store_true", help="print the hardware profiles as README.md's Markdown list")
    lst.add_argument("--references", metavar="HOST", help="print HOST's references as a run judges it by them, one "
                     "row a line (value, bounds, params, source), each with the layer it comes from: a check's "
                     "default, site_references.yaml, its profile, or the inventory's provision_reference_overrides "
                     "(needs -i)")
    _inventory_options(lst, required=False)
    par = sub.add_parser("parse", help="parse a saved tool output and print its JSON")
    par.add_argument("tool")
    par.add_argument("file")
    fab = sub.add_parser("fabric", help="map the InfiniBand fabric (leaves, spines, degraded cables) with "
                         "ibnetdiscover")
    _inventory_options(fab, required=False)
    fab.add_argument("--ibnetdiscover", action="append", metavar="FILE",
                     help="a saved ibnetdiscover output, one plane per file (repeatable); default: run it on the "
                     "inventory's first GPU node, once per HCA")
    fab.add_argument("--json", action="store_true", help="print JSON instead of text")
    fab.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
    _history_parser(sub)
    _report_parser(sub)
    _bmc_parser(sub)
    _health_parser(sub)
    return p


def _health_parser(sub) -> None:
    from provision.health import modes

    he = sub.add_parser("health", help="the node-local health check slurmd runs between jobs (HealthCheckProgram, "
                        "Prolog, Epilog), in LBNL NHC's place: cheap checks of this machine within a time budget; "
                        "silent when healthy, one NHC-style line and exit 1 when not")
    he.add_argument("--config", metavar="FILE", help="this node as the health_check role describes it (default "
                    "/etc/provision/health.json)")
    he.add_argument("-i", "--inventory", action="append", help="read this node from an inventory instead (slower: "
                    "Ansible's inventory code, about a second of CPU)")
    he.add_argument("--host", help="with -i: this machine's inventory name (default: its host name)")
    he.add_argument("--profile", help="no inventory: judge this machine against this bundled hardware profile")
    _vault_options(he)
    he.add_argument("--mode", choices=tuple(modes.MODES), default="periodic", help="periodic (HealthCheckProgram, "
                    "cron, a timer; budget 30 s), prolog (budget 10 s) or epilog (budget 30 s; checks that load the "
                    "GPUs may be named, and run only when the ending job held every GPU and no process uses one); in "
                    "prolog and epilog the health check's own failures exit 0 so that Slurm never drains a node for "
                    "them")
    he.add_argument("--budget", metavar="SECONDS", help="the whole call's time budget (default: the mode's); a check "
                    "still running then is cut: the health check's error, not the node's (exit 142 in periodic)")
    he.add_argument("--checks", help="comma-separated check ids (default: the health set)")
    he.add_argument("--drain", choices=("self", "none"), default="none", help="self: drain this node in Slurm "
                    "(scontrol) with a reason starting 'provision-health:' when a check fails, resume it when that "
                    "reason is ours and the checks it names pass; never touch a node someone else drained or that is "
                    "DOWN; never drain more than 10 %% of the nodes per 24 h")
    he.add_argument("--state-dir", default="/var/lib/provision/health", help="where last.json is kept (the last "
                    "result and the Xid window; default /var/lib/provision/health)")
    he.add_argument("--textfile-dir", metavar="DIR", help="also write provision_health.prom here (node_exporter's "
                    "textfile collector folder)")
    he.add_argument("--ack-xid", action="store_true", help="judge only the Xids logged from now on (after a GPU "
                    "was repaired without a reboot)")
    he.add_argument("--keep-run", action="store_true", help="keep a run folder (report.json, JUnit, raw outputs) "
                    "under the runs folder, as a burn-in does; default: none")
    he.add_argument("--run-id", help="with --keep-run: the run folder's name")
    _history_option(he)
    he.add_argument("-v", "--verbose", action="store_true", help="a line per check, healthy or not")


def _bmc_run_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--insecure-bmc", action="store_true", help="do not verify the BMCs' TLS certificates (said in "
                   "the run); default: verified against provision_bmc_ca_file, else the system's trust store")
    c.add_argument("--recover", action="store_true", help="power-cycle through its BMC a node that stopped "
                   "answering SSH during the burn-in, confirmed by a new boot id over SSH, and run its checks "
                   "again; never a node that answers, never one without a BMC in the inventory")


def _bmc_parser(sub) -> None:
    bmc = sub.add_parser("bmc", help="the nodes' BMCs, out of band (Redfish, else IPMI): status, power, event "
                         "log, firmware inventory, sensors")
    bmc.add_argument("what", choices=("status", "power", "log", "inventory", "sensors"))
    bmc.add_argument("action", nargs="?", choices=("on", "off", "cycle", "reset"), help="with power: the action")
    _inventory_options(bmc, required=True)
    bmc.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
    bmc.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bmc.add_argument("--since", metavar="ISO", help="log: entries at or after this ISO date or time (UTC unless "
                     "it names a zone)")
    bmc.add_argument("--batch", type=int, metavar="N", help="power: N nodes at a time (default: a quarter of the "
                     "rack budget, provision_plan.rack.budget_kW, over the profile's power.node_max_W; else 1)")
    bmc.add_argument("--stagger", type=float, metavar="SECONDS", help="power: wait between batches (default 10)")
    bmc.add_argument("--yes", action="store_true", help="power: do it without asking (needed without a terminal)")
    bmc.add_argument("--insecure-bmc", action="store_true", help="do not verify the BMCs' TLS certificates "
                     "(said in the output)")
    bmc.add_argument("--timeout", type=float, metavar="SECONDS", help="one BMC request (default 30)")
    bmc.add_argument("--confirm-timeout", type=float, metavar="SECONDS", help="power: how long a node has to go "
                     "down (off) or come back with a new boot id over SSH (default 600)")


def _report_parser(sub) -> None:
    rep = sub.add_parser("report", help="write a run's HTML report (one self-contained file) and, with "
                         "--prometheus, its node_exporter textfile")
    rep.add_argument("run_dir", help="a run folder, or a run id under runs/ (e.g. latest)")
    rep.add_argument("--out", metavar="FILE", help="where to write the HTML (default RUN_DIR/report.html; a folder: "
                     "report.html in it; a symlink: written through; - or /dev/stdout: standard output)")
    rep.add_argument("--history", metavar="PATH", help="a history database: add each host's trend across runs")
    rep.add_argument("--prometheus", action="store_true", help="also write the Prometheus textfile RUN_DIR/burnin.prom")
    rep.add_argument("--prometheus-out", metavar="FILE", help="write the Prometheus textfile there instead, "
                     "world-readable (a folder, e.g. node_exporter's textfile collector directory: burnin.prom in it)")


def _breaker_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--drain-max", type=int, metavar="N", help="with --drain slurm: drain at most N nodes in this run, "
                   "past the circuit breaker (default: --drain-share of the Slurm nodes, shared by the runs of "
                   "--drain-window)")
    c.add_argument("--drain-share", type=float, metavar="PERCENT", help="with --drain slurm: the share of the Slurm "
                   "nodes one run may drain (default 10)")
    c.add_argument("--drain-window", type=float, metavar="HOURS", help="with --drain slurm: the runs of this many "
                   "hours share one run's budget; the nodes this tool drained in it count (default 24)")


def _local_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--local", action="store_true", help="burn in this machine itself, no SSH (one Slurm task per "
                   "node: examples/slurm/); node checks only (pair and cluster checks need a controller); the profile "
                   "from --profile, or from -i (the host named as this machine); no history unless --history")
    c.add_argument("--host", metavar="NAME", help="with --local: this machine's name in the report and the inventory "
                   "(default: its hostname, socket.gethostname(); in -i also its first label)")
    c.add_argument("--profile", metavar="NAME", help="with --local: judge against this hardware profile (no site "
                   "variables) instead of the inventory's provision_profile")


def _history_option(c: argparse.ArgumentParser) -> None:
    c.add_argument("--history", metavar="PATH", help="the history database (default $PROVISION_HISTORY, else "
                   "runs/history.db)")


def _history_parser(sub) -> None:
    his = sub.add_parser("history", help="per node its last runs, verdicts, regressions with their baseline and "
                         "stack changes (--rows: the stored measurements), or `history import RUN_DIR...` to load "
                         "runs made before the history existed")
    his.add_argument("action", nargs="*", metavar="import RUN_DIR", help="import these run folders (or run ids)")
    his.add_argument("--host")
    his.add_argument("--check")
    his.add_argument("--metric")
    his.add_argument("--since", metavar="DATE", help="runs started at or after this ISO date or time (UTC)")
    his.add_argument("--rows", action="store_true", help="print the stored rows (run, time, host, check, device, "
                     "metric, value, unit, outcome) instead of the per-host summary")
    his.add_argument("--json", action="store_true", help="print JSON instead of text")
    _history_option(his)


def _plan_parser(sub) -> None:
    pl = sub.add_parser("plan", help="check the stack and the hardware design before touching a node (-i), or size "
                        "a cluster (--gpus N --profile P); exit 1 when it cannot work")
    _inventory_options(pl, required=False)
    pl.add_argument("--limit", help="comma-separated host names or groups (Ansible patterns)")
    pl.add_argument("--gpus", type=int, help="size a cluster of this many GPUs")
    pl.add_argument("--profile", help="the hardware profile of the sized cluster's nodes")
    pl.add_argument("--switch-radix", type=int, default=64, help="ports per InfiniBand switch (default 64: Quantum-2 "
                    "NDR; 40: Quantum HDR)")
    pl.add_argument("--oversubscription", default="1:1", help="leaf down:up ports (default 1:1, non-blocking)")
    pl.add_argument("--pue", type=float, help="power usage effectiveness of the facility (default 1.2)")
    pl.add_argument("--node-power-W", type=float, help="a node's maximum power in W (instead of the profile's "
                    "power.node_max_W; needed where the profile has none)")
    pl.add_argument("--switch-power-W", type=float, help="an InfiniBand switch's maximum power in W, from its "
                    "datasheet (without it the switches' power is printed as unknown)")
    pl.add_argument("--accept-unknown", action="store_true", help="exit 0 when the only findings the tables "
                    "cannot judge are unknown (default: exit 7)")


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


def _dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command: its module imported now, and only it (``COMMANDS``)."""
    return int(importlib.import_module(COMMANDS[args.command]).main(args))


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "health":
        from provision.health import modes

        if modes.MODES[args.mode].own_errors_pass:
            return _prolog_or_epilog(parser, args, modes.MODES[args.mode])
    return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The chosen command, its errors as one line and an exit status (``provision.errors.ExitStatus``)."""
    try:
        refuse_empty(parser, args)
        return int(_dispatch(args))
    except ProvisionError as exc:
        if args.traceback:
            raise
        print(f"provision: error: {shown(str(exc))}", file=sys.stderr)
        return int(exc.exit_status)
    except BrokenPipeError:  # stdout closed early (`provision parse ... | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitStatus.OK)
    except OSError as exc:  # a path the operator gave (too long, missing): one line, exit 2
        if args.traceback:
            raise
        return _os_error(exc)
    except Exception as exc:  # a bug, not a user's mistake: one line, exit 3; --traceback shows it
        if args.traceback:
            raise
        return _internal(exc)
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside a run: the run (if any) saved what it had
        print("provision: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)


def _prolog_or_epilog(parser: argparse.ArgumentParser, args: argparse.Namespace, mode) -> int:
    """``provision health --mode prolog|epilog``: whatever fails before the health check's own guard (an empty
    option, a module the node's environment lacks) is its own failure too: one line and exit 0, for Slurm drains a
    node whose prolog or epilog exits non-zero (``provision.health.modes``). A signal is 130/143 as in every mode."""
    from provision.health import modes

    try:
        refuse_empty(parser, args)
        return int(_dispatch(args))
    except Exception as exc:  # noqa: BLE001 - never a drain for the health check's own failure
        print(modes.not_finished(mode, str(exc) if isinstance(exc, ProvisionError) else f"{type(exc).__name__}: "
                                 f"{exc}"))
        return modes.OK
    except KeyboardInterrupt:
        print("provision: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)


def _os_error(exc: OSError) -> int:
    """A full or read-only disk: exit 5 (NOT_WRITTEN); a path given that is too long or missing: exit 2; else
    an internal error. One line each."""
    if exc.errno in NOT_WRITABLE:  # a full disk is not a bug
        print(f"provision: error: {shown(not_written(exc))}", file=sys.stderr)
        return int(ExitStatus.NOT_WRITTEN)
    if exc.errno not in INPUT_ERRNOS:
        return _internal(exc)
    where = f"{exc.filename}: " if exc.filename is not None else ""
    print(f"provision: error: {shown(f'{where}{exc.strerror}')}", file=sys.stderr)
    return int(ExitStatus.BAD_INPUT)


def _internal(exc: BaseException) -> int:
    print(f"provision: internal error: {shown(f'{type(exc).__name__}: {exc}')} (run with --traceback)",
          file=sys.stderr)
    return int(ExitStatus.RUNNER)
