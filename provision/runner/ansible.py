"""The only module that imports ansible_runner: run a playbook, keep its artifacts, type its result.

Artifacts (events, stdout, stats) stay under the run's ``ansible/`` folder. The result gives,
per host, its status (ok, failed, unreachable), its changed count and, per role, the tasks
that failed with their messages.
"""
from __future__ import annotations

import os
import re
import shlex
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

from provision import paths
from provision.errors import RunnerError


@dataclass
class PlaybookHost:
    """One host's install: ``status`` ok|failed|unreachable; ``roles`` role -> {tasks, changed, failed: [..]};
    ``reboot_pending`` when the driver waits for a reboot the inventory opted out of."""

    host: str
    status: str = "ok"
    reboot_pending: bool = False
    changed: int = 0
    roles: dict = field(default_factory=lambda: defaultdict(lambda: {"tasks": 0, "changed": 0, "failed": []}))


@dataclass
class PlaybookResult:
    playbook: str
    rc: int
    status: str
    hosts: dict[str, PlaybookHost]
    artifacts: str


def run_playbook(playbook: str, inventory: Path | Sequence[Path], artifacts_dir: Path,
                 limit: list[str] | None = None, tags: str | None = None, extravars: dict | None = None,
                 vault_args: list[str] | None = None, progress=print) -> PlaybookResult:
    """Run ``playbooks/<playbook>`` against one inventory or several (``-i`` each, later ones win).
    ``vault_args``: ansible-playbook's vault options. Raises RunnerError if it could not start."""
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    hosts: dict[str, PlaybookHost] = {}
    kwargs = runner_kwargs(playbook, inventory, artifacts_dir, limit, tags, extravars, vault_args)
    kwargs["event_handler"] = _event_handler(hosts, progress)
    try:
        result = ansible_runner.run(**kwargs)
    except Exception as exc:  # ansible-runner raises bare exceptions for a bad private dir
        raise RunnerError(f"ansible-runner could not run {playbook}: {exc}") from None
    if result.status not in ("successful", "failed"):
        raise RunnerError(f"ansible-runner: {playbook} ended {result.status} (rc {result.rc}); "
                          f"see {artifacts_dir}/artifacts/{result.config.ident}/stdout")
    return PlaybookResult(playbook, result.rc, result.status, hosts,
                          str(Path(result.config.artifact_dir).relative_to(artifacts_dir.parent)))


def runner_kwargs(playbook: str, inventory: Path | Sequence[Path], artifacts_dir: Path,
                  limit: list[str] | None = None, tags: str | None = None, extravars: dict | None = None,
                  vault_args: list[str] | None = None) -> dict:
    """The keyword arguments for ``ansible_runner.run`` (no event handler).

    ansible-runner disables Ansible's host key checking whenever ANSIBLE_HOST_KEY_CHECKING is unset
    (ansible_runner/config/_base.py), so it is set to True here: a changed host key stops the run.
    ``inventory`` goes as a list of absolute paths, which ansible-runner passes as one ``-i`` each.
    """
    envvars = {"ANSIBLE_CONFIG": str(paths.ROOT / "ansible.cfg"), "ANSIBLE_FORCE_COLOR": "0",
               "ANSIBLE_HOST_KEY_CHECKING": "True",
               "PATH": f"{Path(paths.tool('ansible-playbook')).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    sources = [inventory] if isinstance(inventory, (str, Path)) else list(inventory)
    kwargs = dict(private_data_dir=str(artifacts_dir), playbook=str(paths.PLAYBOOKS / playbook),
                  inventory=[str(Path(s).resolve()) for s in sources], project_dir=str(paths.ROOT),
                  envvars=envvars, extravars=extravars or {}, quiet=True, json_mode=False,
                  settings={"suppress_ansible_output": True})
    if limit:
        kwargs["limit"] = ",".join(limit)
    if tags:
        kwargs["tags"] = tags
    if vault_args:
        kwargs["cmdline"] = shlex.join(vault_args)
    return kwargs


_LAST_ROLE = [""]


def _event_handler(hosts: dict[str, PlaybookHost], progress) -> Callable[[dict], bool]:
    def handle(event: dict) -> bool:
        _on_event(event, hosts, progress)
        return True  # ansible-runner writes an event to the artifacts only when its handler returns True
    return handle


def _on_event(event: dict, hosts: dict[str, PlaybookHost], progress) -> None:
    kind, data = event.get("event", ""), event.get("event_data", {})
    if kind == "playbook_on_task_start" and data.get("role") and data.get("role") != _LAST_ROLE[0]:
        _LAST_ROLE[0] = data["role"]
        progress(f"  install role {data['role']}")
    host = data.get("host")
    if not host or kind not in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable", "runner_on_skipped"):
        return
    entry = hosts.setdefault(host, PlaybookHost(host))
    role = data.get("role") or "play"
    row = entry.roles[role]
    row["tasks"] += 1
    res = data.get("res") or {}
    if res.get("changed"):
        row["changed"] += 1
        entry.changed += 1
    if kind == "runner_on_unreachable":
        entry.status = "unreachable"
        row["failed"].append({"task": data.get("task", ""), "msg": _msg(res)})
        progress(f"  install {host:<12} {role}: UNREACHABLE: {_msg(res)}")
    elif kind == "runner_on_failed" and not data.get("ignore_errors"):
        entry.status = "failed"
        row["failed"].append({"task": data.get("task", ""), "msg": _msg(res)})
        progress(f"  install {host:<12} {role}: FAILED '{data.get('task', '')}': {_msg(res)}")
    elif (res.get("ansible_facts") or {}).get("nvidia_driver_reboot_pending") is True:
        # nvidia_driver with nvidia_driver_reboot false: installed, and waits for the operator's reboot.
        entry.reboot_pending = True
        progress(f"  install {host:<12} {role}: reboot pending (nvidia_driver_reboot is false)")


# OpenSSH's own lines when strict host key checking refuses a host (changed or unknown key).
_HOST_KEY_LINE = re.compile(r"(Host key for \S+ has changed[^\r\n]*|No \S+ host key is known for [^\r\n]*|"
                            r"Offending \S+ key in [^\s\\]+)")


def _msg(res: dict) -> str:
    msg = str(res.get("msg") or res.get("stderr") or res.get("reason") or "")
    key_lines = _HOST_KEY_LINE.findall(msg)
    if key_lines:  # ssh's banner would fill the message; its own explanation is what the operator needs
        refusals = "; ".join(dict.fromkeys(k.strip().rstrip(".") for k in key_lines))
        return ("SSH host key check refused the host: " + refusals
                + " (reinstalled node: verify, then update known_hosts)")[:400]
    return " ".join(msg.split())[:300]
