"""The inventory's value types: ``Host`` (one node), ``Vault`` (how Ansible Vault secrets are opened), ``Problem``
(one bad host field), re-exported by ``provision.inventory``; a leaf module, so that ``fields`` and the package
import it without importing each other."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.errors import InventoryError

NVLINK_DOMAIN_VAR = "provision_nvlink_domain"  # the inventory's name for a host's NVLink domain
BMC_ADDRESS_VAR = "provision_bmc_address"  # the inventory's name for a host's BMC (provision.bmc.config)

# what DNS names and Ansible's groups need; at most 200 characters, so that a file named after the host
# (junit/<host>.xml and its temporary twin) stays within Linux's 255-byte NAME_MAX
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}\Z")
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class Host:
    """One node: ``address`` is what SSH connects to (``ansible_host``, else the name);
    ``profile`` the hardware profile name, None when the host is not a GPU node;
    ``groups`` its Ansible groups (parents included, ``all`` left out); ``ssh_options`` the
    options Ansible's ssh connection gives ``ssh`` before ``address`` (``sshargs.py``): the
    burn-in resolves them with OpenSSH (``provision.engine.sshconfig``)."""

    name: str
    address: str
    port: int
    user: str
    key_file: str | None
    known_hosts_file: str | None
    profile: str | None
    groups: tuple[str, ...] = ()
    ssh_options: tuple[str, ...] = ()
    vars: dict = field(repr=False, hash=False, compare=False, default_factory=dict)

    @property
    def nvlink_domain(self) -> str | None:
        """The NVLink domain the host's trays belong to (GB200/GB300 NVL: the rack's 18 trays), named by the
        inventory variable ``provision_nvlink_domain`` (the IMEX role's nodes_config.cfg groups by it too); None
        where the inventory names none."""
        name = self.vars.get(NVLINK_DOMAIN_VAR)
        return str(name) if name not in (None, "") else None

    @property
    def has_bmc(self) -> bool:
        """Whether the inventory names the host's BMC (``provision_bmc_address``; ``provision.bmc.config``): its
        checks then ask it too, out of band."""
        return self.vars.get(BMC_ADDRESS_VAR) not in (None, "")


@dataclass(frozen=True)
class Vault:
    """Ansible's vault options: ``ids`` as ``--vault-id [label@]file``, ``password_files``."""

    ids: tuple[str, ...] = ()
    password_files: tuple[str, ...] = ()

    def args(self) -> list[str]:
        """The same options for ansible-playbook."""
        return [*(a for i in self.ids for a in ("--vault-id", i)),
                *(a for f in self.password_files for a in ("--vault-password-file", f))]


class Problem(InventoryError):
    """One bad host field: ``file`` (path[:line]), ``host``, ``field`` (None when no one field), ``text``."""

    def __init__(self, file: str, host: str, field_name: str | None, text: str):
        self.file, self.host, self.field, self.text = str(file), host, field_name, text
        super().__init__(f"{self.file}: {'hosts' if ', ' in host else 'host'} {host}: {text}")
