"""The job's install phase: playbooks/site.yml through ansible-runner on the selected hosts."""
from __future__ import annotations

import time
from dataclasses import dataclass

from provision import inventory as inv
from provision.engine.control import Control
from provision.results.model import FailedTask, HostInstall, RoleResult, Run
from provision.results.store import RunDir
from provision.rollout import methods
from provision.runner import ansible


@dataclass(frozen=True)
class How:
    """How to install: ``method`` (``push``: the install playbook run here with the hosts as its limit; ``local``,
    ``image``: ``provision.rollout.methods``), ``forks`` hosts at once (None: every host, so that no host waits for
    a free fork), Ansible ``tags`` (None: every task)."""

    method: str = "push"
    forks: int | None = None
    tags: str | None = None


def install(inventory: inv.Inventory, hosts, rundir: RunDir, run: Run, control: Control, how: How = How()) -> list:
    """Install ``hosts`` as ``how`` says; record it; return the hosts that installed cleanly."""
    started, progress, tags, method = time.monotonic(), control.progress, how.tags, how.method
    forks = min(how.forks or len(hosts), len(hosts))
    progress(f"install: playbooks/site.yml on {len(hosts)} hosts by {method}, {forks} at once")
    if method == "push":
        request = ansible.PlaybookRequest("site.yml", inventory.sources, limit=[h.name for h in hosts], tags=tags,
                                          vault_args=inventory.vault.args(), forks=forks)
        result = ansible.run_playbook(request, rundir.ansible, progress=progress, cancel=control.stop.is_set,
                                      events=control.events)
        by_host, canceled, artifacts = result.hosts, result.status == "canceled", result.artifacts
    else:
        # the whole inventory's hosts, whatever the limit, retry or shard: the IMEX role lists a domain's nodes
        # from groups['all'] as push sees it
        peers = inv.load(inventory.sources, inventory.vault).hosts
        rollout = methods.Rollout(rundir.name, "site.yml", tags, forks, control.stop.is_set, progress,
                                  rundir.ansible, tuple(peers))
        outcome = (methods.install_local if method == "local" else methods.install_image)(hosts, rollout)
        by_host, canceled = outcome.hosts, control.stop.is_set()
        artifacts = str(rundir.ansible.relative_to(rundir.path))
        sent = sum(outcome.sent_bytes.values())
        progress(f"install: {sent / 1e6:.1f} MB sent to {len(hosts)} hosts"
                 + "".join(f"; image {k}: {m.get('bytes', 0) / 1e6:.1f} MB, built on {m.get('builder')}"
                           for k, m in outcome.images.items()))
    run.install_wall_s = round(time.monotonic() - started, 1)
    run.install_artifacts = artifacts
    for host in hosts:
        entry = by_host.get(host.name)
        if entry is None:
            never = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) before it ran"
                                                 if control.stop.is_set() else "host never ran")])
            run.install[host.name] = HostInstall("unreachable", 0, {"play": never})
            continue
        status = "reboot_pending" if entry.status == "ok" and entry.reboot_pending else entry.status
        roles = {name: RoleResult(r["tasks"], r["changed"], [FailedTask(f["task"], f["msg"]) for f in r["failed"]])
                 for name, r in entry.roles.items()}
        if canceled and status == "ok":  # stopped part-way: not installed
            status = "failed"
            roles["play"] = RoleResult(0, 0, [FailedTask("-", f"interrupted ({control.reason}) during the install")])
        run.install[host.name] = HostInstall(status, entry.changed, roles)
        if status == "reboot_pending":
            progress(f"install: {host.name} waits for a reboot to load the new driver; not burned in")
    total = sum(e.changed for e in run.install.values())
    progress(f"install: done in {run.install_wall_s} s, changed={total}")
    return [h for h in hosts if run.install[h.name].status == "ok"]
