"""Inventories as frozen dataclasses, read by ansible-core itself (see ``_ansible.py``).

``resolve`` turns each ``-i`` (a folder, a file, or a name under ``inventory/``) into a path;
``read`` reads one or several (as ``ansible-playbook -i A -i B`` would: later sources win),
templates each host's fields as Ansible does and collects every ``Problem`` (file, host,
field); ``load`` is ``read`` that raises the first problem. A host without
``provision_profile`` is not a GPU node: it is listed (``profile`` None), never installed or
burned in. Nothing here connects to a host.

What is refused, and why, is in ``fields.py`` (names, profile, timeouts, host keys, connection)
and ``aliases.py`` (YAML that expands without bound); a host that several sources define is
merged as Ansible merges it and named in ``warnings`` (``_ansible.py``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision import paths
from provision.errors import InventoryError


from provision.inventory.model import NVLINK_DOMAIN_VAR, Host, Problem, Vault  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Inventory:
    """``path`` is the first source; ``hosts`` the hosts that passed; ``problems`` one per bad host;
    ``session`` Ansible's parsed sources (``_ansible.Session``, None when not read by ``read``), kept
    so that a later step of the same run (the plan's playbook variables) does not parse them again."""

    path: Path
    hosts: tuple[Host, ...]
    sources: tuple[Path, ...] = ()
    vault: Vault = Vault()
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()
    session: Any = field(default=None, repr=False, compare=False, hash=False)
    # GPU node name -> the view of its profile its validation built (``fields.build``: the profile with the host's
    # overrides and site facts), handed to the run's targets (``provision.targets``) so that no one builds it again.
    views: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    @property
    def gpu_hosts(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.profile is not None)

    @property
    def label(self) -> str:
        return ", ".join(str(s) for s in self.sources or (self.path,))


def resolve(arg: str) -> Path:
    """``arg`` as given if it exists, else ``inventory/<arg>``. Raises InventoryError (for ``''`` too: an
    unset variable is no inventory, never the current folder)."""
    if not arg.strip():
        raise InventoryError(f"-i {arg!r}: not an inventory: name an inventory folder or file")
    for candidate in (Path(arg), paths.INVENTORIES / arg):
        if candidate.exists():
            return candidate.resolve()
    raise InventoryError(f"{arg}: no such inventory (neither a path nor a folder under {paths.INVENTORIES})")


def resolve_all(args: str | Sequence[str]) -> tuple[Path, ...]:
    """Every ``-i`` resolved, in order. Raises InventoryError."""
    return tuple(resolve(a) for a in ([args] if isinstance(args, str) else args))


def read(sources: Path | Sequence[Path], vault: Vault = Vault(), limit: list[str] | None = None) -> Inventory:
    """Read ``sources`` with Ansible; every selected host becomes a Host or a Problem.

    ``limit``: Ansible host patterns (names, groups). Raises InventoryError when a source cannot
    be parsed, a vault option cannot be used, nothing is in it, or ``limit`` matches nothing.
    """
    from provision.inventory import _ansible, fields  # ansible-core only when an inventory is read

    sources = (sources,) if isinstance(sources, Path) else tuple(sources)
    label = ", ".join(str(s) for s in sources)
    session = _ansible.Session([str(s) for s in sources], vault.ids, vault.password_files)
    selected, unknown = session.select(limit)
    if unknown:
        raise InventoryError(f"{label}: --limit names hosts not in the inventory: {', '.join(unknown)}")
    if not selected:
        raise InventoryError(f"{label}: inventory has no hosts")
    hosts, problems, views = [], [], {}
    for ansible_host in selected:
        try:
            host, view = fields.build(session, ansible_host)
        except Problem as problem:
            problems.append(problem)
            continue
        hosts.append(host)
        if view is not None:
            views[host.name] = view
    return Inventory(path=sources[0], hosts=tuple(hosts), sources=sources, vault=vault,
                     problems=_merge(problems), warnings=tuple(session.warnings()), session=session, views=views)


def load(sources: Path | Sequence[Path], vault: Vault = Vault(), limit: list[str] | None = None) -> Inventory:
    """``read``, raising the first Problem (one line: file, host, field). Raises InventoryError."""
    inventory = read(sources, vault, limit)
    if inventory.problems:
        raise inventory.problems[0]
    return inventory


def _merge(problems: list[Problem]) -> tuple[Problem, ...]:
    """One Problem per (file, field, text): a vault file nobody can open is one problem, not one per host."""
    merged: dict[tuple, list[Problem]] = {}
    for p in problems:
        merged.setdefault((p.file, p.field, p.text), []).append(p)
    out = []
    for (file, field_name, text), same in merged.items():
        names = [p.host for p in same]
        host = ", ".join(names[:3]) + (f" (and {len(names) - 3} more)" if len(names) > 3 else "")
        out.append(same[0] if len(same) == 1 else Problem(file, host, field_name, text))
    return tuple(out)
