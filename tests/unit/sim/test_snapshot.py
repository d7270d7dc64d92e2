"""The repository snapshots: every entry cites a source, and what the roles ask for is in them.

The simulated repository serves exactly the snapshot (provision/sim/repo.py), so apt or dnf on the
simulated rack fails when a role asks for a package or version the snapshot does not have; these
tests say so earlier, and name the role's file.
"""
import re
from pathlib import Path

import pytest
import yaml

from provision import paths, profiles
from provision.sim import snapshot

ROLES = paths.ROOT / "roles"
VARS = {"ubuntu2204": "Ubuntu", "ubuntu2404": "Ubuntu", "debian12": "Debian", "rhel9": "RedHat"}


def role_vars(role: str, family: str) -> dict:
    path = ROLES / role / "vars" / f"{family}.yml"
    if not path.is_file() and family == "Ubuntu":  # first_found: Ubuntu.yml, then the family's Debian.yml
        path = ROLES / role / "vars/Debian.yml"
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("target", snapshot.ALL_TARGETS)
def test_every_entry_names_its_source_and_confidence(target):
    from provision.sim import repo
    snap = snapshot.load(target)
    assert snap.repository["url"].endswith(f"/{repo.cuda_dir(target)}/")
    assert snap.repository.get("sources")
    raw = yaml.safe_load((snapshot.SNAPSHOT_DIR / f"{target}.yaml").read_text())["packages"]
    for entry in raw:
        assert entry.get("sources"), f"{target}: {entry['name']} has no source"
        assert entry.get("confidence") in ("established", "inferred", "unknown"), entry["name"]


@pytest.mark.parametrize("target", snapshot.ALL_TARGETS)
def test_dependencies_between_nvidia_packages_resolve_in_the_snapshot(target):
    snap = snapshot.load(target)
    names = {p.name for p in snap.packages} | {re.split(r"[\s(<>=]", c)[0] for p in snap.packages for c in p.provides}
    for pkg in snap.packages:
        for dep in pkg.depends:
            alternatives = [re.split(r"[\s(<>=]", a.strip())[0] for a in dep.split("|")]
            first = alternatives[0]
            nvidia = first.startswith("nvidia-") and "-kernel-5" not in first
            if first.startswith(("cuda-", "libcudnn", "libnccl")) or nvidia:
                assert first in names or pkg.name.startswith("nvidia-headless"), f"{target}: {pkg.name} needs {dep}"


@pytest.mark.parametrize("target", snapshot.TARGETS)
def test_the_driver_the_roles_pin_is_in_the_snapshot(target):
    family = VARS[target]
    driver = role_vars("nvidia_driver", family)
    pins = profiles.load("h100-sxm5-80g-ndr").for_target(target).stack  # the stack release's
    assert pins["driver_branch"] == "550"  # the snapshots hold branch 550 only (snapshot/README.md)
    version = f"{pins['driver_version']}-{driver['__nvidia_driver_revision']}"
    for spec in driver["__nvidia_driver_packages"]:
        pkg = snapshot.load(target).package(spec.replace("{{ nvidia_driver_branch }}", pins["driver_branch"]))
        assert pkg is not None, f"{target}: roles/nvidia_driver/vars/{family}.yml asks for {spec}, not published"
        assert pkg.version.split(":", 1)[-1] == version, f"{target}: {pkg.name} is {pkg.version}, role pins {version}"


@pytest.mark.parametrize("target", snapshot.TARGETS)
def test_the_stack_pins_are_in_the_snapshot(target):
    stack = profiles.load("h100-sxm5-80g-ndr").for_target(target).stack
    snap = snapshot.load(target)
    mm = ".".join(stack["cuda_version"].split(".")[:2])
    toolkit = snap.package(f"cuda-toolkit-{mm.replace('.', '-')}")
    assert toolkit is not None and toolkit.version == f"{stack['cuda_version']}-1", target
    nccl = snap.package("libnccl" if target == "rhel9" else "libnccl2")
    assert nccl.version == f"{stack['nccl_version']}-1+cuda{stack['nccl_cuda_version']}", target
    cudnn = snap.package(f"libcudnn{stack['cudnn_version'].split('.')[0]}-cuda-12")
    assert cudnn is not None and cudnn.version == f"{stack['cudnn_version']}-1", target


@pytest.mark.parametrize("target", snapshot.TARGETS)
def test_the_rdma_tools_the_role_pins_are_doca_builds(target):
    doca = snapshot.doca(target)
    for name, version in role_vars("burnin_tools", VARS[target])["__burnin_tools_packages"].items():
        if name == "datacenter-gpu-manager":
            assert snapshot.load(target).package(name) is not None
            continue
        pkg = next((p for p in doca.packages if p.name == name), None)
        assert pkg is not None and pkg.version == version, f"{target}: {name} {version} is not in doca.yaml"


def test_every_shipped_command_has_a_simulated_tool():
    from provision.sim import repo
    for target in snapshot.ALL_TARGETS:
        for pkg in snapshot.load(target).packages:
            for path in pkg.ships:
                name = Path(path).name
                assert name.endswith(".service") or name in repo.SIM_TOOLS or name == "nccl.h", (target, path)
