"""Shared by the simulated-rack tests: the CLI as a subprocess, and a 3-node rack of their own."""
import contextlib
import os
import shutil
import subprocess
import sys

import yaml

from provision import paths
from provision.sim import rack
from tests.conftest import free_address_base


def provision(*args, timeout=1800, env=None):
    """Run `provision ARGS` (``env``: extra environment); print its output tail when it exits with
    neither 0 nor 1."""
    proc = subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if proc.returncode not in (0, 1):
        print(proc.stdout[-4000:], proc.stderr[-2000:])
    return proc


@contextlib.contextmanager
def own_rack(folder, group_vars=None, nodes=3, os_names=None):
    """A simulated rack in ``folder`` (a copy of the sim site plus ``group_vars``) on free addresses;
    ``os_names`` (comma list) gives the nodes their OS in turn. Its state is outside ``folder``
    (``rack.state_dir``); ``folder`` gets only hosts.yml, and ``sim down`` removes both."""
    shutil.copytree(paths.ROOT / "inventory/sim/group_vars", folder / "group_vars")
    if group_vars:
        (folder / "group_vars/gpu_nodes.yml").write_text(yaml.safe_dump(group_vars))
    up = provision("sim", "up", "--nodes", str(nodes), "--inventory", str(folder), "--address-base",
                   free_address_base(nodes), *(["--os", os_names] if os_names else []))
    assert up.returncode == 0, up.stderr
    try:
        assert sorted(p.name for p in folder.iterdir()) == ["group_vars", "hosts.yml"]
        assert (rack.state_dir(folder) / "known_hosts").is_file()
        yield folder
    finally:
        provision("sim", "down", "--inventory", str(folder))
        assert not rack.load_nodes(folder)
        assert not rack.state_dir(folder).exists() and not (folder / "hosts.yml").exists()
