"""The burn-in checks, found rather than listed: every module of this package that declares
``CHECK`` (``base``, ``rules``, ``faults``, ``references`` and ``_``-names are helpers; the package ``common`` holds
the code checks share, since no check imports another: tests/unit/test_layers.py), plus the modules in
the folders of ``PROVISION_CHECK_PATH`` (``os.pathsep``-separated, like ReFrame's check
search path), so a site adds a check without touching this package.

Run order comes from each declaration: ``(scope is node first, order, id)``; cheap
diagnostics first, so a node whose GPU fell off the bus is named by gpu_health/xid before
the stress tests run.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import pkgutil
from pathlib import Path

from provision.checks.base import Check, Finding, Outcome, Role, Scope, Step
from provision.errors import ProvisionError
from provision.profiles import layers

HELPERS = {"base", "rules", "faults", "references"}
CHECK_PATH_ENV = "PROVISION_CHECK_PATH"


def registry() -> dict[str, Check]:
    """Check id -> Check, in run order. Raises ProvisionError when a module's id is not its file
    name, two modules declare the same id, or a site module cannot be loaded."""
    return {c.id: c for c, _doc in _found()}


def default_rows() -> tuple[layers.DefaultRows, ...]:
    """Every registered check's default reference rows (``Check.references``), in run order: the lowest layer of a
    profile's references. ``provision.profiles`` sits below the checks and takes them from here (registered with
    ``layers.provide`` as this package is imported), laying each check's under the profiles it applies to."""
    key = _site_files()
    if _DEFAULTS and _DEFAULTS[0][0] == key:  # a profile is built per distinct view: the site's modules run once
        return _DEFAULTS[0][1]
    rows = tuple(layers.DefaultRows(c.id, tuple(c.placement.needs), c.data.references) for c in registry().values()
                 if c.data.references)
    _DEFAULTS[:] = [(key, rows)]
    return rows


_DEFAULTS: list[tuple[tuple, tuple[layers.DefaultRows, ...]]] = []  # (the site's check files, their rows)


def _site_files() -> tuple:
    """What the site's check modules are now: ``PROVISION_CHECK_PATH`` and each module's path, size and change time
    (the package's own checks do not change while it runs)."""
    folders = [f for f in os.environ.get(CHECK_PATH_ENV, "").split(os.pathsep) if f]
    found: list[tuple] = [tuple(folders)]
    for folder in folders:
        for path in sorted(Path(folder).glob("*.py")):
            try:
                stat = path.stat()
            except OSError:
                continue
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


layers.provide(default_rows)


def markdown_table() -> str:
    """The checks as a Markdown table (id, scope, tool, what it judges: the first sentence of
    the module's docstring after ``id:``), in run order: README.md's table is this output."""
    rows = ["| check | scope | tool | applies to | judges |", "| --- | --- | --- | --- | --- |"]
    for check, doc in _found():
        first = " ".join((doc or "").split("\n\n")[0].split())
        judges = first.split(":", 1)[1].strip() if first.startswith(f"{check.id}:") else first
        rows.append(f"| `{check.id}` | {check.scope.value} | {check.tool} | {platforms(check)} | {judges} |")
    return "\n".join(rows) + "\n"


def platforms(check: Check) -> str:
    """The platform traits a check needs and those of its narrower rules (``provision.profiles.PLATFORMS``):
    ``gpu; rule pcie: pcie_gpu``, ``-`` for a check that applies everywhere."""
    rules = "; ".join(f"rule {rule}: {', '.join(needs)}" for rule, needs in check.rules.items())
    return "; ".join(part for part in (", ".join(check.needs), rules) if part) or "-"


def _found() -> list[tuple[Check, str]]:
    found: dict[str, tuple[Check, str]] = {}
    for name, check, doc in _package_checks() + _site_checks():
        if check.id != name or check.id in found:
            raise ProvisionError(f"check module {name} registers id {check.id!r}"
                             + (" twice" if check.id in found else ""))
        found[check.id] = (check, doc)
    for check, _doc in found.values():
        unknown = [c for c in check.data.references_from if c not in found]
        if unknown:
            raise ProvisionError(f"check {check.id} judges by the references of {', '.join(unknown)}: no such check")
    for check_id, (check, doc) in list(found.items()):
        if check.gathers:  # a gathered output is read as its own check reads it: the source's parsers, its own first
            if check.gathers not in found:
                raise ProvisionError(f"check {check_id} gathers the outputs of {check.gathers}: no such check")
            source = found[check.gathers][0]
            parsers = {**source.data.parsers, **check.data.parsers}
            found[check_id] = (dataclasses.replace(check, data=dataclasses.replace(check.data, parsers=parsers)), doc)
    return sorted(found.values(), key=lambda pair: (pair[0].scope is not Scope.NODE, pair[0].order, pair[0].id))


def ids() -> list[str]:
    """The check ids in run order."""
    return list(registry())


def _package_checks() -> list[tuple[str, Check, str]]:
    out = []
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name in HELPERS or info.name.startswith("_") or info.ispkg:  # a package (common) holds no check
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "CHECK"):
            out.append((info.name, module.CHECK, module.__doc__ or ""))
    return out


def _site_checks() -> list[tuple[str, Check, str]]:
    out = []
    for folder in filter(None, os.environ.get(CHECK_PATH_ENV, "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            if path.name.startswith("_"):
                continue
            spec = importlib.util.spec_from_file_location(f"provision_site_checks.{path.stem}", path)
            if spec is None or spec.loader is None:
                raise ProvisionError(f"{path}: not a loadable Python module ({CHECK_PATH_ENV})")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as exc:  # a site's module: its mistake is bad input, named in one line
                raise ProvisionError(f"{path}: cannot load this check module ({CHECK_PATH_ENV}): "
                                     f"{type(exc).__name__}: {exc}") from None
            if hasattr(module, "CHECK"):
                out.append((path.stem, module.CHECK, module.__doc__ or ""))
    return out


__all__ = ["Check", "Finding", "Outcome", "Role", "Scope", "Step", "registry", "ids", "markdown_table", "platforms",
           "CHECK_PATH_ENV"]
