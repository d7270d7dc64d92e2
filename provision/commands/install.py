"""``provision install``: run the install roles only (the job's install phase, after the plan gate)."""
from __future__ import annotations

import argparse

from provision.commands import _job
from provision.commands._common import say


def main(args: argparse.Namespace) -> int:
    return _job.run(_job.JobOptions.from_args(args), progress=say)
