"""The package outside a checkout (issue 25 item 2): the wheel built from this tree, installed with the tested set
(requirements.lock) into a virtualenv in a temporary folder, gives a ``provision`` that finds its playbooks and roles
(``provision/_content``) and installs a simulated node, with its runs and named inventories in the folder it runs in.
The simulator is not in the wheel: the node is started from the checkout, as a site's own test rig would be."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from provision import paths
from provision.sim import rack

pytestmark = pytest.mark.integration


def _run(args, cwd, env=None, timeout=900):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(virtualenv's provision, a work folder outside the checkout, its environment)."""
    base = tmp_path_factory.mktemp("package")
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(paths.ROOT)],
                 cwd=base)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((base / "dist").glob("provision-*.whl"))
    venv = base / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=base).returncode == 0
    pip = _run([str(venv / "bin/pip"), "install", "-q", "-c", str(paths.ROOT / "requirements.lock"), str(wheel)],
               cwd=base)
    assert pip.returncode == 0, pip.stderr[-2000:]
    work = base / "site"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PROVISION_RUNS_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv / "bin/provision", work, env


def test_the_installed_package_carries_its_content_and_no_simulator(installed):
    provision, work, env = installed
    where = _run([str(provision.parent / "python"), "-c",
                  "from provision import paths; print(paths.CHECKOUT, paths.PLAYBOOKS, paths.RUNS, paths.INVENTORIES)"],
                 cwd=work, env=env)
    checkout, playbooks, runs, inventories = where.stdout.split()
    assert checkout == "False" and playbooks.endswith("site-packages/provision/_content/playbooks")
    assert (runs, inventories) == (str(work / "runs"), str(work / "inventory"))
    assert not playbooks.startswith(str(paths.ROOT)) and (Path(playbooks) / "site.yml").is_file()
    sim = _run([str(provision), "sim", "status"], cwd=work, env=env)
    assert sim.returncode == 2 and "the simulator is not installed" in sim.stderr
    assert len(sim.stderr.strip().splitlines()) == 1


def test_the_installed_package_installs_a_simulated_node(installed, eight_h100):
    """On one node of the shared rack (installed from the checkout first; the wheel's install runs every role and
    task on it again, with --limit), from a site folder whose inventory/ names the rack."""
    provision, work, env = installed
    node = rack.load_nodes(eight_h100)[0].name
    (work / "inventory").mkdir(exist_ok=True)
    if not (work / "inventory" / "rack").exists():
        (work / "inventory" / "rack").symlink_to(eight_h100, target_is_directory=True)
    proc = _run([str(provision), "install", "-i", "rack", "--limit", node, "--run-id", "from-the-wheel"], cwd=work,
                env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = work / "runs" / "from-the-wheel"
    assert (run / "report.json").is_file()
    # the tasks ran from the installed package's roles, none from the checkout's
    events = "".join(p.read_text() for p in run.glob("ansible/artifacts/*/job_events/*.json"))
    assert "site-packages/provision/_content/roles/nvidia_driver/tasks/" in events
    assert f"{paths.ROOT}/roles/" not in events and f"{paths.ROOT}/playbooks/" not in events
