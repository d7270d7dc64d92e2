"""The health_check role applied by real Ansible to simulated nodes, as ``provision install --tags health_check``
would apply it with the site's ``health_check_*`` settings (that command takes no extra variables: they are the
site's inventory variables; here they are given on the command line, so that a test sets its own without writing
into a shared rack's inventory)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from provision import paths

PLAYBOOK = paths.ROOT / "playbooks" / "provision.yml"
# What `pip wheel` of a checkout reads (pyproject.toml, setup.py's content folders, the constraints).
SOURCE = ("pyproject.toml", "setup.py", "MANIFEST.in", "ansible.cfg", "requirements.lock", "provision", "playbooks",
          "plugins", "roles")


def snapshot_source(folder: Path) -> Path:
    """A copy of this checkout's buildable files in ``folder``, for ``health_check_source``: the wheels of two runs
    are then the same bytes even while someone edits the checkout (the role installs a changed wheel again)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SOURCE:
        src = paths.ROOT / name
        if src.is_dir():
            shutil.copytree(src, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, folder / name)
    return folder


def apply_health_role(inventory_dir: Path, host: str, extra_vars: dict) -> subprocess.CompletedProcess:
    """Run playbooks/provision.yml's health_check role (``--tags health_check``) on ``host`` of the rack whose
    inventory is ``inventory_dir`` (its hosts.yml reaches the node over SSH, host keys checked), with
    ``health_check_enabled: true`` and ``extra_vars``; ansible-playbook's output in the returned process."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(paths.ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_RETRY_FILES_ENABLED": "0",
           "ANSIBLE_HOST_KEY_CHECKING": "True",
           # ControlPersist masters of a run of their own, closed when ansible-playbook's last connection ends
           "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=5s -o StrictHostKeyChecking=yes"}
    return subprocess.run([paths.tool("ansible-playbook"), "-i", str(inventory_dir), str(PLAYBOOK), "--limit", host,
                           "--tags", "health_check", "-e", json.dumps({"health_check_enabled": True, **extra_vars})],
                          capture_output=True, text=True, env=env, timeout=900, check=False)


def recap(proc: subprocess.CompletedProcess, host: str) -> dict[str, int]:
    """The PLAY RECAP counts of ``host`` (ok, changed, failed, ...) from ``proc``'s output."""
    for line in proc.stdout.splitlines():
        head, _, counts = line.partition(" : ")
        if head.strip() == host and counts:
            return {k: int(v) for k, v in (pair.split("=") for pair in counts.split())}
    raise AssertionError(f"no PLAY RECAP line for {host}:\n{proc.stdout[-3000:]}")
