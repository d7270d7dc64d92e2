"""Write each role's variables into its README.md from its ``meta/argument_specs.yml``.

The argument specs are the roles' documented interface (Ansible checks a role's input against them
before any task runs), so the README's variable table is generated from them, never kept by hand:
variable, type, default (or "required"), choices and description, sub-options as ``parent[].name``,
and the entry point's ``description`` (what the role verifies) above the table. The generated part
sits between ``BEGIN`` and ``END`` below; hand-written text above it stays as it is.

Usage: python tools/role_docs.py [--check] [ROLES_DIR]
--check writes nothing and exits 1 naming each README that is not current.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ROLES = ROOT / "roles"
COMMAND = "python tools/role_docs.py"
BEGIN = f"<!-- BEGIN generated from meta/argument_specs.yml by `{COMMAND}`: do not edit below -->"
END = "<!-- END generated -->"


def render(spec: dict) -> str:
    """The generated section for one role's parsed argument specs (entry point ``main``)."""
    main = spec["argument_specs"]["main"]
    lines = [BEGIN, "", "## Interface", "", f"{main.get('short_description', '').rstrip('.')}.", ""]
    about = main.get("description") or []
    for sentence in [about] if isinstance(about, str) else about:
        lines.append(" ".join(str(sentence).split()))
        lines.append("")
    lines += ["### Variables", "", "| Variable | Type | Default | Choices | Description |",
              "| --- | --- | --- | --- | --- |"]
    lines += _rows(main.get("options") or {}, "")
    return "\n".join(lines + ["", END]) + "\n"


def _rows(options: dict, prefix: str) -> list[str]:
    rows = []
    for name, opt in options.items():
        kind = str(opt.get("type", "str"))
        if opt.get("elements"):
            kind = f"{kind} of {opt['elements']}"
        default = "required" if opt.get("required") else (_code(opt["default"]) if "default" in opt else "")
        choices = ", ".join(_code(c) for c in opt.get("choices") or [])
        about = opt.get("description") or ""
        about = " ".join(" ".join(about).split() if isinstance(about, list) else str(about).split())
        rows.append(f"| `{prefix}{name}` | {kind} | {default} | {choices} | {_cell(about)} |")
        rows += _rows(opt.get("options") or {}, f"{prefix}{name}[]." if opt.get("elements") else f"{prefix}{name}.")
    return rows


def _code(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return f"`{_cell(text)}`" if text != "" else '`""`'


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def updated(readme: str, section: str) -> str:
    """``readme`` with its generated section replaced by ``section`` (appended when it has none)."""
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        return head + section + rest.split(END, 1)[1].lstrip("\n")
    return readme.rstrip("\n") + "\n\n" + section


def stale(roles: Path = ROLES, write: bool = False) -> list[Path]:
    """The READMEs whose generated section differs from their argument specs (written when ``write``)."""
    out = []
    for specs in sorted(roles.glob("*/meta/argument_specs.yml")):
        readme = specs.parent.parent / "README.md"
        old = readme.read_text() if readme.exists() else f"# {readme.parent.name}\n"
        new = updated(old, render(yaml.safe_load(specs.read_text())))
        if new != old:
            out.append(readme)
            if write:
                readme.write_text(new)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    roles = Path(next((a for a in argv if not a.startswith("--")), ROLES))
    changed = stale(roles, write=not check)
    for readme in changed:
        print(f"{readme}: {'not current (run: ' + COMMAND + ')' if check else 'written'}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
