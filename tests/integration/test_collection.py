"""The roles as an Ansible collection (issue 25 items 1 and 3): ``ansible-galaxy collection build`` makes
provision.gpu from the checkout (galaxy.yml, meta/runtime.yml), the tarball installs into a temporary collections
path, ``ansible-test sanity`` passes on it, and a site's own playbook calling the roles by their fully qualified names
installs NVIDIA's repository, the driver (its units under the node's systemd, its reboot) and NCCL on a simulated
node, run by the controller's ansible-core (the pinned 2.19), by the oldest ansible-core meta/runtime.yml claims
(2.16) and by the newest release (2.21, which needs Python 3.12+ on the controller: a virtualenv of pyenv's 3.12 or
3.13, which this machine kind carries), each in a virtualenv of its own.

ansible-test fetches its pip bootstrap script from ci-files.testing.ansible.com, which this workplace cannot reach:
the test gives it a stand-in in its (temporary) cache that installs pip with ensurepip; nothing else is changed."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision import paths
from provision.profiles import release
from tests.integration.conftest import own_rack

pytestmark = pytest.mark.integration
OLDEST = "2.16.19"  # the newest 2.16 release on PyPI here: meta/runtime.yml's requires_ansible floor
NEWEST = "2.21.5"  # the newest release on PyPI (2026-12-03; 2.22 is in release candidates); Requires-Python >=3.12
BOOTSTRAP = ("import subprocess\nimport sys\n\n"
             "subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])\n")


def _run(args, cwd, env=None, timeout=900):
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """The collections path the built tarball was installed into."""
    base = tmp_path_factory.mktemp("collection")
    galaxy = paths.tool("ansible-galaxy")
    built = _run([galaxy, "collection", "build", "--output-path", base / "dist", paths.ROOT], cwd=base)
    assert built.returncode == 0, built.stderr
    tarball = next((base / "dist").glob("provision-gpu-*.tar.gz"))
    installed = _run([galaxy, "collection", "install", "-p", base / "collections", tarball], cwd=base)
    assert installed.returncode == 0, installed.stderr
    return base / "collections"


def test_the_built_collection_holds_the_roles_and_passes_ansible_test_sanity(collection, tmp_path):
    root = collection / "ansible_collections" / "provision" / "gpu"
    roles = sorted(p.name for p in (root / "roles").iterdir())
    assert roles == sorted(p.name for p in (paths.ROOT / "roles").iterdir() if p.is_dir())
    assert yaml.safe_load((root / "meta/runtime.yml").read_text())["requires_ansible"] == ">=2.16.0"
    assert not (root / "provision").exists() and not (root / "tests").exists()  # only the collection's content
    home = tmp_path / "home"
    (home / ".ansible/test/cache").mkdir(parents=True)
    (home / ".ansible/test/cache/get_pip_24_2.py").write_text(BOOTSTRAP)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    sanity = _run([paths.tool("ansible-test"), "sanity", "--python", python], cwd=root, env={"HOME": str(home)},
                  timeout=1800)
    assert sanity.returncode == 0, sanity.stdout[-3000:] + sanity.stderr[-3000:]
    assert 'Running sanity test "runtime-metadata"' in sanity.stdout + sanity.stderr


def _site_playbook(folder: Path) -> Path:
    """A site's own playbook: the roles by FQCN, the pins from the project's stack release (a site writes its own)."""
    pins = release.pins(None, None)
    play = [{"name": "A site's GPU nodes", "hosts": "gpu_nodes", "become": True,
             "vars": {"nccl_version": pins["nccl_version"], "nccl_cuda_version": pins["nccl_cuda_version"],
                      "nvidia_driver_branch": pins["driver_branch"], "nvidia_driver_version": pins["driver_version"]},
             "roles": [{"role": "provision.gpu.nvidia_repo"}, {"role": "provision.gpu.nvidia_driver"},
                       {"role": "provision.gpu.nccl"}]}]
    path = folder / "site.yml"
    path.write_text("---\n" + yaml.safe_dump(play, sort_keys=False))
    return path


def _ansible_venv(folder: Path, python: str, version: str) -> Path:
    venv = folder / "venv"
    assert _run([python, "-m", "venv", venv], cwd=folder).returncode == 0
    pip = _run([venv / "bin/pip", "install", "-q", f"ansible-core=={version}"], cwd=folder)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return venv / "bin"


def python_312() -> str:
    """A Python 3.12+ of this machine that runs (pyenv's versions, then python3.13/3.12 on PATH, which may be pyenv
    shims of versions not selected); pytest.fail naming what was sought."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [str(p) for p in sorted(pyenv.glob("3.1[2-9]*/bin/python3"), reverse=True)]
    found += [p for p in (shutil.which(n) for n in ("python3.13", "python3.12")) if p]
    for python in found:
        if _run([python, "-c", "import sys; assert sys.version_info >= (3, 12)"], cwd="/").returncode == 0:
            return python
    pytest.fail(f"ansible-core {NEWEST} needs Python 3.12+ and none runs here ({pyenv}, python3.13/3.12 on PATH)")


@pytest.fixture(scope="module")
def oldest_ansible(tmp_path_factory):
    return _ansible_venv(tmp_path_factory.mktemp("ansible-oldest"), sys.executable, OLDEST)


@pytest.fixture(scope="module")
def newest_ansible(tmp_path_factory):
    return _ansible_venv(tmp_path_factory.mktemp("ansible-newest"), python_312(), NEWEST)


def test_a_site_playbook_calls_the_roles_by_fqcn_on_the_oldest_the_pinned_and_the_newest_ansible_core(
        collection, oldest_ansible, newest_ansible, tmp_path):
    with own_rack(tmp_path / "rack", nodes=1) as inv:
        hosts = inv / "hosts.yml"
        known_hosts = yaml.safe_load(hosts.read_text())["all"]["vars"]["provision_known_hosts_file"]
        site = tmp_path / "site"
        site.mkdir()
        playbook = _site_playbook(site)
        env = {"ANSIBLE_COLLECTIONS_PATH": str(collection), "ANSIBLE_ROLES_PATH": str(site / "no-roles"),
               "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_CONFIG": str(site / "none.cfg")}
        args = ["-i", hosts, playbook, "-e", f"ansible_ssh_common_args='-o UserKnownHostsFile={known_hosts}'"]
        for bin_dir, version in ((Path(paths.tool("ansible-playbook")).parent, "2.19"), (oldest_ansible, "2.16"),
                                 (newest_ansible, "2.21")):
            proc = _run([bin_dir / "ansible-playbook", *args], cwd=site, env=env, timeout=1800)
            assert proc.returncode == 0, f"ansible-core {version}:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
            assert "provision.gpu.nccl : " in proc.stdout and "failed=0" in proc.stdout
            assert "provision.gpu.nvidia_driver : " in proc.stdout
            core = _run([bin_dir / "ansible-playbook", "--version"], cwd=site)
            assert f"core {version}." in core.stdout.splitlines()[0]


def test_the_collections_own_playbook_runs_by_its_fqcn(collection, tmp_path):
    """`ansible-playbook provision.gpu.site`: the collection's playbook finds its roles (short names inside the
    collection, and their dependencies) with no roles_path; --list-tasks shows each role's tasks under its FQCN."""
    (tmp_path / "hosts").write_text("node01 ansible_connection=local\n")
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collection), "ANSIBLE_ROLES_PATH": str(tmp_path / "no-roles"),
           "ANSIBLE_CONFIG": str(tmp_path / "none.cfg")}
    proc = _run([paths.tool("ansible-playbook"), "-i", tmp_path / "hosts", "provision.gpu.site", "--list-tasks"],
                cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for role in ("nvidia_repo", "nvidia_driver", "nvidia_imex", "cuda_toolkit", "cudnn", "nccl", "stack_hold",
                 "framework_venv", "burnin_tools"):
        assert f"provision.gpu.{role} : " in proc.stdout, role

