"""Install facts: what a node's install takes from its OS, its hardware profile and the stack release.

- ``target``: NVIDIA's repository folder of the node (ubuntu2204, ubuntu2404, debian12, rhel9) from its ansible_facts
  (``os_facts`` gives the same values from /etc/os-release, for a node read without Ansible);
- ``pins``: the stack release's pins for the node: its profile's release line (``stack_line``), with the overrides of
  its folder (the line's ``targets``);
- ``switches``: which of the services that depend on the hardware apply: Fabric Manager (an NVSwitch board), the
  NVLink Subnet Manager (an NVLink5 NVSwitch board: HGX B200/B300) and the IMEX daemon (a tray of an NVLink domain that
  runs it: GB200/GB300 NVL72).

One implementation with two callers. The playbooks call it as filters (``FilterModule`` below): ``provision.gpu.<name>``
from the collection, the short name from a checkout or the installed package, whose ansible.cfg names this folder in
``filter_plugins``. The Python package imports it as ``provision.profiles.install_facts``, a link to this file, so the
``stack`` check verifies what the roles installed because both computed it here.

Self-contained: the standard library only, and data already loaded (the release and the profile as mappings), so that
it runs on the controller under every ansible-core the collection supports (2.16 to 2.21, Python 3.10 and newer) and in
the package without Ansible.
"""
from __future__ import annotations

from collections.abc import Mapping

# Ansible's distribution names for the /etc/os-release IDs of the systems NVIDIA publishes a folder for (Ansible's
# distribution facts: OS_RELEASE_ALIAS and its per-distribution parsers); other IDs keep their own spelling.
DISTRIBUTIONS = {"ubuntu": "Ubuntu", "debian": "Debian", "rhel": "RedHat", "rocky": "Rocky", "almalinux": "AlmaLinux",
                 "centos": "CentOS", "ol": "OracleLinux", "fedora": "Fedora"}
# Ansible counts Fedora in os_family RedHat, but it is no Enterprise Linux: NVIDIA publishes it as fedora<N>.
NOT_EL = frozenset({"Fedora"})


def target(facts: Mapping) -> str | None:
    """NVIDIA's repository folder for a node with these ansible_facts (os_family, distribution,
    distribution_version, distribution_major_version): ``ubuntu2404``, ``debian12``, ``rhel9`` (Rocky, Alma, RHEL and
    the other Enterprise Linux rebuilds); None for any other system."""
    distribution = str(facts.get("distribution") or "")
    version = str(facts.get("distribution_version") or "")
    major = str(facts.get("distribution_major_version") or version.split(".", maxsplit=1)[0])
    if distribution == "Ubuntu":
        return "ubuntu" + version.replace(".", "")
    if distribution == "Debian":
        return "debian" + major
    if facts.get("os_family") == "RedHat" and distribution not in NOT_EL:
        return "rhel" + major
    return None


def os_facts(os_release: Mapping) -> dict[str, str]:
    """The ansible_facts ``target`` reads, from a node's /etc/os-release fields (ID, ID_LIKE, VERSION_ID): os_family
    RedHat where ID is rhel or ID_LIKE names it, Debian where ID or ID_LIKE is debian, else empty."""
    ident = str(os_release.get("ID") or "")
    like = str(os_release.get("ID_LIKE") or "").split()
    version = str(os_release.get("VERSION_ID") or "")
    family = "RedHat" if "rhel" in (ident, *like) else "Debian" if "debian" in (ident, *like) else ""
    return {"os_family": family, "distribution": DISTRIBUTIONS.get(ident, ident), "distribution_version": version,
            "distribution_major_version": version.split(".", maxsplit=1)[0]}


def release_line(release: Mapping, name: str | None) -> Mapping:
    """Release line ``name`` of the stack release: the default line (the release's top level) for None, else
    ``lines[name]``. Raises ValueError naming the lines there are."""
    if name is None:
        return release
    lines = release.get("lines") or {}
    if name not in lines:
        raise ValueError(f"no release line {name!r} (lines: {', '.join(lines) or 'none'})")
    return lines[name]


def pins(release: Mapping, line: str | None = None, folder: str | None = None) -> dict[str, str]:
    """The pins of release line ``line`` (None: the default line) with the overrides of repository folder ``folder``
    where the line has any: driver_branch, driver_version, cuda_version, cudnn_version, nccl_version,
    nccl_cuda_version. Raises ValueError for an unknown line."""
    chosen = release_line(release, line)
    overrides = ((chosen.get("targets") or {}).get(folder) or {}).get("pins") or {}
    return {**chosen["pins"], **overrides}


def switches(profile: Mapping) -> dict[str, bool]:
    """Which hardware-bound services a node of hardware profile ``profile`` (the profile's mapping) runs:
    ``fabricmanager`` (GPUs on an NVSwitch board: gpu.nvswitch), ``nvlsm`` (such a board with NVLink 5 or newer:
    NVIDIA starts the NVLink Subnet Manager with Fabric Manager there) and ``imex`` (nvlink_domain.imex)."""
    gpu = profile.get("gpu") or {}
    nvswitch = int(gpu.get("count") or 0) > 0 and bool(gpu.get("nvswitch"))
    nvlink = int((gpu.get("nvlink") or {}).get("version") or 0)
    return {"fabricmanager": nvswitch, "nvlsm": nvswitch and nvlink >= 5,
            "imex": bool((profile.get("nvlink_domain") or {}).get("imex"))}


def stack_pins(release: Mapping, profile: Mapping, folder: str | None = None) -> dict[str, str]:
    """Filter ``stack_pins``: ``pins`` of the release line profile ``profile`` names (its ``stack_line``)."""
    return pins(release, profile.get("stack_line"), folder)


class FilterModule:
    """``release | stack_pins(profile, folder)``, ``ansible_facts | stack_target``, ``profile | stack_switches``."""

    def filters(self) -> dict:
        return {"stack_target": target, "stack_pins": stack_pins, "stack_switches": switches}
