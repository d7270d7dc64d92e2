"""``provision sim ...``: the simulated rack, through the one hook to the simulator (``provision.embedded``)."""
from __future__ import annotations

import argparse

from provision import embedded


def main(args: argparse.Namespace) -> int:
    return embedded.dispatch(args)
