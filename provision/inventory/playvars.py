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

The same templates with the same inputs give the same values, so each distinct set of inputs is
templated once: for every requested name, the variables its templates read (found by parsing
them, transitively) are the key, with the label's facts. 1,250 hosts of one group cost one
rendering of the stack release, not 1,250. A template whose inputs cannot be known from its text
(``vars``, ``hostvars``, a ``vars``/``varnames``/``template`` lookup, a Jinja syntax error) or
whose inputs are not plain data is templated for its host alone, as before.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import jinja2
import jinja2.nodes
import yaml

from provision import paths
from provision.errors import InventoryError
from provision.inventory import Problem, Vault

PLAYBOOKS = paths.PLAYBOOKS
SELECTORS = ("provision_profile", "provision_os")  # templated before facts() sees them
ROLES = paths.ROLES


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
              roles: Sequence[str] = (), session=None) -> tuple[dict[str, dict[str, dict]], list[Problem]]:
    """({host: {label: {name: templated value}}}, problems) for the hosts of ``sources``.

    ``facts(host, raw_vars)`` gives {label: ansible_facts} to template with, once per label (a node's
    possible OS targets), or None to skip the host (not a GPU node). A name the host lacks falls back to
    ``roles``' defaults; a name that cannot be templated is a Problem (file, host, field). ``session``:
    the ``_ansible.Session`` that already read ``sources`` (``Inventory.session``), used instead of
    parsing them again (its base folder is the playbooks' while this runs). Raises InventoryError as
    ``inventory.read``.
    """
    from provision.inventory import _ansible

    _plugins()
    defaults = role_defaults(roles)
    if session is None:
        session = _ansible.Session([str(s) for s in sources], vault.ids, vault.password_files)
    before = session.loader.get_basedir()
    session.loader.set_basedir(str(PLAYBOOKS))  # playbooks/group_vars join the precedence, as in a run
    try:
        return _templated(session, sources, names, facts, limit, defaults)
    finally:
        session.loader.set_basedir(before)


def _templated(session, sources: Sequence[Path], names: Sequence[str],
               facts: Callable[[str, dict], dict[str, dict] | None], limit: list[str] | None,
               defaults: dict) -> tuple[dict[str, dict[str, dict]], list[Problem]]:
    from provision.inventory import _ansible
    from provision.inventory.fields import plain

    selected, unknown = session.select(limit)
    if unknown:
        raise InventoryError(f"--limit names hosts not in the inventory: {', '.join(unknown)}")
    out: dict[str, dict[str, dict]] = {}
    problems: list[Problem] = []
    rendered: dict[str, dict] = {}  # the key of a host's inputs (``_inputs``) -> its templated row
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
            key = _inputs(variables, names, label, given)
            row = rendered.get(key) if key is not None else None
            if row is None:
                row = _render(session, variables, names, given, host.name, sources, problems)
                if row is None:
                    break
                if key is not None:
                    rendered[key] = row
            out.setdefault(host.name, {})[label] = dict(row)
    return out, problems


def _render(session, variables: dict, names: Sequence[str], given: dict, host: str, sources: Sequence[Path],
            problems: list[Problem]) -> dict | None:
    """{name: templated value} of ``names`` the host has, or None (its Problem added) when one fails."""
    from provision.inventory import _ansible
    from provision.inventory.fields import plain

    templar = session.templar({**variables, "ansible_facts": given})
    row = {}
    for name in names:
        if name not in variables:
            continue
        try:
            row[name] = plain(templar.template(variables[name]))
        except _ansible.AnsibleError as exc:
            where = _ansible.origin(variables[name]) or str(sources[0])
            problems.append(Problem(where, host, name, f"field '{name}' cannot be templated: "
                                    f"{_ansible.one_line(exc)}"))
            return None
    return row


# Names through which a template reads variables its text does not name: not keyable.
DYNAMIC = frozenset({"vars", "hostvars"})
DYNAMIC_LOOKUP = re.compile(r"""\b(lookup|query|q)\s*\(\s*['"](ansible\.builtin\.)?(vars|varnames|template)['"]""")
_JINJA = jinja2.Environment()  # parses only (Ansible's templates use Jinja's default syntax)


def _inputs(variables: dict, names: Sequence[str], label: str, given: dict) -> str | None:
    """The key of what templating ``names`` reads: the label, its facts and the raw value of every
    variable the names' templates name, transitively; None when that cannot be known."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in DYNAMIC:
            return None
        if name in variables:
            found = _references(variables[name])
            if found is None:
                return None
            todo.extend(found)
    try:
        return json.dumps([label, given, {n: variables[n] for n in sorted(seen) if n in variables}], sort_keys=True)
    except (TypeError, ValueError):  # a value that is not plain data (an object of Ansible's)
        return None


def _references(value) -> frozenset[str] | None:
    """Every variable name the templates in ``value`` (a string, or lists and mappings of them) read."""
    if isinstance(value, str):
        return _names_in(str(value))
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)):
        found: set[str] = set()
        for item in value:
            names = _references(item)
            if names is None:
                return None
            found |= names
        return frozenset(found)
    return frozenset()


@functools.lru_cache(maxsize=4096)
def _names_in(text: str) -> frozenset[str] | None:
    """Every name template ``text`` reads (each Name node Jinja parses; a name the template sets itself
    is counted too, which only makes the key larger), or None for a dynamic or unparsable one."""
    if "{" not in text:
        return frozenset()
    if DYNAMIC_LOOKUP.search(text):
        return None
    try:
        tree = _JINJA.parse(text)
    except jinja2.TemplateSyntaxError:
        return None
    return frozenset(node.name for node in tree.find_all(jinja2.nodes.Name) if node.ctx == "load")


_LOADED: list[bool] = []


def _plugins() -> None:
    """Ansible's plugin loader, once per process (the playbook's ``lookup('ansible.builtin.file')``
    needs it; ansible's own CLIs call the same at start)."""
    if not _LOADED:
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader()
        _LOADED.append(True)
