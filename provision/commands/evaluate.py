"""``provision evaluate RUN_DIR``: a saved run judged again from its raw outputs, touching no node."""
from __future__ import annotations

import argparse

from provision import arguments, paths
from provision import inventory as inv
from provision.commands._common import now, rebuilt, say, status
from provision.engine.reevaluate import reevaluate
from provision.errors import ExitStatus
from provision.report import junit, summary
from provision.results.model import JUDGED_VARS
from provision.results.store import RunStore


def main(args: argparse.Namespace) -> int:
    return evaluate(args.run_dir, args.profile, args.inventory, arguments.vault(args), progress=say)


def evaluate(run_arg: str, profile_name: str | None = None, inventory_arg: str | list[str] | None = None,
             vault: inv.Vault = inv.Vault(), progress=print) -> ExitStatus:
    """Judge a run's saved raw outputs again (new profile, thresholds or site variables), touching
    no node; rewrite its report.json and JUnit. Raises ProvisionError for a bad run folder."""
    rundir = RunStore(paths.RUNS).open(run_arg)
    run = rundir.load(rebuild=rebuilt)
    if inventory_arg:
        for host in inv.load(inv.resolve_all(inventory_arg), vault).hosts:
            if host.name in run.hosts:
                run.hosts[host.name].vars = {k: host.vars[k] for k in JUDGED_VARS if host.vars.get(k) is not None}
    run.results = reevaluate(rundir, run, profile_name)
    run.evaluated = {"at": now(), "profile": profile_name,
                     "inventory": inventory_arg if isinstance(inventory_arg, str) or not inventory_arg
                     else ", ".join(inventory_arg)}
    rundir.save(run, latest=False)
    junit.write(rundir.junit, run)
    progress(summary.render(run))
    return status(run)
