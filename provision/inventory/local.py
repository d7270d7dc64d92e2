"""The host of ``provision burnin --local``: the machine the burn-in runs on, as a ``Host``.

Its name is ``socket.gethostname()`` unless given; its profile and site variables come either from
an inventory (the host of that name, or of the name's first label: ``gpu001`` for
``gpu001.cluster.example``) or from a profile name alone (no site variables then: no reference
overrides, no storage facts). Nothing here connects anywhere.
"""
from __future__ import annotations

import getpass
import socket
from pathlib import Path

from provision.errors import InventoryError, ProvisionError
from provision.inventory import Host, Inventory, Vault, bmcvars, read
from provision.inventory.model import PROFILE_NAME, SAFE_NAME


def this_host(name: str | None, profile: str | None, sources: tuple[Path, ...], vault: Vault) -> tuple[str, Host]:
    """(label of where the host came from, the host). Raises ProvisionError (exit 2) when neither or
    both of ``profile`` and ``sources`` are given, InventoryError when the inventory does not hold
    the host or holds it without ``provision_profile``."""
    if bool(profile) == bool(sources):
        raise ProvisionError("burnin --local: give the hardware profile (--profile NAME) or an inventory that "
                             "holds this host (-i INVENTORY), one of the two")
    given = name or socket.gethostname()
    if not SAFE_NAME.match(given) or ".." in given:  # it names the run's files (raw/<host>/, junit/<host>.xml)
        raise ProvisionError(f"burnin --local: host name {ascii(given[:80])} is not a safe name (letters, digits, "
                             "'.', '_', '-', not starting with '.' or '-', at most 200 characters): give --host NAME")
    if profile and (not PROFILE_NAME.match(profile) or profile.endswith((".yaml", ".yml"))):
        raise ProvisionError(f"burnin --local: --profile {ascii(profile[:80])}: the name of a bundled profile, not "
                             "a path (the names of provision/profiles/data/*.yaml)")
    if profile:
        return f"this machine ({given}, --profile {profile})", Host(given, "localhost", 0, getpass.getuser(), None,
                                                                     None, profile)
    with bmcvars.shapes_only():  # the BMC's password and CA files are the controller's; --local reaches no BMC
        inventory = read(sources, vault)  # another host's bad field is not this burn-in's business
    host = _named(inventory, given)
    names = {given, given.split(".", 1)[0]}
    for problem in inventory.problems:
        if host is None and names & {p.strip() for p in problem.host.split(",")}:
            raise problem
    if host is None:
        raise InventoryError(f"{inventory.label}: host {given} (this machine{' by --host' if name else ''}) is not in "
                             "the inventory; give its inventory name with --host NAME")
    if host.profile is None:
        raise InventoryError(f"{inventory.label}: host {host.name}: no provision_profile: not a GPU node")
    return inventory.label, host


def _named(inventory: Inventory, name: str) -> Host | None:
    for candidate in (name, name.split(".", 1)[0]):
        found = [h for h in inventory.hosts if h.name == candidate]
        if found:
            return found[0]
    return None
