"""The package's layering (issue 35 item 6): every top-level module of ``provision`` sits in the import-linter layers
contract (pyproject.toml), and no import cycle exists between its modules, counting imports inside functions (not
those under ``if TYPE_CHECKING:``, which never run; this walks every module's AST). No module of ``provision.checks``
imports a check module (issue 35 item 3): code two checks share lives in ``provision.checks.common``."""
from __future__ import annotations

import ast
import tomllib

from provision import paths

PACKAGE = paths.ROOT / "provision"


def _module(path) -> str:
    parts = list(path.relative_to(paths.ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for annotations only, never executed)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its file (top level or inside a function)."""
    return {module: imported(module, path.read_text(), path.name == "__init__.py") for module, path in MODULES.items()}


def imported(module: str, source: str, is_package: bool = False) -> set[str]:
    """The package's modules that ``source`` (the text of ``module``) imports, top level or inside a function."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {r for a in node.names if (r := _resolve(a.name))}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}")
                if target is None or target == module:
                    target = _resolve(base)
                if target:
                    found.add(target)
    return found - {module}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another (each reaches every other), each sorted; a few hundred
    modules, so reachability per module is cheap."""
    reach = {v: _reach(graph, v) for v in graph}
    groups = {tuple(sorted({v} | {w for w in reach[v] if v in reach.get(w, ())})) for v in graph if v in reach[v]}
    return sorted(list(g) for g in groups)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_the_packages_modules():
    assert cycles(imports()) == []


def test_every_top_level_module_sits_in_a_layer():
    config = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = {m.strip() for c in config["contracts"] if c["type"] == "layers"
               for layer in c["layers"] for m in layer.split("|")}
    top = {f"provision.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {f"provision.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert top - layered == set(), f"not in any import-linter layer: {sorted(top - layered)}"


def check_modules() -> set[str]:
    """The modules of ``provision.checks`` that declare a check (a top-level ``CHECK = ...``), wherever they sit."""
    def declares(path) -> bool:
        return any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "CHECK" for t in n.targets)
                   for n in ast.parse(path.read_text()).body)
    return {m for m, path in MODULES.items() if m.startswith("provision.checks.") and declares(path)}


def check_imports(graph: dict[str, set[str]], checks: set[str]) -> list[str]:
    """``a -> b`` for each module ``a`` of ``provision.checks`` (a check, a helper, ``common``) importing a check
    module ``b`` other than itself: what two checks share belongs in ``provision.checks.common``."""
    return sorted(f"{a} -> {b}" for a, found in graph.items() if a == "provision.checks" or
                  a.startswith("provision.checks.") for b in sorted(found & checks) if b != a)


def test_the_check_rule_counts_an_import_inside_a_function():
    source = "def steps(profile, group):\n    from provision.checks import faults, imex\n    return imex.CHECK\n"
    graph = {"provision.checks.imex_probe": imported("provision.checks.imex_probe", source)}
    checks = {"provision.checks.imex_probe", "provision.checks.imex"}
    assert check_imports(graph, checks) == ["provision.checks.imex_probe -> provision.checks.imex"]
    assert check_imports({"provision.engine.x": {"provision.checks.imex"}}, checks) == []  # the rule is the checks'


def test_no_check_imports_another_check():
    found = check_imports(imports(), check_modules())
    assert found == [], "a check module imported by another module of provision.checks; move what they share to " \
                        f"provision.checks.common: {found}"


def test_the_registry_finds_every_check_module_and_nothing_in_common(monkeypatch):
    from provision.checks import CHECK_PATH_ENV, registry

    monkeypatch.delenv(CHECK_PATH_ENV, raising=False)
    declared = {m.rpartition(".")[2] for m in check_modules()}
    assert set(registry()) == declared
    assert not any(m.startswith("provision.checks.common.") for m in check_modules())
