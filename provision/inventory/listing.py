"""What ``provision inventory`` prints: a table (or JSON) of hosts, then one line per problem.

JSON shape::

    {"sources": [path], "hosts": [{"name", "address", "port", "user", "profile" (null: not a GPU
     node), "groups": [..]}], "problems": [{"file", "host", "field", "message"}], "warnings": [..]}
"""
from __future__ import annotations

from collections import Counter

from provision.inventory import Inventory

COLUMNS = ("HOST", "ADDRESS", "PORT", "USER", "PROFILE", "GROUPS")


def rows(inventory: Inventory) -> list[tuple[str, ...]]:
    """One row per host; PROFILE "-" marks a host that is not a GPU node."""
    return [(h.name, h.address, str(h.port), h.user, h.profile or "-", ",".join(h.groups) or "-")
            for h in inventory.hosts]


def table(inventory: Inventory) -> list[str]:
    """The host table and a summary line."""
    body = [COLUMNS, *rows(inventory)]
    widths = [max(len(r[i]) for r in body) for i in range(len(COLUMNS) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in body]
    return [*(lines if inventory.hosts else []), summary(inventory)]


def summary(inventory: Inventory) -> str:
    gpu = Counter(h.profile for h in inventory.gpu_hosts)
    per_profile = ", ".join(f"{name}: {n}" for name, n in sorted(gpu.items()))
    other = len(inventory.hosts) - sum(gpu.values())
    text = (f"{len(inventory.hosts)} hosts from {inventory.label}; GPU nodes: {sum(gpu.values())}"
            f"{f' ({per_profile})' if per_profile else ''}; not GPU nodes (left out of install and burn-in): {other}")
    if inventory.problems:
        text += f"; problems: {len(inventory.problems)}"
    return text


def as_json(inventory: Inventory) -> dict:
    return {"sources": [str(s) for s in inventory.sources],
            "hosts": [{"name": h.name, "address": h.address, "port": h.port, "user": h.user,
                       "profile": h.profile, "groups": list(h.groups)} for h in inventory.hosts],
            "problems": [{"file": p.file, "host": p.host, "field": p.field, "message": str(p)}
                         for p in inventory.problems],
            "warnings": list(inventory.warnings)}
