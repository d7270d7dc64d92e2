"""Shared by the simulated-rack tests: the CLI as a subprocess, a rack of a test's own, and the
8-node H100 rack that tests needing only a healthy installed rack plus faults share (``eight_h100``)."""
import contextlib
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from provision import paths
from provision.sim import faults, rack, scenario
from tests.conftest import free_address_base

EIGHT_H100 = paths.ROOT / "tests/data/scenarios/eight-h100.yaml"
RACK_FIELDS = ("nodes", "profile", "os", "fabric")  # what a scenario says of the rack itself, not of its faults


def provision(*args, timeout=1800, env=None):
    """Run `provision ARGS` (``env``: extra environment); print its output tail when it exits with
    neither 0 nor 1."""
    proc = subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if proc.returncode not in (0, 1):
        print(proc.stdout[-4000:], proc.stderr[-2000:])
    return proc


@contextlib.contextmanager
def own_rack(folder, group_vars=None, nodes=3, os_names=None, scenario_file=None, profile=None):
    """A simulated rack in ``folder`` (a copy of the sim site plus ``group_vars``) on free addresses;
    ``os_names`` (comma list) gives the nodes their OS in turn; ``scenario_file`` starts the scenario's
    rack instead of ``nodes`` nodes; ``profile`` gives the nodes their hardware (default the embedded
    rack's). Its state is outside ``folder`` (``rack.state_dir``); ``folder`` gets only hosts.yml, and
    ``sim down`` removes both."""
    shutil.copytree(paths.ROOT / "inventory/sim/group_vars", folder / "group_vars")
    if group_vars:
        (folder / "group_vars/gpu_nodes.yml").write_text(yaml.safe_dump(group_vars))
    if scenario_file is not None:
        nodes = scenario.load(scenario_file)["nodes"]
    shape = ["--scenario", str(scenario_file)] if scenario_file is not None else ["--nodes", str(nodes)]
    up = provision("sim", "up", *shape, "--inventory", str(folder), "--address-base", free_address_base(nodes),
                   *(["--os", os_names] if os_names else []), *(["--profile", profile] if profile else []))
    assert up.returncode == 0, up.stderr
    try:
        assert sorted(p.name for p in folder.iterdir()) == ["group_vars", "hosts.yml"]
        assert (rack.state_dir(folder) / "known_hosts").is_file()
        yield folder
    finally:
        provision("sim", "down", "--inventory", str(folder))
        assert not rack.load_nodes(folder)
        assert not rack.state_dir(folder).exists() and not (folder / "hosts.yml").exists()


def replay(folder, scenario_file):
    """Heal every node of the shared rack in ``folder`` (hardware models and fabric back to rack start),
    then inject ``scenario_file``'s faults, as ``sim up --scenario`` would on a rack of its own. The
    scenario must describe the shared rack (EIGHT_H100's nodes, profile, os and fabric). Returns ``folder``."""
    wanted, shared = scenario.load(scenario_file), scenario.load(EIGHT_H100)
    differ = [k for k in RACK_FIELDS if wanted.get(k) != shared.get(k)]
    assert not differ, f"{scenario_file}: {', '.join(differ)} differ from the shared rack's ({EIGHT_H100.name})"
    for node in rack.load_nodes(folder):
        faults.heal(folder, node.name)
    assert faults.active(folder) == {}
    scenario.inject_faults(wanted, folder)
    return folder


@contextlib.contextmanager
def site_vars(folder, values):
    """The rack in ``folder`` with ``values`` as a site's group variables (group_vars/gpu_nodes.yml) for the
    duration, as a site's inventory sets them; the file is removed after. For tests that share a rack but
    need a site setting of their own."""
    path = folder / "group_vars/gpu_nodes.yml"
    assert not path.exists(), f"{path}: another test's site variables were left"
    path.write_text(yaml.safe_dump(values))
    try:
        yield folder
    finally:
        path.unlink()


@pytest.fixture(scope="session")
def _eight_h100_installed(tmp_path_factory):
    """EIGHT_H100's rack, started and installed once per test session (a failed install errors every test
    that needs it, without installing again). Installed by ``--method image`` (one node builds, seven get the
    image): every test on this rack burns in image-installed nodes; push has its own racks (test_main_job and
    others), and test_install_methods.py compares the two file by file."""
    with own_rack(tmp_path_factory.mktemp("eight-h100"), scenario_file=EIGHT_H100) as folder:
        install = provision("install", "-i", str(folder), "--method", "image", "--run-id",
                            f"eight-h100-install-{os.getpid()}",
                            env={"PROVISION_CACHE_DIR": str(tmp_path_factory.mktemp("install-cache"))})
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-2000:]
        yield folder


@pytest.fixture
def eight_h100(_eight_h100_installed):
    """The shared 8-node H100 rack, installed and healed: a test replays its scenario on it (``replay``)."""
    return replay(_eight_h100_installed, EIGHT_H100)
