"""Install facts in one place (issue 35 item 5): plugins/filter/install_facts.py derives a node's NVIDIA repository
folder, its pins and its hardware switches; the playbooks call it as filters and provision.profiles imports the same
file (provision/profiles/install_facts.py links to it). Tables of OS facts -> folder and of profile -> switches, pins
for every bundled profile on every folder of its release line, and playbooks/group_vars/all.yml rendered by Ansible's
own templar through the filters."""
import ast
import configparser
import re
from pathlib import Path

import pytest
import yaml

from provision import paths, profiles
from provision.errors import ProfileError
from provision.plan.manifest import TARGETS
from provision.profiles import install_facts, release

PLUGIN = paths.ROOT / "plugins/filter/install_facts.py"


def facts(family: str, distribution: str, version: str) -> dict:
    return {"os_family": family, "distribution": distribution, "distribution_version": version,
            "distribution_major_version": version.split(".")[0]}


@pytest.mark.parametrize("os_facts,folder", [
    (facts("Debian", "Ubuntu", "22.04"), "ubuntu2204"),
    (facts("Debian", "Ubuntu", "24.04"), "ubuntu2404"),
    (facts("Debian", "Debian", "12.7"), "debian12"),
    (facts("RedHat", "Rocky", "9.4"), "rhel9"),
    (facts("RedHat", "AlmaLinux", "9.5"), "rhel9"),
    (facts("RedHat", "RedHat", "9.6"), "rhel9"),
    (facts("RedHat", "CentOS", "9"), "rhel9"),
    (facts("RedHat", "Rocky", "8.10"), "rhel8"),
    (facts("RedHat", "Fedora", "40"), None),  # os_family RedHat to Ansible, but no Enterprise Linux
    (facts("Archlinux", "Archlinux", ""), None),
    (facts("Suse", "SLES", "15.6"), None),
    ({}, None),
])
def test_os_facts_give_nvidias_repository_folder(os_facts, folder):
    assert install_facts.target(os_facts) == folder


def test_the_plans_facts_per_folder_give_that_folder():
    """provision plan templates the playbook with TARGETS' facts: each gives back its own folder."""
    assert {folder: install_facts.target(f) for folder, f in TARGETS.items()} == {f: f for f in TARGETS}


@pytest.mark.parametrize("os_release", [
    {"ID": "ubuntu", "ID_LIKE": "debian", "VERSION_ID": "24.04"},
    {"ID": "ubuntu", "VERSION_ID": "22.04"},
    {"ID": "debian", "VERSION_ID": "12"},
    {"ID": "rocky", "ID_LIKE": "rhel centos fedora", "VERSION_ID": "9.4"},
    {"ID": "almalinux", "ID_LIKE": "rhel centos fedora", "VERSION_ID": "9.5"},
    {"ID": "rhel", "ID_LIKE": "fedora", "VERSION_ID": "9.6"},
    {"ID": "centos", "ID_LIKE": "rhel fedora", "VERSION_ID": "9"},
    {"ID": "ol", "ID_LIKE": "fedora", "VERSION_ID": "9.4"},
    {"ID": "fedora", "VERSION_ID": "40"},
    {"ID": "pop", "ID_LIKE": "ubuntu debian", "VERSION_ID": "22.04"},
    {"ID": "raspbian", "ID_LIKE": "debian", "VERSION_ID": "12"},
    {"ID": "debian"},
    {"ID": "arch"},
    {},
])
def test_os_release_gives_the_folder_the_burnin_judges_by(os_release):
    """A node the burn-in reads without Ansible (its /etc/os-release) gets the folder its install got
    (profiles.target_of is the burn-in's reader of it)."""
    assert install_facts.target(install_facts.os_facts(os_release)) == profiles.target_of(os_release)


def _folders(line: dict) -> list[str | None]:
    """Every folder the release line names, one that it does not, and none (the OS not yet known)."""
    return [*line["targets"], "debian12" if "debian12" not in line["targets"] else "rhel9", None]


@pytest.mark.parametrize("name", profiles.names())
def test_pins_of_every_profile_on_every_folder_of_its_line(name):
    """The pins are the profile's release line (stack_line; the default line where it names none) with that line's
    overrides for the folder, read here from the release file itself."""
    data = yaml.safe_load(release.RELEASE.read_text())
    profile = profiles.load(name)
    line = data["lines"][profile.data["stack_line"]] if profile.data.get("stack_line") else data
    for folder in _folders(line):
        want = {**line["pins"], **line["targets"].get(folder, {}).get("pins", {})}
        assert install_facts.pins(data, profile.data.get("stack_line"), folder) == want, (name, folder)
        assert install_facts.stack_pins(data, profile.data, folder) == want, (name, folder)
        assert profile.for_target(folder).stack == want, (name, folder)  # what the stack check verifies


def test_the_release_lines_override_what_they_say():
    noble = release.pins("ubuntu2404")
    assert noble["cuda_version"] != release.pins("debian12")["cuda_version"]
    assert release.pins("ubuntu2404", "blackwell")["driver_branch"] == "580"
    with pytest.raises(ProfileError, match=r"stack_release.yaml: no release line 'hopper' \(lines: blackwell\)"):
        release.pins(None, "hopper")
    with pytest.raises(ValueError, match=r"no release line 'hopper' \(lines: none\)"):
        install_facts.pins({"pins": {}, "targets": {}}, "hopper")


# profile -> (Fabric Manager, NVLink Subnet Manager, IMEX)
SWITCHES = {
    "a100-pcie-40g-hdr": (False, False, False),
    "a100-sxm4-80g-hdr": (True, False, False),
    "b200-hgx": (True, True, False),  # NVLink 5 on an NVSwitch board: NVLSM beside Fabric Manager
    "gb200-nvl72": (False, False, True),  # the NVLink domain's trays run IMEX; no host Fabric Manager
    "h100-sxm5-80g-ndr": (True, False, False),
    "h200-sxm-141g-ndr": (True, False, False),
    "rtx4090-pcie": (False, False, False),
}


@pytest.mark.parametrize("name", profiles.names())
def test_switches_of_every_bundled_profile(name):
    profile = profiles.load(name)
    got = install_facts.switches(profile.data)
    assert (got["fabricmanager"], got["nvlsm"], got["imex"]) == SWITCHES[name]
    # the traits the burn-in judges by (Profile.has) agree: a check that needs them runs where the service is
    assert got["fabricmanager"] == profile.has("nvswitch") and got["imex"] == profile.has("imex")


def test_every_bundled_profile_has_its_row():
    assert sorted(SWITCHES) == profiles.names()


def test_the_package_imports_the_plugin_file_itself():
    """One file, not a copy: the package's module is a link to the collection's filter plugin."""
    module = Path(install_facts.__file__)
    assert module.is_symlink() and module.resolve() == PLUGIN.resolve()
    filters = install_facts.FilterModule().filters()
    assert filters == {"stack_target": install_facts.target, "stack_pins": install_facts.stack_pins,
                       "stack_switches": install_facts.switches}


def test_the_plugin_imports_only_the_standard_library():
    """It runs on the controller under every ansible-core the collection supports, with no provision installed."""
    tree = ast.parse(PLUGIN.read_text())
    imports = {node.module if isinstance(node, ast.ImportFrom) else alias.name
               for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert imports <= {"__future__", "collections.abc"}, imports


def test_ansible_cfg_names_the_filters_folder():
    config = configparser.ConfigParser()
    config.read(paths.ROOT / "ansible.cfg")
    assert (paths.ROOT / config["defaults"]["filter_plugins"]).resolve() == PLUGIN.parent.resolve()


def playbook_vars(profile: str, os_facts: dict) -> dict:
    """playbooks/group_vars/all.yml rendered by Ansible's templar for a host of ``profile`` and ``os_facts``."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import filter_loader, init_plugin_loader
    from ansible.template import Templar, trust_as_template

    init_plugin_loader()
    filter_loader.add_directory(str(PLUGIN.parent))  # ansible.cfg's filter_plugins, whichever config this process read
    group_vars = yaml.safe_load((paths.ROOT / "playbooks/group_vars/all.yml").read_text())
    variables = {k: trust_as_template(v) for k, v in group_vars.items()}
    variables.update(playbook_dir=str(paths.ROOT / "playbooks"), provision_profile=profile, ansible_facts=os_facts)
    templar = Templar(loader=DataLoader(), variables=variables)
    return {k: templar.template(v) for k, v in variables.items() if k in group_vars}


# role input -> the pin it carries
ROLE_PINS = {"nvidia_driver_branch": "driver_branch", "nvidia_driver_version": "driver_version",
             "nvidia_imex_version": "driver_version", "cuda_toolkit_version": "cuda_version",
             "cudnn_version": "cudnn_version", "nccl_version": "nccl_version", "nccl_cuda_version": "nccl_cuda_version"}
# role input -> the switch it carries
ROLE_SWITCHES = {"nvidia_driver_fabricmanager": "fabricmanager", "nvidia_driver_nvlsm": "nvlsm",
                 "nvidia_imex_enabled": "imex"}


@pytest.mark.filterwarnings("ignore:AnsibleCollectionFinder has already been configured")
@pytest.mark.parametrize("name", ["h100-sxm5-80g-ndr", "b200-hgx", "gb200-nvl72", "rtx4090-pcie"])
@pytest.mark.parametrize("folder", list(TARGETS))
def test_the_playbook_hands_the_roles_what_the_module_derives(name, folder):
    got = playbook_vars(name, TARGETS[folder])
    profile = profiles.load(name).for_target(folder)
    assert got["provision_stack_target"] == folder
    assert {var: got[var] for var in ROLE_PINS} == {var: profile.stack[pin] for var, pin in ROLE_PINS.items()}
    assert got["cudnn_cuda_major"] == profile.stack["cuda_version"].split(".")[0]
    switches = install_facts.switches(profile.data)
    assert {var: got[var] for var in ROLE_SWITCHES} == {var: switches[s] for var, s in ROLE_SWITCHES.items()}


def test_group_vars_derive_nothing_themselves():
    """The derived variables call the filters: no OS or hardware expression is written again in Jinja."""
    text = (paths.ROOT / "playbooks/group_vars/all.yml").read_text()
    values = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for fact in ("os_family", "distribution", "nvswitch", "nvlink_domain", "stack_line", "targets"):
        assert fact not in values, fact


def test_stack_hold_holds_the_fact_of_every_role_that_pins_a_package():
    """stack_hold keeps no list of roles: it takes every variable named <role>_holds, which each pinning role sets."""
    text = (paths.ROOT / "roles/stack_hold/vars/main.yml").read_text()
    pattern = re.search(r"'ansible\.builtin\.varnames', '([^']+)'", text).group(1)  # type: ignore[union-attr]
    set_by_roles = {m for path in (paths.ROOT / "roles").glob("*/tasks/*.yml") if "stack_hold" not in path.parts
                    for m in re.findall(r"^\s+(\w+_holds):", path.read_text(), re.MULTILINE)}
    assert set_by_roles == {"nvidia_driver_holds", "nvidia_imex_holds", "cuda_toolkit_holds", "cudnn_holds",
                            "nccl_holds"}
    assert all(re.match(pattern, name) for name in set_by_roles)
    assert not re.match(pattern, "__nccl_holds")  # a role's internal value is not a holds fact
    assert not any(name in text for name in set_by_roles)
