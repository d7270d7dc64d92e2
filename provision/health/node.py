"""The node a health check judges: this machine, described by the file the ``health_check`` role writes
(``CONFIG``), or read from an inventory (``-i``, as ``burnin --local`` reads it), or by a profile name alone.

The file is JSON, written once per node from the inventory, so that a call every few minutes reads a few hundred
bytes instead of the whole inventory through Ansible (which costs about a second of CPU)::

    {"host": "gpu001", "profile": "h100-sxm5-80g-ndr", "slurm_node": "gpu001",
     "vars": {"provision_reference_overrides": {...}, ...}}

``host`` is the inventory name (the results' host), ``slurm_node`` its NodeName in slurm.conf (default: ``host``),
``vars`` the host's ``provision_*`` variables (never the BMC's credentials: this file is readable on the node).
"""
from __future__ import annotations

import getpass
import json
from dataclasses import dataclass
from pathlib import Path

from provision.errors import InventoryError
from provision.inventory import Host
from provision.inventory.model import PROFILE_NAME, SAFE_NAME
from provision.slurm.drain import NODE_NAME

CONFIG = Path("/etc/provision/health.json")  # where the health_check role writes it
KEYS = ("host", "profile", "slurm_node", "vars")
SECRET_VARS = ("provision_bmc_username", "provision_bmc_password_file", "provision_bmc_password_env",
               "provision_bmc_ca_file")  # the controller's; refused in the node's file


@dataclass(frozen=True)
class Node:
    """This machine as the health check judges it: its ``host`` (name, profile, variables), its Slurm NodeName
    and where that came from (``label``, for messages)."""

    host: Host
    slurm_node: str
    label: str


def from_config(path: Path) -> Node:
    """The node ``path`` describes (module docstring). Raises InventoryError naming the file and field for a
    missing or unreadable file, bad JSON, an unknown key, a bad name, profile or variable."""
    data = _read(path)
    name, profile = data.get("host"), data.get("profile")
    if not isinstance(name, str) or not SAFE_NAME.match(name) or ".." in name:
        raise InventoryError(f"{path}: field 'host': {name!r} is not a host name")
    if not isinstance(profile, str) or not PROFILE_NAME.match(profile):
        raise InventoryError(f"{path}: host {name}: field 'profile': {profile!r} is not a profile name")
    slurm_node = data.get("slurm_node", name)
    if not isinstance(slurm_node, str) or not NODE_NAME.fullmatch(slurm_node):
        raise InventoryError(f"{path}: host {name}: field 'slurm_node': {slurm_node!r} is not one Slurm node name")
    variables = _variables(path, name, data.get("vars", {}))
    host = Host(name, "localhost", 0, getpass.getuser(), None, None, profile, vars=variables)
    return Node(host, slurm_node, str(path))


MOST_BYTES = 1 << 20  # a node's file is a few KB; a larger one (or a device, a FIFO) is not one


def _read(path: Path) -> dict:
    try:
        if path.exists() and (not path.is_file() or path.stat().st_size > MOST_BYTES):
            raise InventoryError(f"{path}: not a regular file of at most {MOST_BYTES} bytes")
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InventoryError(f"{path}: no such file (the health_check role writes it; or give -i INVENTORY "
                             "or --profile NAME)") from None
    except OSError as exc:
        raise InventoryError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except RecursionError:
        raise InventoryError(f"{path}: not JSON: nested too deeply") from None
    except ValueError as exc:
        raise InventoryError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InventoryError(f"{path}: a JSON object is expected, not {type(data).__name__}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InventoryError(f"{path}: field '{unknown[0]}': unknown (known: {', '.join(KEYS)})")
    return data


def _variables(path: Path, name: str, variables) -> dict:
    if not isinstance(variables, dict):
        raise InventoryError(f"{path}: host {name}: field 'vars': a mapping is expected")
    for key in variables:
        if not isinstance(key, str) or not key.startswith("provision_") or key == "provision_profile":
            raise InventoryError(f"{path}: host {name}: field 'vars.{key}': only provision_* variables (the "
                                 "profile is 'profile')")
        if key in SECRET_VARS:
            raise InventoryError(f"{path}: host {name}: field 'vars.{key}': a BMC credential has no place on "
                                 "the node")
    return dict(variables)


def from_inventory(sources: tuple[Path, ...], name: str | None, profile: str | None, vault) -> Node:
    """This machine from an inventory or a profile name (``provision.inventory.local.this_host``); its Slurm node
    is ``provision_slurm_node`` or its name."""
    from provision.inventory import local
    from provision.slurm.drain import node_names

    label, host = local.this_host(name, profile, sources, vault)
    return Node(host, node_names([host])[host.name], label)
