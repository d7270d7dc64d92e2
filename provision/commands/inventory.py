"""``provision inventory``: every host, its address, profile and groups, then one line per problem;
connects nowhere."""
from __future__ import annotations

import argparse
import json

from provision import arguments
from provision import inventory as inv
from provision.commands._common import say, warn
from provision.errors import ExitStatus
from provision.inventory import listing


def main(args: argparse.Namespace) -> int:
    return inventory(args.inventory, arguments.limit(args.limit), arguments.vault(args), args.json, out=say, err=warn)


def inventory(inventory_args: str | list[str], limit: list[str] | None = None, vault: inv.Vault = inv.Vault(),
              as_json: bool = False, out=print, err=print) -> ExitStatus:
    """List every host (address, port, user, profile or "-", groups), then one line per problem
    (to ``err``). Connects nowhere. Returns BAD_INPUT when there are problems."""
    found = inv.read(inv.resolve_all(inventory_args), vault, limit)
    if as_json:
        out(json.dumps(listing.as_json(found), indent=1))
    else:
        for line in listing.table(found):
            out(line)
    for warning in found.warnings:
        err(f"provision: warning: {warning}")
    for problem in found.problems:
        err(f"provision: error: {problem}")
    return ExitStatus.BAD_INPUT if found.problems else ExitStatus.OK
