"""The job's install phase: playbooks/site.yml through ansible-runner on the selected hosts."""
from __future__ import annotations

import time

from provision import inventory as inv
from provision.engine.control import Control
from provision.results.model import FailedTask, HostInstall, RoleResult, Run
from provision.results.store import RunDir
from provision.runner import ansible


def install(inventory: inv.Inventory, hosts, rundir: RunDir, run: Run, tags, control: Control,
            forks: int | None = None) -> list:
    """Run the install playbook on ``hosts`` only (passed as its limit), on ``forks`` hosts at once (None:
    every host, so that no host waits for a free fork); record it; return the hosts that installed cleanly."""
    started, progress = time.monotonic(), control.progress
    forks = min(forks or len(hosts), len(hosts))
    progress(f"install: playbooks/site.yml on {len(hosts)} hosts, {forks} at once")
    request = ansible.PlaybookRequest("site.yml", inventory.sources, limit=[h.name for h in hosts], tags=tags,
                                      vault_args=inventory.vault.args(), forks=forks)
    result = ansible.run_playbook(request, rundir.ansible, progress=progress, cancel=control.stop.is_set,
                                  events=control.events)
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
