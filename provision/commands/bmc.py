"""``provision bmc status|power ACTION|log|inventory|sensors``: the nodes' BMCs, out of band, from the controller.

Reads run on the hosts at once (``MAX_PARALLEL``); each host's BMC failure is one line on stderr and the exit is
BMC_FAILED (8). ``power on|off|cycle|reset`` runs ``provision.bmc.power.power_batches`` (batches, stagger, each
action confirmed by the node's boot id over SSH) after a confirmation: ``--yes``, or y at a terminal; without a
terminal and without --yes it refuses (NOT_CONFIRMED, 9). A node that did not go down or come back is exit 1.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import sys

from provision import arguments, embedded
from provision import inventory as inv
from provision.commands._common import say, warn
from provision.errors import BmcError, ExitStatus, MissingProgramError, NotConfirmedError, ProvisionError

MAX_PARALLEL = 32  # BMCs read at once: each is one HTTPS session or one ipmitool; a rack's worth, not a fleet's
COLUMNS = {
    "status": ("HOST", "BMC", "POWER", "HEALTH", "STATE", "MANAGER", "FIRMWARE", "BOOT ID"),
    "log": ("HOST", "ID", "CREATED", "SEVERITY", "SENSOR", "MESSAGE"),
    "inventory": ("HOST", "ID", "NAME", "VERSION", "HEALTH"),
    "sensors": ("HOST", "KIND", "ID", "READING", "UNITS", "HEALTH", "LIMITS"),
    "power": ("HOST", "OUTCOME", "BEFORE", "AFTER", "DETAIL"),
}


def main(args: argparse.Namespace) -> int:
    from provision.bmc import client, config

    if (args.what == "power") != (args.action is not None):
        raise ProvisionError("bmc: an action (on, off, cycle, reset) goes with power, and only with power")
    sources = inv.resolve_all(args.inventory)
    for path in sources:
        embedded.ensure_running(path, warn)
    inventory = inv.load(sources, arguments.vault(args), arguments.limit(args.limit))
    hosts = [h for h in inventory.hosts if config.of(h) is not None]
    for host in inventory.hosts:
        if host not in hosts:
            warn(f"provision: note: {host.name}: no BMC in the inventory (provision_bmc_address); left out")
    if not hosts:
        raise ProvisionError(f"{inventory.label}: no selected host has provision_bmc_address")
    if args.insecure_bmc:
        warn("provision: warning: --insecure-bmc: the BMCs' TLS certificates are NOT verified")
    timeout = _positive(args.timeout, "--timeout") or client.DEFAULT_TIMEOUT_S
    if args.what == "power":
        return power(hosts, args, timeout)
    return read(hosts, args.what, args, timeout)


def read(hosts, what: str, args: argparse.Namespace, timeout_s: float) -> ExitStatus:
    """Read ``what`` of every host's BMC at once; print the table or JSON; one stderr line per failed BMC."""
    since = _since(args.since) if args.since else None
    if since is not None and what != "log":
        raise ProvisionError("bmc: --since goes with log")
    results: dict[str, object] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(hosts))) as pool:
        futures = {h.name: pool.submit(_read_one, h, what, since, args.insecure_bmc, timeout_s) for h in hosts}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except (BmcError, MissingProgramError) as exc:  # one host's BMC, or ipmitool missing: one line each
                results[name] = {"error": " ".join(str(exc).split())}
    failed = [r["error"] for r in results.values() if isinstance(r, dict) and "error" in r]
    if args.json:
        say(json.dumps({"what": what, "insecure_bmc": bool(args.insecure_bmc), "hosts": results}, indent=1))
    else:
        rows = [row for name, r in results.items() if not (isinstance(r, dict) and "error" in r)
                for row in _rows(what, name, r)]
        for line in table(COLUMNS[what], rows):
            say(line)
    for line in failed:
        warn(f"provision: error: {line}")
    return ExitStatus.BMC_FAILED if failed else ExitStatus.OK


def _connect(cfg, timeout_s: float):
    from provision.bmc import client

    return None if cfg is None else client.connect(cfg, timeout_s)


def _read_one(host, what: str, since, insecure: bool, timeout_s: float):
    from provision.bmc import config

    cfg = config.of(host, insecure)
    if cfg is None:
        raise BmcError(f"{host.name}: no BMC in the inventory (provision_bmc_address)")
    bmc = _connect(cfg, timeout_s)
    try:
        if what == "status":  # with the node's last boot as the node itself says it (over SSH; None: no answer)
            from provision.bmc import outofband
            from provision.engine.ssh import SshTransport

            return {"bmc": cfg.address, **bmc.status(), "boot_id": outofband.ssh_boot_id(SshTransport())(host)}
        if what == "log":
            return bmc.log(since=since)
        if what == "inventory":
            return bmc.firmware()
        return bmc.sensors()
    finally:
        bmc.close()


def power(hosts, args: argparse.Namespace, timeout_s: float) -> ExitStatus:
    from provision.bmc import config, outofband
    from provision.bmc.power import DEFAULT_TIMEOUT_S, batch_defaults, power_batches
    from provision.engine.ssh import SshTransport

    default_batch, default_stagger = batch_defaults(hosts)
    batch = int(_positive(args.batch, "--batch") or default_batch)
    stagger = args.stagger if args.stagger is not None else default_stagger
    if stagger < 0:
        raise ProvisionError(f"--stagger {stagger:g}: not a number of seconds (0 or more)")
    confirm_timeout = _positive(args.confirm_timeout, "--confirm-timeout") or DEFAULT_TIMEOUT_S
    _confirm(args.action, hosts, batch, stagger, args.yes)
    outcomes = power_batches(hosts, args.action, batch, stagger, lambda h: _connect(config.of(h, args.insecure_bmc),
                                                                                      timeout_s),
                             outofband.ssh_boot_id(SshTransport()), confirm_timeout, say=(warn if args.json else say))
    if args.json:
        say(json.dumps({"action": args.action, "insecure_bmc": bool(args.insecure_bmc), "outcomes": outcomes},
                       indent=1))
    else:
        for line in table(COLUMNS["power"], [(o["host"], o["outcome"], o["before_boot_id"] or "-",
                                              o["after_boot_id"] or "-", o["detail"]) for o in outcomes]):
            say(line)
    kinds = {o["outcome"] for o in outcomes}
    return ExitStatus.BMC_FAILED if "failed" in kinds else \
        ExitStatus.NODE_FAILED if kinds & {"not_carried_out", "unconfirmed"} else ExitStatus.OK


def _confirm(action: str, hosts, batch: int, stagger: float, yes: bool) -> None:
    names = ", ".join(h.name for h in hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
    question = f"power {action} {len(hosts)} node(s) ({names}), {batch} at a time, {stagger:g} s apart? [y/N] "
    if yes:
        return
    if not sys.stdin.isatty():
        raise NotConfirmedError(f"bmc power {action}: not confirmed: give --yes (no terminal to ask on)")
    print(question, end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise NotConfirmedError(f"bmc power {action}: not confirmed; nothing was powered")


def _rows(what: str, host: str, result) -> list[tuple]:
    if what == "status":
        return [(host, result["bmc"], result["power_state"], result["health"], result["state"],
                 result["manager_health"], result["firmware_version"], result.get("boot_id") or "-")]
    if what == "log":
        return [(host, e["id"], e["created"], e["severity"], " ".join(str(x) for x in (e["sensor_type"], e["sensor"])
                                                                      if x is not None), e["message"]) for e in result]
    if what == "inventory":
        return [(host, f["id"], f["name"], f["version"], f["health"]) for f in result]
    out = [(host, "sensor", s["id"], s["reading"], s["units"], s["health"], _limits(s)) for s in result["sensors"]]
    out += [(host, "psu", p["id"], p["capacity_W"], "W capacity", p["health"], p["state"])
            for p in result["power_supplies"]]
    out += [(host, "fan", f["id"], f["speed_RPM"], "RPM", f["health"], f["state"]) for f in result["fans"]]
    return out


def _limits(sensor: dict) -> str:
    names = (("lower_critical", "LC"), ("lower_caution", "LW"), ("upper_caution", "UW"), ("upper_critical", "UC"))
    return " ".join(f"{short}={sensor[key]}" for key, short in names if sensor.get(key) is not None)


def table(columns: tuple, rows: list[tuple]) -> list[str]:
    """Aligned columns (the last one left ragged), '-' for a missing value; the header only when there are rows."""
    body = [tuple(str(c) for c in columns)] + [tuple("-" if c is None else str(c) for c in r) for r in rows]
    if len(body) == 1:
        return ["(nothing)"]
    widths = [min(40, max(len(r[i]) for r in body)) for i in range(len(columns) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in body]


def _since(text: str) -> dt.datetime:
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ProvisionError(f"--since {text!r}: not an ISO date or time (2026-12-01, 2026-12-01T02:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _positive(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if not value > 0 or value != value or value == float("inf"):
        raise ProvisionError(f"{name} {value:g}: not a positive number")
    return value
