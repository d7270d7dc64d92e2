"""Ask ansible-core (2.19, pinned in pyproject.toml) to read inventories, in this process.

Parsing (INI, YAML, host ranges, group_vars/host_vars files and folders, several sources),
variable precedence, templating and vault are Ansible's own; this module only asks and
turns Ansible's errors into one line. Two private ansible-core names are used, for messages
only: ``Origin`` (the file and line a value came from) and ``DeferredWarningContext`` (to
collect parse failures instead of letting Display print them). ansible-core is imported
here, lazily, so that commands that read no inventory stay fast.

Before Ansible reads anything, YAML whose aliases would expand without bound is refused
(``aliases.py``). A host that more than one ``-i`` source defines is merged as Ansible merges
it (groups joined, the later source's variables win), and named in a warning: layered
inventories rely on the merge, but a second source silently changing a node's address or
profile should not go unseen.
"""
from __future__ import annotations

import os
import re

from provision import paths
from provision.errors import InventoryError
from provision.inventory import aliases

# The same configuration the playbook runs get (provision/runner/ansible.py sets it there too).
os.environ["ANSIBLE_CONFIG"] = str(paths.ROOT / "ansible.cfg")
os.environ["PROVISION_PROFILES_DIR"] = str(paths.PROFILES)  # playbooks/group_vars/all.yml reads the profiles there

from ansible import constants as C  # noqa: E402
from ansible._internal._datatag._tags import Origin  # noqa: E402
from ansible._internal._display_utils import DeferredWarningContext  # noqa: E402
from ansible.errors import AnsibleError  # noqa: E402
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.parsing.vault import VaultSecretsContext, get_file_vault_secret  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.vars import manager as _manager  # noqa: E402
from ansible.vars.hostvars import HostVars  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402

__all__ = ["AnsibleError", "Session", "one_line"]
INTERNAL_VARS = frozenset(C.INTERNAL_STATIC_VARS)  # magic variables (groups, hostvars, ...), not the host's own


_ANSIBLE_CLEAN_FACTS = getattr(_manager, "clean_facts", None)


def _clean_facts(facts):
    """ansible-core's ``clean_facts``, which ``VariableManager.get_vars`` calls for every host even when
    it has no facts (here: never, no node is reached), and which lists every connection plugin on
    disk on each call: two thirds of ``get_vars``' time at 1,250 hosts (bench/plan_scale.py). With no
    facts its answer is always {}; with facts it is ansible-core's own."""
    return _ANSIBLE_CLEAN_FACTS(facts) if facts and _ANSIBLE_CLEAN_FACTS else {}


if _ANSIBLE_CLEAN_FACTS is not None:  # an ansible-core without it (a later refactor) is used as it is
    _manager.clean_facts = _clean_facts  # this process only reads inventories; playbooks run in their own


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def quiet() -> DeferredWarningContext:
    """A context in which Ansible's warnings are collected, not printed."""
    return DeferredWarningContext(variables={})


class Session:
    """One read of ``sources`` (paths): Ansible's loader with vault secrets, inventory and variables.

    Raises InventoryError when a vault option cannot be used or a source cannot be parsed.
    """

    def __init__(self, sources: list[str], vault_ids: tuple[str, ...] = (), password_files: tuple[str, ...] = ()):
        self.sources = sources
        aliases.check(sources)
        self.loader = DataLoader()
        _set_vault_secrets(self.loader, vault_ids, password_files)
        self.parse_warnings = quiet()
        with self.parse_warnings:
            self.manager = InventoryManager(loader=self.loader, sources=sources)
        _raise_parse_failure(self.parse_warnings)
        self.duplicates = self._defined_twice() if len(sources) > 1 else []
        self.variables = VariableManager(loader=self.loader, inventory=self.manager)
        HostVars(self.manager, self.variables, self.loader)  # makes `hostvars` defined in templates

    def warnings(self) -> list[str]:
        return [*(" ".join(w.event.msg.split()) for w in self.parse_warnings.get_warnings()), *self.duplicates]

    def _defined_twice(self) -> list[str]:
        """One warning per host that several sources define (each source read again on its own)."""
        where: dict[str, list[str]] = {}
        with quiet():
            for source in self.sources:
                for name in InventoryManager(loader=self.loader, sources=[source]).hosts:
                    where.setdefault(name, []).append(source)
        return [f"host {name} is defined in {len(found)} inventory sources ({', '.join(found)}): "
                f"Ansible merges them, the last one's variables win" for name, found in where.items() if len(found) > 1]

    def select(self, limit: list[str] | None) -> tuple[list, list[str]]:
        """Hosts matching Ansible ``limit`` patterns (all when None), and the patterns that match nothing."""
        with quiet():
            unknown = [p for p in limit or () if not self.manager.list_hosts(p.lstrip("!&"))]
            if limit:
                self.manager.subset(limit)
            return self.manager.get_hosts(), unknown

    def host_vars(self, host) -> dict:
        """Every variable Ansible gives ``host`` outside a play (magic ones included). Raises AnsibleError."""
        with quiet():
            return self.variables.get_vars(host=host, include_hostvars=True)

    def templar(self, variables: dict) -> Templar:
        return Templar(loader=self.loader, variables=variables)

    def undecryptable_file(self, host) -> str | None:
        """The first vars file of ``host`` that the loaded vault secrets cannot read (for messages only)."""
        names = [host.name, *(g.name for g in host.get_groups())]
        for source in self.sources:
            base = source if os.path.isdir(source) else os.path.dirname(source)
            for folder, name in [("host_vars", names[0])] + [("group_vars", n) for n in names[1:]]:
                for found in self.loader.find_vars_files(os.path.join(base, folder), name):
                    try:
                        self.loader.load_from_file(found, cache="none")
                    except AnsibleError:
                        return found
        return None


def origin(value) -> str | None:
    """``file:line`` a loaded value came from, per Ansible's own tag; None when untagged."""
    tag = Origin.get_tag(value)
    if tag is None or not tag.path:
        return None
    return f"{tag.path}:{tag.line_num}" if tag.line_num else tag.path


def _set_vault_secrets(loader: DataLoader, vault_ids, password_files) -> None:
    """Ansible's vault options: ``--vault-id [label@]file``, ``--vault-password-file``, and the
    ANSIBLE_VAULT_IDENTITY_LIST / ANSIBLE_VAULT_PASSWORD_FILE settings. Never prompts."""
    files = [*password_files, *([C.DEFAULT_VAULT_PASSWORD_FILE] if C.DEFAULT_VAULT_PASSWORD_FILE else [])]
    slugs = [*C.DEFAULT_VAULT_IDENTITY_LIST, *vault_ids, *(f"{C.DEFAULT_VAULT_IDENTITY}@{f}" for f in files)]
    secrets = []
    for slug in slugs:
        label, source = slug.split("@", 1) if "@" in slug else (C.DEFAULT_VAULT_IDENTITY, slug)
        if source in ("prompt", "prompt_ask_vault_pass"):
            raise InventoryError(f"--vault-id {slug}: cannot prompt for a vault password; give a password file")
        try:
            secret = get_file_vault_secret(filename=source, vault_id=label, loader=loader)
            secret.load()
        except AnsibleError as exc:
            raise InventoryError(f"--vault-id {slug}: {one_line(exc)}") from None
        secrets.append((label, secret))
    loader.set_vault_secrets(secrets)
    current = VaultSecretsContext.current(optional=True)  # inline !vault values decrypt through it
    if current is None:
        VaultSecretsContext.initialize(VaultSecretsContext(secrets))
    else:
        current.secrets = secrets


def _raise_parse_failure(warnings: DeferredWarningContext) -> None:
    """Raise InventoryError with Ansible's first reason when a source could not be parsed."""
    events = [w.event for w in warnings.get_warnings()]
    unparsed = [e for e in events if e.msg.startswith("Unable to parse ")]
    if not unparsed:
        return
    for event in events:
        if event.msg.startswith("Failed to parse inventory with"):
            where, reason = None, None
            link = event.chain.event if event.chain else None
            while link is not None:
                where = where or _origin_path(link.formatted_source_context)
                if reason is None and link.msg != "Failed to parse inventory.":
                    reason = " ".join(link.msg.split())
                link = link.chain.event if link.chain else None
            raise InventoryError(f"{where or '?'}: Ansible could not read it as an inventory: {reason}")
    source = unparsed[0].msg.removeprefix("Unable to parse ").removesuffix(" as an inventory source")
    if os.path.isdir(source):
        raise InventoryError(f"{source}: inventory has no hosts (no inventory file in the folder)")
    raise InventoryError(f"{source}: Ansible could not read it as an inventory (no inventory plugin accepted it)")


def _origin_path(context: str | None) -> str | None:
    match = re.match(r"Origin: (/[^\n]*)", context or "")
    return match.group(1) if match else None
