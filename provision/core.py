"""The main job: install the stack with Ansible, then burn in every host that installed cleanly.

Each CLI command calls one function here. Results go to ``runs/<run_id>/`` (report.json,
junit/, raw/, ansible/) and ``runs/latest``; the report is rewritten after every phase so
an interruption loses nothing already gathered.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path

from provision import burnin as burnin_engine
from provision import inventory as inv
from provision import paths, rejudge, report
from provision.inventory import listing
from provision.checks import ORDER as CHECK_ORDER
from provision.errors import ExitStatus, ProvisionError
from provision.report import junit, summary
from provision.runner import ansible
from provision.sim import rack

SIM_INVENTORY = paths.ROOT / "inventory" / "sim"
DEFAULT_SIM_NODES = 4
DEFAULT_SIM_PROFILE = "h100-sxm5-80g-ndr"


def ensure_sim(path: Path, progress=print) -> None:
    """Start the embedded simulated rack when ``path`` is it and it is not running."""
    if path.resolve() == SIM_INVENTORY.resolve() and not rack.is_up(path):
        progress("sim: the simulated rack is not running; starting it")
        rack.up(path, DEFAULT_SIM_NODES, DEFAULT_SIM_PROFILE, log=progress)


def job(inventory_args: str | list[str], phases: tuple[str, ...], limit: list[str] | None = None,
        tags: str | None = None, only_checks: list[str] | None = None, run_id: str | None = None,
        vault: inv.Vault = inv.Vault(), progress=print) -> ExitStatus:
    """Run ``phases`` (install, burnin) on the GPU nodes (hosts with ``provision_profile``) of one or
    several inventories. Returns the exit status; raises ProvisionError for bad input."""
    if only_checks is not None and not only_checks:
        raise ProvisionError("--checks: name at least one check")
    unknown = sorted(set(only_checks or ()) - set(CHECK_ORDER))
    if unknown:
        raise ProvisionError(f"--checks: unknown check {', '.join(unknown)} (known: {', '.join(CHECK_ORDER)})")
    inventory = _gpu_inventory(inventory_args, limit, vault, progress)
    hosts = list(inventory.gpu_hosts)
    run_dir = _new_run_dir(run_id)
    rep = {"run_id": run_dir.name, "inventory": inventory.label, "phases": list(phases),
           "started": _now(), "install": {}, "burnin": {},
           "profiles": {h.name: {"name": h.profile, "overrides": h.vars.get("provision_reference_overrides")}
                        for h in hosts}}
    progress(f"run {run_dir.name}: {len(hosts)} GPU nodes from {inventory.label}, phases {', '.join(phases)}")
    try:
        if "install" in phases:
            hosts = _install(inventory, hosts, run_dir, rep, tags, progress)
            report.write(run_dir, rep)
        if "burnin" in phases and hosts:
            started = time.monotonic()
            progress(f"burnin: {len(hosts)} hosts")
            results = burnin_engine.run(hosts, run_dir, only_checks, progress)
            rep["burnin"] = report.burnin_section(results)
            rep["burnin_wall_s"] = round(time.monotonic() - started, 1)
    finally:
        rep["finished"] = _now()
        report.write(run_dir, rep)
        junit.write(run_dir, rep)
    progress("\n" + summary.render(rep))
    progress(f"\nresults: {run_dir}/report.json, JUnit in {run_dir}/junit/")
    return ExitStatus.OK if all(v == "pass" for v in rep["hosts"].values()) else ExitStatus.NODE_FAILED


def inventory(inventory_args: str | list[str], limit: list[str] | None = None, vault: inv.Vault = inv.Vault(),
              as_json: bool = False, out=print, err=print) -> ExitStatus:
    """List every host (address, port, user, profile or "-", groups), then one line per problem
    (to ``err``). Connects nowhere. Returns BAD_INPUT when there are problems."""
    found = inv.read(inv.resolve_all(inventory_args), vault, limit)
    if as_json:
        out(json.dumps(listing.as_json(found), indent=1))
    else:
        for line in listing.table(found):
            out(line)
    for warning in found.warnings:
        err(f"provision: warning: {warning}")
    for problem in found.problems:
        err(f"provision: error: {problem}")
    return ExitStatus.BAD_INPUT if found.problems else ExitStatus.OK


def evaluate(run_arg: str, profile_name: str | None = None, inventory_arg: str | list[str] | None = None,
             vault: inv.Vault = inv.Vault(), progress=print) -> ExitStatus:
    """Judge a run's saved raw outputs again (new profile, thresholds or site overrides), touching
    no node; rewrite its report.json and JUnit. Raises ProvisionError for a bad run folder."""
    run_dir = (Path(run_arg) if Path(run_arg).is_dir() else paths.RUNS / run_arg).resolve()
    try:
        rep = report.load(run_dir)
    except (OSError, ValueError) as exc:
        raise ProvisionError(f"{run_dir}/report.json: not a readable run report ({exc})") from None
    if inventory_arg:
        for host in inv.load(inv.resolve_all(inventory_arg), vault).hosts:
            if host.name in rep.get("profiles", {}):
                rep["profiles"][host.name]["overrides"] = host.vars.get("provision_reference_overrides")
    rep["burnin"] = rejudge.run(run_dir, rep, profile_name)
    rep["evaluated"] = {"at": _now(), "profile": profile_name,
                        "inventory": inventory_arg if isinstance(inventory_arg, str) or not inventory_arg
                        else ", ".join(inventory_arg)}
    report.write(run_dir, rep, latest=False)
    junit.write(run_dir, rep)
    progress(summary.render(rep))
    return ExitStatus.OK if all(v == "pass" for v in rep["hosts"].values()) else ExitStatus.NODE_FAILED


def _gpu_inventory(inventory_args, limit, vault: inv.Vault, progress) -> inv.Inventory:
    """The inventory, with at least one GPU node selected; hosts without a profile are named and left out."""
    sources = inv.resolve_all(inventory_args)
    for path in sources:
        ensure_sim(path, progress)
    inventory = inv.load(sources, vault, limit)
    others = [h.name for h in inventory.hosts if h.profile is None]
    if not inventory.gpu_hosts:
        raise ProvisionError(f"{inventory.label}: no GPU node to run on: no host{' in --limit' if limit else ''} "
                             "has provision_profile (see `provision inventory`)")
    if others:
        progress(f"{len(others)} hosts without provision_profile are not GPU nodes, left out: "
                 f"{', '.join(others[:8])}{' ...' if len(others) > 8 else ''}")
    return inventory


def _install(inventory: inv.Inventory, hosts, run_dir: Path, rep: dict, tags, progress) -> list:
    """Run the install playbook on ``hosts`` only (passed as its limit); record it; return the hosts
    that installed cleanly."""
    started = time.monotonic()
    progress(f"install: playbooks/site.yml on {len(hosts)} hosts")
    result = ansible.run_playbook("site.yml", inventory.sources, run_dir / "ansible", limit=[h.name for h in hosts],
                                  tags=tags, vault_args=inventory.vault.args(), progress=progress)
    rep["install_wall_s"] = round(time.monotonic() - started, 1)
    rep["install_artifacts"] = result.artifacts
    for host in hosts:
        entry = result.hosts.get(host.name)
        if entry is None:
            rep["install"][host.name] = {"status": "unreachable", "changed": 0,
                                         "roles": {"play": {"tasks": 0, "changed": 0,
                                                            "failed": [{"task": "-", "msg": "host never ran"}]}}}
            continue
        status = "reboot_pending" if entry.status == "ok" and entry.reboot_pending else entry.status
        rep["install"][host.name] = {"status": status, "changed": entry.changed, "roles": dict(entry.roles)}
        if status == "reboot_pending":
            progress(f"install: {host.name} waits for a reboot to load the new driver; not burned in")
    total = sum(e["changed"] for e in rep["install"].values())
    progress(f"install: done in {rep['install_wall_s']} s, changed={total}")
    return [h for h in hosts if rep["install"][h.name]["status"] == "ok"]


def _new_run_dir(run_id: str | None) -> Path:
    if run_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run_id):
        raise ProvisionError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' (a folder name under runs/)")
    run_id = run_id or dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = paths.RUNS / run_id
    n = 1
    while run_dir.exists():
        n += 1
        run_dir = paths.RUNS / f"{run_id}-{n}"
    run_dir.mkdir(parents=True)
    return run_dir


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
