"""The main job: install the stack with Ansible, then burn in every host that installed cleanly.

Each CLI command calls one function here. Results go to ``runs/<run_id>/`` (report.json,
junit/, raw/, ansible/) and ``runs/latest``; the report is rewritten after every phase so
an interruption loses nothing already gathered.
"""
from __future__ import annotations

import datetime as dt
import json
import time

from provision import embedded, paths
from provision import inventory as inv
from provision import checks, profiles
from provision.checks import references
from provision.engine import burnin as burnin_engine
from provision.engine.control import Control, stopping_on_signals
from provision.engine.reevaluate import reevaluate
from provision.engine.ssh import SshTransport
from provision.errors import ExitStatus, ProfileError, ProvisionError
from provision.inventory import listing
from provision.report import junit, summary
from provision.results.model import JUDGED_VARS, FailedTask, HostInstall, HostRecord, RoleResult, Run
from provision.results.store import RunDir, RunStore
from provision.runner import ansible


def job(inventory_args: str | list[str], phases: tuple[str, ...], limit: list[str] | None = None,
        tags: str | None = None, only_checks: list[str] | None = None, run_id: str | None = None,
        vault: inv.Vault = inv.Vault(), retry_failed: str | None = None, progress=print) -> ExitStatus:
    """Run ``phases`` (install, burnin) on the GPU nodes (hosts with ``provision_profile``) of one or
    several inventories; with ``retry_failed`` (a run) only on the hosts whose install did not end
    ok there. Returns the exit status; raises ProvisionError for bad input."""
    known = checks.ids()
    if only_checks is not None and not only_checks:
        raise ProvisionError("--checks: name at least one check")
    unknown = sorted(set(only_checks or ()) - set(known))
    if unknown:
        raise ProvisionError(f"--checks: unknown check {', '.join(unknown)} (known: {', '.join(known)})")
    if retry_failed is not None:
        limit = _failed_installs(retry_failed, limit)
        progress(f"retry: {len(limit)} hosts whose install did not end ok in {retry_failed}: {', '.join(limit)}")
    inventory = _gpu_inventory(inventory_args, limit, vault, progress)
    hosts = list(inventory.gpu_hosts)
    rundir = RunStore(paths.RUNS).create(run_id)
    run = Run(run_id=rundir.name, inventory=inventory.label, phases=list(phases), started=_now(),
              hosts={h.name: HostRecord(h.profile, {k: h.vars[k] for k in JUDGED_VARS if h.vars.get(k) is not None})
                     for h in hosts})
    progress(f"run {rundir.name}: {len(hosts)} GPU nodes from {inventory.label}, phases {', '.join(phases)}")
    control = Control(progress)
    with stopping_on_signals(control):
        try:
            if "install" in phases:
                hosts = _install(inventory, hosts, rundir, run, tags, control)
                rundir.save(run)
            if "burnin" in phases and hosts and not control.stop.is_set():
                _burnin(hosts, rundir, run, only_checks, control)
        finally:
            run.finished = _now()
            rundir.save(run)
            junit.write(rundir.junit, run)
    progress("\n" + summary.render(run))
    progress(f"\nresults: {rundir.report}, JUnit in {rundir.junit}/")
    if control.stop.is_set():
        progress(f"provision: stopped by {control.reason}; the results gathered so far are in {rundir.path}")
        return ExitStatus.TERMINATED if control.reason == "SIGTERM" else ExitStatus.INTERRUPTED
    return _status(run)


SAVE_EVERY_S = 2.0  # report.json is rewritten at most this often during a burn-in (the journal has every result)


def _burnin(hosts, rundir: RunDir, run: Run, only_checks, control: Control) -> None:
    """Burn in ``hosts``; each result is journaled as it ends, and report.json refreshed."""
    started, saved = time.monotonic(), [0.0]
    control.progress(f"burnin: {len(hosts)} hosts")

    def record(result) -> None:
        rundir.record(result)
        run.results.append(result)
        if time.monotonic() - saved[0] >= SAVE_EVERY_S:
            rundir.save(run)
            saved[0] = time.monotonic()

    run.results = []
    ordered = burnin_engine.run(hosts, run.hosts, rundir, SshTransport(), only_checks, control, record)
    run.results = ordered
    run.burnin_wall_s = round(time.monotonic() - started, 1)


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
    """Judge a run's saved raw outputs again (new profile, thresholds or site variables), touching
    no node; rewrite its report.json and JUnit. Raises ProvisionError for a bad run folder."""
    rundir = RunStore(paths.RUNS).open(run_arg)
    run = rundir.load()
    if inventory_arg:
        for host in inv.load(inv.resolve_all(inventory_arg), vault).hosts:
            if host.name in run.hosts:
                run.hosts[host.name].vars = {k: host.vars[k] for k in JUDGED_VARS if host.vars.get(k) is not None}
    run.results = reevaluate(rundir, run, profile_name)
    run.evaluated = {"at": _now(), "profile": profile_name,
                     "inventory": inventory_arg if isinstance(inventory_arg, str) or not inventory_arg
                     else ", ".join(inventory_arg)}
    rundir.save(run, latest=False)
    junit.write(rundir.junit, run)
    progress(summary.render(run))
    return _status(run)


def list_checks(markdown: bool = False, out=print) -> ExitStatus:
    """Print the checks in run order: id, scope, order, needs, timeout, metrics; or README's table."""
    if markdown:
        out(checks.markdown_table(), end="")
        return ExitStatus.OK
    for check in checks.registry().values():
        metrics = ", ".join(f"{m} [{u}]" if u else m for m, u in check.metrics.items()) or "-"
        out(f"{check.id:<16} {check.scope.value:<7} order {check.order:<3} needs {','.join(check.needs) or '-':<8} "
            f"timeout {check.timeout_s:>4.0f} s  {metrics}")
    return ExitStatus.OK


def _failed_installs(run_arg: str, limit: list[str] | None) -> list[str]:
    """The hosts of a saved run whose install failed or never reached them. Raises ProvisionError
    with ``limit`` given too, when the run installed nothing, or when every host installed ok."""
    saved = RunStore(paths.RUNS).open(run_arg).load()
    if not saved.install:
        raise ProvisionError(f"--retry-failed {run_arg}: that run installed nothing")
    if limit:
        raise ProvisionError("--retry-failed chooses the hosts itself: leave out --limit")
    failed = [h for h, i in saved.install.items() if i.status in ("failed", "unreachable")]
    if not failed:
        raise ProvisionError(f"--retry-failed {run_arg}: every host installed ok there")
    return failed


def _status(run: Run) -> ExitStatus:
    return ExitStatus.OK if all(v == "pass" for v in run.verdicts().values()) else ExitStatus.NODE_FAILED


def _gpu_inventory(inventory_args, limit, vault: inv.Vault, progress) -> inv.Inventory:
    """The inventory, with at least one GPU node selected; hosts without a profile are named and left out."""
    sources = inv.resolve_all(inventory_args)
    for path in sources:
        embedded.ensure_running(path, progress)
    inventory = inv.load(sources, vault, limit)
    others = [h.name for h in inventory.hosts if h.profile is None]
    if not inventory.gpu_hosts:
        raise ProvisionError(f"{inventory.label}: no GPU node to run on: no host{' in --limit' if limit else ''} "
                             "has provision_profile (see `provision inventory`)")
    for host in inventory.gpu_hosts:  # a bad profile or site variable stops the run before any node is touched
        profile = profiles.for_host(str(host.profile), host.vars, host.name)
        try:
            references.validate(profile)
        except ProfileError as exc:
            raise ProfileError(f"host {host.name}: field 'provision_profile': {exc}") from None
    for warning in inventory.warnings:
        progress(f"provision: warning: {warning}")
    if others:
        progress(f"{len(others)} hosts without provision_profile are not GPU nodes, left out: "
                 f"{', '.join(others[:8])}{' ...' if len(others) > 8 else ''}")
    return inventory


def _install(inventory: inv.Inventory, hosts, rundir: RunDir, run: Run, tags, control: Control) -> list:
    """Run the install playbook on ``hosts`` only (passed as its limit); record it; return the hosts
    that installed cleanly."""
    started, progress = time.monotonic(), control.progress
    progress(f"install: playbooks/site.yml on {len(hosts)} hosts")
    result = ansible.run_playbook("site.yml", inventory.sources, rundir.ansible, limit=[h.name for h in hosts],
                                  tags=tags, vault_args=inventory.vault.args(), progress=progress,
                                  cancel=control.stop.is_set)
    run.install_wall_s = round(time.monotonic() - started, 1)
    run.install_artifacts = result.artifacts
    for host in hosts:
        entry = result.hosts.get(host.name)
        if entry is None:
            never = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) before it ran"
                                                 if control.stop.is_set() else "host never ran")])
            run.install[host.name] = HostInstall("unreachable", 0, {"play": never})
            continue
        status = "reboot_pending" if entry.status == "ok" and entry.reboot_pending else entry.status
        roles = {name: RoleResult(r["tasks"], r["changed"], [FailedTask(f["task"], f["msg"]) for f in r["failed"]])
                 for name, r in entry.roles.items()}
        if result.status == "canceled" and status == "ok":  # stopped part-way: not installed
            status = "failed"
            roles["play"] = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) during the install")])
        run.install[host.name] = HostInstall(status, entry.changed, roles)
        if status == "reboot_pending":
            progress(f"install: {host.name} waits for a reboot to load the new driver; not burned in")
    total = sum(e.changed for e in run.install.values())
    progress(f"install: done in {run.install_wall_s} s, changed={total}")
    return [h for h in hosts if run.install[h.name].status == "ok"]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
