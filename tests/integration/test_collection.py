"""The roles as an Ansible collection (issue 25 items 1 and 3): ``ansible-galaxy collection build`` makes
provision.gpu from the checkout (galaxy.yml, meta/runtime.yml), the tarball installs into a temporary collections
path, ``ansible-test sanity`` passes on it, and a site's own playbook calling the roles by their fully qualified names
installs NVIDIA's repository, the driver (its units under the node's systemd, its reboot) and NCCL on a simulated
node, run by the controller's ansible-core (the pinned 2.19), by the oldest ansible-core meta/runtime.yml claims
(2.16) and by the newest release (2.21, which needs Python 3.12+ on the controller: a virtualenv of pyenv's 3.12 or
3.13, which CI's machine kind carries; on a machine with no Python 3.12+, such as a fresh Debian 12, that one leg is
skipped and says why), each in a virtualenv of its own.

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
    plugin = "plugins/filter/install_facts.py"  # the install facts' filters, the file provision.profiles imports
    assert (root / plugin).read_text() == (paths.ROOT / plugin).read_text()
    assert not (root / ".ansible").exists() and not (root / ".hypothesis").exists()  # a checkout's caches stay out
    home = tmp_path / "home"
    (home / ".ansible/test/cache").mkdir(parents=True)
    (home / ".ansible/test/cache/get_pip_24_2.py").write_text(BOOTSTRAP)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    sanity = _run([paths.tool("ansible-test"), "sanity", "--python", python], cwd=root, env={"HOME": str(home)},
                  timeout=1800)
    assert sanity.returncode == 0, sanity.stdout[-3000:] + sanity.stderr[-3000:]
    assert 'Running sanity test "runtime-metadata"' in sanity.stdout + sanity.stderr


def _site_playbook(folder: Path) -> Path:
    """A site's own playbook: the roles by FQCN, the pins from the project's stack release (a site writes its own),
    and the collection's filters by FQCN giving the same pins and an NVSwitch board's Fabric Manager."""
    pins = release.pins(None, None)
    filters = ["(site_release | provision.gpu.stack_pins({}, ansible_facts | provision.gpu.stack_target))"
               ".driver_version == nvidia_driver_version",
               "({'gpu': {'count': 8, 'nvswitch': true}} | provision.gpu.stack_switches).fabricmanager"]
    play = [{"name": "A site's GPU nodes", "hosts": "gpu_nodes", "become": True,
             "vars": {"nccl_version": pins["nccl_version"], "nccl_cuda_version": pins["nccl_cuda_version"],
                      "nvidia_driver_branch": pins["driver_branch"], "nvidia_driver_version": pins["driver_version"],
                      "site_release": release.release()},
             "pre_tasks": [{"name": "Check the collection's filters", "ansible.builtin.assert": {"that": filters}}],
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


def python_312() -> str | None:
    """A Python 3.12+ of this machine that runs (pyenv's versions, then python3.13/3.12 on PATH, which may be pyenv
    shims of versions not selected); None where there is none (a fresh Debian 12: its python3 is 3.11)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [str(p) for p in sorted(pyenv.glob("3.1[2-9]*/bin/python3"), reverse=True)]
    found += [p for p in (shutil.which(n) for n in ("python3.13", "python3.12")) if p]
    for python in found:
        if _run([python, "-c", "import sys; assert sys.version_info >= (3, 12)"], cwd="/").returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def site_rack(tmp_path_factory):
    """One simulated node the three ansible-cores install in turn (the pinned first: the later runs change little)."""
    with own_rack(tmp_path_factory.mktemp("collection-rack") / "rack", nodes=1) as inv:
        yield inv


def _ansible_bin(version: str, folder: Path) -> Path:
    """The bin folder of ansible-core ``version``: the controller's pinned one (2.19), or a virtualenv of its own.
    2.21 needs Python 3.12+ (its Requires-Python): where this machine has none, the test is skipped, saying so."""
    if version == "2.19":
        return Path(paths.tool("ansible-playbook")).parent
    if version == "2.16":
        return _ansible_venv(folder, sys.executable, OLDEST)
    python = python_312()
    if python is None:
        pytest.skip(f"ansible-core {NEWEST} needs Python 3.12+ on the controller and this machine has none (pyenv's "
                    "versions, python3.13/3.12 on PATH); README: the 2.21 leg runs where one is installed")
    return _ansible_venv(folder, python, NEWEST)


@pytest.mark.parametrize("version", ["2.19", "2.16", "2.21"])
def test_a_site_playbook_calls_the_roles_by_fqcn_on_the_pinned_the_oldest_and_the_newest_ansible_core(
        collection, site_rack, version, tmp_path):
    bin_dir = _ansible_bin(version, tmp_path)
    hosts = site_rack / "hosts.yml"
    known_hosts = yaml.safe_load(hosts.read_text())["all"]["vars"]["provision_known_hosts_file"]
    site = tmp_path / "site"
    site.mkdir()
    playbook = _site_playbook(site)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collection), "ANSIBLE_ROLES_PATH": str(site / "no-roles"),
           "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_CONFIG": str(site / "none.cfg")}
    args = ["-i", hosts, playbook, "-e", f"ansible_ssh_common_args='-o UserKnownHostsFile={known_hosts}'"]
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

