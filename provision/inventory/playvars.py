"""A host's variables as the install playbook sees them: with ``playbooks/group_vars`` and the roles' defaults.

``provision plan`` must check the stack the roles will install, not a second copy of it. Ansible
decides what that is: role defaults (lowest), the inventory's ``all`` group, the playbook's
``group_vars/all.yml`` (which derives the pins from provision/profiles/stack_release.yaml and
outranks the inventory's ``all``), the inventory's other groups, then host_vars (Ansible's
variable precedence, https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_variables.html).
``play_vars`` asks ansible-core for exactly that, with the playbook folder as its base folder,
and templates the requested names with the node's OS facts given by the caller (the facts the
playbook's expressions read: os_family, distribution, distribution_version,
distribution_major_version), since no node is reached.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from provision import paths
from provision.errors import InventoryError
from provision.inventory import Problem, Vault

PLAYBOOKS = paths.ROOT / "playbooks"
SELECTORS = ("provision_profile", "provision_os")  # templated before facts() sees them
ROLES = paths.ROOT / "roles"


def role_defaults(roles: Sequence[str]) -> dict:
    """The merged ``defaults/main.yml`` of ``roles`` (later roles win, as in a play)."""
    merged: dict = {}
    for role in roles:
        path = ROLES / role / "defaults" / "main.yml"
        if path.is_file():
            merged.update(yaml.safe_load(path.read_text()) or {})
    return merged


def play_vars(sources: Sequence[Path], names: Sequence[str], facts: Callable[[str, dict], dict[str, dict] | None],
              vault: Vault = Vault(), limit: list[str] | None = None,
              roles: Sequence[str] = ()) -> tuple[dict[str, dict[str, dict]], list[Problem]]:
    """({host: {label: {name: templated value}}}, problems) for the hosts of ``sources``.

    ``facts(host, raw_vars)`` gives {label: ansible_facts} to template with, once per label (a node's
    possible OS targets), or None to skip the host (not a GPU node). A name the host lacks falls back to
    ``roles``' defaults; a name that cannot be templated is a Problem (file, host, field). Raises
    InventoryError as ``inventory.read``.
    """
    from provision.inventory import _ansible
    from provision.inventory.fields import plain

    _plugins()
    defaults = role_defaults(roles)
    session = _ansible.Session([str(s) for s in sources], vault.ids, vault.password_files)
    session.loader.set_basedir(str(PLAYBOOKS))  # playbooks/group_vars join the precedence, as in a run
    selected, unknown = session.select(limit)
    if unknown:
        raise InventoryError(f"--limit names hosts not in the inventory: {', '.join(unknown)}")
    out: dict[str, dict[str, dict]] = {}
    problems: list[Problem] = []
    for host in selected:
        try:
            variables = {**defaults, **session.host_vars(host)}
        except _ansible.AnsibleError as exc:
            problems.append(Problem(str(sources[0]), host.name, None, _ansible.one_line(exc)))
            continue
        try:  # the variables facts() selects on (the profile, the OS target) may be templates too
            chosen = {k: plain(session.templar(variables).template(variables[k])) for k in SELECTORS if k in variables}
        except _ansible.AnsibleError as exc:
            problems.append(Problem(str(sources[0]), host.name, None, _ansible.one_line(exc)))
            continue
        labels = facts(host.name, {**variables, **chosen})
        for label, given in (labels or {}).items():
            templar = session.templar({**variables, "ansible_facts": given})
            row = {}
            for name in names:
                if name not in variables:
                    continue
                try:
                    row[name] = plain(templar.template(variables[name]))
                except _ansible.AnsibleError as exc:
                    where = _ansible.origin(variables[name]) or str(sources[0])
                    problems.append(Problem(where, host.name, name, f"field '{name}' cannot be templated: "
                                            f"{_ansible.one_line(exc)}"))
                    break
            else:
                out.setdefault(host.name, {})[label] = row
                continue
            break
    return out, problems

_LOADED: list[bool] = []


def _plugins() -> None:
    """Ansible's plugin loader, once per process (the playbook's ``lookup('ansible.builtin.file')``
    needs it; ansible's own CLIs call the same at start)."""
    if not _LOADED:
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader()
        _LOADED.append(True)
