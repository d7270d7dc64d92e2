"""Tool-output parsers: one module per tool format, each with a pure ``parse(text)``.

Each parser module declares ``TOOLS``, the tool names of the ``provision parse TOOL
FILE`` contract (tests/data/samples/CONTRACT.md) whose output its ``parse`` reads; a module that reads
several formats maps each of its tool names to its own function in ``PARSES`` (``redfish``: one per BMC read).
The modules are found, not listed: every module here not starting with ``_`` is a
parser (``_``-prefixed ones are shared helpers), and ``PARSERS`` maps each declared
tool name to its parse function. Two modules claiming one name, or a parser module
without ``TOOLS`` or ``parse``, is a ValueError at import. ``parse_tool`` is the one
entry point that names the source file in its errors.

A parser raises ParseError and nothing else on any text (tests/unit/hardening): numbers go
through ``_util`` (finite, bounded, never negative where the quantity cannot be), patterns
run in linear time, and ``parse_tool`` refuses a text over ``MAX_TEXT_CHARS`` or with a line
over ``MAX_LINE_CHARS`` before any parser sees it (``check_size``, for the checks' own parsers).
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any, Callable

from provision.errors import ParseError
from provision.parsers._util import MAX_LINE_CHARS, MAX_TEXT_CHARS, check_size, to_int

__all__ = ["MAX_LINE_CHARS", "MAX_TEXT_CHARS", "PARSERS", "Parser", "check_size", "parse_tool", "to_int"]

Parser = Callable[[str], dict[str, Any]]


def _parser_modules() -> list[ModuleType]:
    """Import every non-``_`` module of this package, in name order."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def _declaration(module: ModuleType) -> tuple[tuple[str, ...], Parser]:
    """A parser module's ``TOOLS`` and ``parse``; ValueError if either is missing or malformed."""
    tools, parse = getattr(module, "TOOLS", None), getattr(module, "parse", None)
    if not (isinstance(tools, tuple) and tools and all(isinstance(t, str) for t in tools)) or not callable(parse):
        raise ValueError(f"parser module {module.__name__} needs TOOLS (a tuple of tool names) and parse()")
    return tools, parse


def _registry(modules: list[ModuleType]) -> dict[str, Parser]:
    """Tool name -> parse function, from each module's ``TOOLS``; ValueError on a name claimed twice."""
    parsers: dict[str, Parser] = {}
    owners: dict[str, str] = {}
    for module in modules:
        tools, parse = _declaration(module)
        for tool in tools:
            if tool in owners:
                raise ValueError(f"tool {tool!r} is claimed by both {owners[tool]} and {module.__name__}")
            owners[tool] = module.__name__
            parsers[tool] = getattr(module, "PARSES", {}).get(tool, parse)
    return parsers


PARSERS: dict[str, Parser] = _registry(_parser_modules())


def parse_tool(tool: str, text: str, source: str = "<text>") -> dict[str, Any]:
    """Parse ``text`` as the output of ``tool``.

    Raises ParseError (one line, naming ``source``) for an unknown tool or for
    text that is not that tool's output at all.
    """
    parser = PARSERS.get(tool)
    if parser is None:
        raise ParseError(f"{source}: unknown tool {tool!r}; known tools: {', '.join(sorted(PARSERS))}")
    try:
        check_size(text)
        return parser(text)
    except ParseError as error:
        message = " ".join(str(error).split())
        raise ParseError(f"{source}: {message}") from None
