"""The repository snapshots: every entry cites a source, and what the roles ask for is in them.

The simulated repository serves exactly the snapshot (provision/sim/repo.py), so apt or dnf on the
simulated rack fails when a role asks for a package or version the snapshot does not have; these
tests say so earlier, and name the role's file.
"""
import re
from pathlib import Path

import pytest
import yaml

from provision import paths
from provision.profiles import release
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


def line_targets() -> list[tuple[str | None, str]]:
    """(release line, NVIDIA repository folder) pairs the snapshots must hold: every line of the stack release
    (None: the default line) in every x86_64 folder, and in each arm64 (sbsa) folder the lines it records
    (an entry's ``line``: the sbsa folders are there for GB200's Grace hosts, on the Blackwell line only)."""
    pairs: list[tuple[str | None, str]] = []
    for line in (None, *release.lines()):
        pairs += [(line, t) for t in snapshot.TARGETS]
        pairs += [(line, t) for t in snapshot.SBSA_TARGETS if line in {p.line for p in snapshot.load(t).packages}]
    return pairs


def test_the_lines_and_folders_are_all_checked():
    """The pairs below cover every line (the Blackwell line of issue 24 among them) and the arm64 folder."""
    pairs = line_targets()
    assert "blackwell" in release.lines()
    assert ("blackwell", "ubuntu2404-sbsa") in pairs and (None, "rhel9") in pairs
    assert len(pairs) == len(snapshot.TARGETS) * (1 + len(release.lines())) + len(snapshot.SBSA_TARGETS)


@pytest.mark.parametrize(("line", "target"), line_targets())
def test_the_driver_the_roles_pin_is_in_the_snapshot(line, target):
    family = VARS[target.split("-")[0]]
    driver = role_vars("nvidia_driver", family)
    pins = release.pins(target, line)  # the stack release's (Profile.stack of a profile on that line)
    version = f"{pins['driver_version']}-{driver['__nvidia_driver_revision']}"
    snap = snapshot.load(target)
    for spec in driver["__nvidia_driver_packages"]:
        name = spec.replace("{{ nvidia_driver_branch }}", pins["driver_branch"])
        assert snap.package(name) is not None, \
            f"{target}: roles/nvidia_driver/vars/{family}.yml asks for {spec}, not published"
        found = [v.split(":", 1)[-1] for v in snap.versions(name)]
        assert version in found, f"{target}: {name} is {found}, line {line or 'default'} pins {version}"


@pytest.mark.parametrize(("line", "target"), [(li, t) for li, t in line_targets() if t != "rhel9"])
def test_the_role_asks_for_every_exact_dependency_that_has_several_versions(line, target):
    """apt takes a dependency's newest version as its candidate: nvidia-driver=550's "nvidia-driver-libs (= 550...)"
    cannot be met while nvidia-driver-libs 580 is in the repository unless the role asks for nvidia-driver-libs=550
    too (apt-get -s against the built debian12 folder says so). dnf (rhel9) picks the matching version itself."""
    family = VARS[target.split("-")[0]]
    driver = role_vars("nvidia_driver", family)
    pins = release.pins(target, line)
    version = f"{pins['driver_version']}-{driver['__nvidia_driver_revision']}"
    snap = snapshot.load(target)
    asked = {spec.replace("{{ nvidia_driver_branch }}", pins["driver_branch"])
             for spec in driver["__nvidia_driver_packages"]}
    for name in asked:
        for dep in snap.package(name, version).depends:
            dep_name = re.split(r"[\s(<>=]", dep.split("|")[0].strip())[0]
            if "(=" in dep.split("|")[0] and len(snap.versions(dep_name)) > 1:
                assert dep_name in asked, f"{target}: {name}={version} needs {dep}; the role asks for no {dep_name}"


@pytest.mark.parametrize(("line", "target"), line_targets())
def test_the_stack_pins_are_in_the_snapshot(line, target):
    stack = release.pins(target, line)
    snap = snapshot.load(target)
    mm = ".".join(stack["cuda_version"].split(".")[:2])
    toolkit = f"cuda-toolkit-{mm.replace('.', '-')}"
    assert snap.package(toolkit, f"{stack['cuda_version']}-1") is not None, (line, target, snap.versions(toolkit))
    nccl = "libnccl" if target == "rhel9" else "libnccl2"
    want = f"{stack['nccl_version']}-1+cuda{stack['nccl_cuda_version']}"
    assert snap.package(nccl, want) is not None, (line, target, snap.versions(nccl))
    cudnn = f"libcudnn{stack['cudnn_version'].split('.')[0]}-cuda-{mm.split('.')[0]}"
    assert snap.package(cudnn, f"{stack['cudnn_version']}-1") is not None, (line, target, snap.versions(cudnn))


@pytest.mark.parametrize(("line", "target"), [(li, t) for li, t in line_targets() if li is not None])
def test_the_driver_s_companions_are_at_its_version(line, target):
    """From R580 Fabric Manager, NSCQ, NVSDM and IMEX drop the branch suffix and carry the driver's version
    (NVIDIA/gpu-driver-container's install.sh: <name>=<driver>-1); libnvsdm is not built for arm64; DCGM 4's
    CUDA 13 plugins need the core of their own version (snapshot notes)."""
    pins = release.pins(target, line)
    snap = snapshot.load(target)
    assert int(pins["driver_branch"]) >= 580
    arm = target.endswith("-sbsa")
    for name in ("nvidia-fabricmanager", "libnvidia-nscq", "nvidia-imex") + (() if arm else ("libnvsdm",)):
        assert snap.package(name, f"{pins['driver_version']}-1") is not None, (target, name, snap.versions(name))
    assert (snap.package("libnvsdm") is None) == arm
    assert snap.package("nvlsm") is not None
    plugins = snap.package("datacenter-gpu-manager-4-cuda13")
    assert snap.package("datacenter-gpu-manager-4-core", plugins.version) is not None
    assert any(plugins.version in d for d in plugins.depends), plugins.depends
    mine = [p for p in snap.packages if p.line == line]
    assert mine and all(p.arch in (("arm64", "all") if arm else ("amd64", "x86_64", "all", "noarch")) for p in mine)


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
