"""The one hook between the framework and its simulator (``provision/sim/``).

The simulator is a guest: no module outside ``provision/sim/`` imports it but this one, and this
one imports it only inside functions, so that importing the framework (``provision.cli``,
``provision.commands``) loads no simulator code. A command on a real inventory loads only the
parser of the ``sim`` commands (``provision/sim/cli.py``, which imports nothing else of the
simulator at its top); the rack's code is loaded by ``provision sim ...`` and by a job on the
embedded default.

The embedded default is the simulated rack in ``inventory/sim`` (``make`` with no INVENTORY):
a job on it starts the rack first when it is not up. Any other folder, a rack started with
``provision sim up --inventory DIR`` included, is an ordinary inventory to the framework.

The simulator ships with the source checkout, not with the wheel (pyproject.toml leaves
``provision.sim`` out of the package): an installed ``provision`` without it answers ``provision sim``
and a job on the embedded default with one line (exit 2), and every real inventory works as before.
"""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from types import ModuleType

from provision import paths
from provision.errors import ProvisionError

SIM_INVENTORY = paths.INVENTORIES / "sim"
DEFAULT_NODES = 4
DEFAULT_PROFILE = "h100-sxm5-80g-ndr"


NOT_INSTALLED = ("the simulator is not installed: it ships with the source checkout, not the wheel "
                 "(clone the project and run from it to use `provision sim` or the embedded rack)")


def _sim(module: str) -> ModuleType:
    """Import ``provision.sim.<module>``; raises ProvisionError (one line) when the simulator is not
    installed (a wheel install leaves ``provision.sim`` out)."""
    try:
        return importlib.import_module(f"provision.sim.{module}")
    except ModuleNotFoundError as exc:
        if exc.name in ("provision.sim", f"provision.sim.{module}"):
            raise ProvisionError(NOT_INSTALLED) from None
        raise


def ensure_running(path: Path, progress=print) -> None:
    """Start the embedded rack (DEFAULT_NODES nodes of DEFAULT_PROFILE) when ``path`` is
    SIM_INVENTORY and it is not running; do nothing for any other path."""
    if Path(path).resolve() != SIM_INVENTORY.resolve():
        return
    rack = _sim("rack")
    if not rack.is_up(SIM_INVENTORY):
        progress("sim: the simulated rack is not running; starting it")
        rack.up(SIM_INVENTORY, DEFAULT_NODES, DEFAULT_PROFILE, log=progress)


def add_commands(subparsers) -> None:
    """Add the ``provision sim ...`` command family to the top-level ``subparsers`` (without the
    simulator installed, a ``sim`` command that says so)."""
    try:
        cli = _sim("cli")
    except ProvisionError:
        sub = subparsers.add_parser("sim", help="the simulated rack (not installed: it ships with the checkout)")
        sub.add_argument("rest", nargs=argparse.REMAINDER)
        return
    cli.add_commands(subparsers, SIM_INVENTORY, DEFAULT_NODES, DEFAULT_PROFILE)


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed ``provision sim ...`` command; return its exit status. Raises ProvisionError
    when the simulator is not installed."""
    return _sim("cli").dispatch(args)
