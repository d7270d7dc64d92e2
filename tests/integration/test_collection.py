"""The roles as an Ansible collection (issue 25 items 1 and 3): ``ansible-galaxy collection build`` makes
provision.gpu from the checkout (galaxy.yml, meta/runtime.yml), the tarball installs into a temporary collections
path, ``ansible-test sanity`` passes on it, and a site's own playbook calling the roles by their fully qualified names
installs NVIDIA's repository and NCCL on a simulated node, run by the controller's ansible-core (the pinned 2.19) and
by the oldest ansible-core meta/runtime.yml claims (2.16, in a virtualenv of its own).

ansible-test fetches its pip bootstrap script from ci-files.testing.ansible.com, which this workplace cannot reach:
the test gives it a stand-in in its (temporary) cache that installs pip with ensurepip; nothing else is changed."""
import os
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
             "vars": {"nccl_version": pins["nccl_version"], "nccl_cuda_version": pins["nccl_cuda_version"]},
             "roles": [{"role": "provision.gpu.nvidia_repo"}, {"role": "provision.gpu.nccl"}]}]
    path = folder / "site.yml"
    path.write_text("---\n" + yaml.safe_dump(play, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def oldest_ansible(tmp_path_factory):
    venv = tmp_path_factory.mktemp("ansible-oldest") / "venv"
    assert _run([sys.executable, "-m", "venv", venv], cwd=venv.parent).returncode == 0
    pip = _run([venv / "bin/pip", "install", "-q", f"ansible-core=={OLDEST}"], cwd=venv.parent)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return venv / "bin"


def test_a_site_playbook_calls_the_roles_by_fqcn_on_the_oldest_and_the_pinned_ansible_core(
        collection, oldest_ansible, tmp_path):
    with own_rack(tmp_path / "rack", nodes=1) as inv:
        hosts = inv / "hosts.yml"
        known_hosts = yaml.safe_load(hosts.read_text())["all"]["vars"]["provision_known_hosts_file"]
        site = tmp_path / "site"
        site.mkdir()
        playbook = _site_playbook(site)
        env = {"ANSIBLE_COLLECTIONS_PATH": str(collection), "ANSIBLE_ROLES_PATH": str(site / "no-roles"),
               "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_CONFIG": str(site / "none.cfg")}
        args = ["-i", hosts, playbook, "-e", f"ansible_ssh_common_args='-o UserKnownHostsFile={known_hosts}'"]
        for bin_dir, version in ((Path(paths.tool("ansible-playbook")).parent, "2.19"), (oldest_ansible, "2.16")):
            proc = _run([bin_dir / "ansible-playbook", *args], cwd=site, env=env, timeout=1800)
            assert proc.returncode == 0, f"ansible-core {version}:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
            assert "provision.gpu.nccl : " in proc.stdout and "failed=0" in proc.stdout
            core = _run([bin_dir / "ansible-playbook", "--version"], cwd=site)
            assert f"core {version}." in core.stdout.splitlines()[0]
