"""``provision run``: install the stack, then burn in every host that installed cleanly (the main job)."""
from __future__ import annotations

import argparse

from provision.commands import _job
from provision.commands._common import say


def main(args: argparse.Namespace) -> int:
    return _job.run(_job.JobOptions.from_args(args), progress=say)
