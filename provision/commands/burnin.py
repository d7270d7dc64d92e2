"""``provision burnin``: run the burn-in checks only (over SSH, or on this machine with --local)."""
from __future__ import annotations

import argparse

from provision.commands import _job
from provision.commands._common import say


def main(args: argparse.Namespace) -> int:
    return _job.run(_job.JobOptions.from_args(args), progress=say)
