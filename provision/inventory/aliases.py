"""Refuse YAML whose aliases expand past a bound, before Ansible loads it.

PyYAML keeps an alias as a second reference to the anchored value, so loading a "billion
laughs" document is cheap; Ansible then walks and copies every variable (templating, variable
precedence), which expands it: nine levels of nine aliases is 387 million values and never
finishes. ``check(sources)`` composes each YAML file Ansible would read for the sources (the
sources, and ``group_vars``/``host_vars`` beside a file source) into PyYAML's node graph, which
is linear in the file's size, and counts the nodes its aliases would add. Raises InventoryError
naming the file when that passes ``MAX_ALIASED_NODES``.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

import yaml

from provision.errors import InventoryError

# Generous for real inventories (10,000 hosts each merging a 20-value anchor is 200,000),
# a few seconds of Ansible's time; a billion-laughs document (nine aliases a level) passes it at its fifth level.
MAX_ALIASED_NODES = 200_000
MAX_FILE_BYTES = 16 * 1024 * 1024  # a larger file is not an inventory anyone wrote by hand: not scanned


class _TooMany(Exception):
    pass


def check(sources: list[str]) -> None:
    """Raise InventoryError for the first file whose aliases expand past MAX_ALIASED_NODES."""
    for path in _yaml_files(sources):
        try:
            with open(path, "rb") as stream:
                text = stream.read(MAX_FILE_BYTES + 1)
        except OSError:
            continue  # Ansible reports a file it cannot read
        if len(text) > MAX_FILE_BYTES or b"*" not in text or b"&" not in text or text.startswith(b"$ANSIBLE_VAULT"):
            continue
        try:
            _count(yaml.compose_all(text, Loader=yaml.SafeLoader))
        except yaml.YAMLError:
            continue  # not YAML (INI, a script): Ansible's own parser decides
        except (_TooMany, RecursionError):
            raise InventoryError(f"{path}: YAML aliases expand past {MAX_ALIASED_NODES:,} values "
                                 "(a recursive or \"billion laughs\" document); refused") from None


def _yaml_files(sources: list[str]) -> Iterator[str]:
    for source in sources:
        if os.path.isdir(source):
            folders = [source]
        else:
            yield source
            base = os.path.dirname(source)
            folders = [os.path.join(base, "group_vars"), os.path.join(base, "host_vars")]
        for folder in folders:
            for root, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                yield from (os.path.join(root, f) for f in sorted(files) if not f.startswith("."))


def _count(documents) -> None:
    """Raise _TooMany when the nodes reached through aliases pass the bound."""
    sizes: dict[int, int] = {}
    for document in documents:
        if document is not None:
            _size(document, sizes, set(), [0])


def _size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int], aliased: list[int]) -> int:
    """The number of values ``node`` expands to. A node met again is an alias: its size counts again."""
    key = id(node)
    if key in sizes:
        aliased[0] += sizes[key]
        if aliased[0] > MAX_ALIASED_NODES:
            raise _TooMany
        return sizes[key]
    if key in open_nodes:  # an alias inside its own anchor: expands forever
        raise _TooMany
    open_nodes.add(key)
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(_size(child, sizes, open_nodes, aliased) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(_size(k, sizes, open_nodes, aliased) + _size(v, sizes, open_nodes, aliased)
                     for k, v in node.value)
    open_nodes.discard(key)
    sizes[key] = total
    return total
