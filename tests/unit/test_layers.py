"""The package's layering (issue 35 item 6): every top-level module of ``provision`` sits in the import-linter layers
contract (pyproject.toml), and no import cycle exists between its modules, counting imports inside functions (not
those under ``if TYPE_CHECKING:``, which never run; this walks every module's AST)."""
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
    graph = {}
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
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
        graph[module] = found - {module}
    return graph


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
