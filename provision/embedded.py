"""The one hook between the framework and its simulator (``provision/sim/``).

The simulator is a guest: no module outside ``provision/sim/`` imports it but this one, and this
one imports it only inside functions, so that importing the framework (``provision.cli``,
``provision.core``) loads no simulator code. A command on a real inventory loads only the
parser of the ``sim`` commands (``provision/sim/cli.py``, which imports nothing else of the
simulator at its top); the rack's code is loaded by ``provision sim ...`` and by a job on the
embedded default.

The embedded default is the simulated rack in ``inventory/sim`` (``make`` with no INVENTORY):
a job on it starts the rack first when it is not up. Any other folder, a rack started with
``provision sim up --inventory DIR`` included, is an ordinary inventory to the framework.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from provision import paths

SIM_INVENTORY = paths.ROOT / "inventory" / "sim"
DEFAULT_NODES = 4
DEFAULT_PROFILE = "h100-sxm5-80g-ndr"


def ensure_running(path: Path, progress=print) -> None:
    """Start the embedded rack (DEFAULT_NODES nodes of DEFAULT_PROFILE) when ``path`` is
    SIM_INVENTORY and it is not running; do nothing for any other path."""
    if Path(path).resolve() != SIM_INVENTORY.resolve():
        return
    from provision.sim import rack

    if not rack.is_up(SIM_INVENTORY):
        progress("sim: the simulated rack is not running; starting it")
        rack.up(SIM_INVENTORY, DEFAULT_NODES, DEFAULT_PROFILE, log=progress)


def add_commands(subparsers) -> None:
    """Add the ``provision sim ...`` command family to the top-level ``subparsers``."""
    from provision.sim import cli

    cli.add_commands(subparsers, SIM_INVENTORY, DEFAULT_NODES, DEFAULT_PROFILE)


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed ``provision sim ...`` command; return its exit status."""
    from provision.sim import cli

    return cli.dispatch(args)
