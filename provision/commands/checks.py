"""``provision checks``: the burn-in checks in run order, or README's table (``--markdown``), or README's table
of the check sets (``--sets``), or README's list of the hardware profiles (``--profiles``)."""
from __future__ import annotations

import argparse

from provision import checks, profiles
from provision.commands._common import say
from provision.errors import ExitStatus


def main(args: argparse.Namespace) -> int:
    if getattr(args, "profiles", False):
        say(profiles.markdown_list(), end="")
        return ExitStatus.OK
    if getattr(args, "sets", False):
        from provision.checks import sets

        say(sets.markdown_table(checks.registry()), end="")
        return ExitStatus.OK
    return list_checks(args.markdown, out=say)


def list_checks(markdown: bool = False, out=print) -> ExitStatus:
    """Print the checks in run order: id, scope, order, needs, timeout, metrics, then the rules that apply on
    fewer platforms (``rule pcie: pcie_gpu``); or README's table."""
    if markdown:
        out(checks.markdown_table(), end="")
        return ExitStatus.OK
    for check in checks.registry().values():
        metrics = ", ".join(f"{m} [{u}]" if u else m for m, u in check.metrics.items()) or "-"
        rules = "".join(f"  rule {rule}: {','.join(needs)}" for rule, needs in check.rules.items())
        out(f"{check.id:<16} {check.scope.value:<7} order {check.order:<3} needs {','.join(check.needs) or '-':<8} "
            f"timeout {check.timeout_s:>4.0f} s  {metrics}{rules}")
    return ExitStatus.OK
