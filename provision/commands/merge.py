"""``provision merge RUN_DIR...``: one run of a sharded job's runs (``--shard K/N``)."""
from __future__ import annotations

import argparse
import json
import shutil

from provision import paths
from provision.commands._common import cut, say, status
from provision.errors import ExitStatus, OutputError, ProvisionError
from provision.report import junit, prometheus, summary
from provision.results import merge as merging
from provision.results import schema
from provision.results.model import SCHEMA_VERSION, Run
from provision.results.store import DRAIN, RunDir, RunStore, safe_name
from provision.slurm import drain as slurm_drain


def main(args: argparse.Namespace) -> int:
    return merge(args.run_dirs, args.run_id, progress=say)


def merge(run_args: list[str], run_id: str | None = None, progress=print) -> ExitStatus:
    """One run of the shards' runs (``provision.results.merge``): report.json, results.jsonl, the raw
    outputs (copied, 0600; one that cannot be copied safely is a warning line), JUnit, drain.txt,
    burnin.prom and the summary. Returns the merged run's status (as the job's); raises ProvisionError
    for a run that cannot be read, hosts in two shards or a raw path outside a shard's raw/, before any
    folder is made. The merged folder is whole or gone: a failure on the way removes it, and report.json
    (and ``latest``) comes last."""
    store = RunStore(paths.RUNS)
    shards = [(str(d.path), _shard_run(d), d) for d in (store.open(a) for a in run_args)]
    merged, moves = merging.merge([(label, run) for label, run, _ in shards], "")
    rundir = store.create(run_id, warn=progress)
    merged.run_id = rundir.name
    try:
        for (_, _, source), move in zip(shards, moves):
            merging.copy_raw(source, rundir, move, progress)
        for result in merged.results:
            rundir.record(result)
        junit.write(rundir.junit, merged)
        prometheus.write(rundir.prometheus, merged)
        lines = slurm_drain.drain_lines(merged) if "burnin" in merged.phases else []
        rundir.write(DRAIN, "".join(f"{line}\n" for line in lines))
        rundir.save(merged)
    except OSError as exc:  # a full or read-only disk: the machine's state, one line
        shutil.rmtree(rundir.path, ignore_errors=True)
        raise OutputError(f"merge: cannot write {cut(str(exc.filename or rundir.path))}: {exc.strerror or exc}; "
                          f"nothing merged ({rundir.path} removed)") from None
    except BaseException:
        shutil.rmtree(rundir.path, ignore_errors=True)
        raise
    progress(f"merge: {len(shards)} runs, {len(merged.hosts)} hosts, {len(merged.results)} results -> {rundir.path}")
    progress("\n" + summary.render(merged))
    return status(merged)


def _shard_run(rundir: RunDir) -> Run:
    """A shard's run: its report.json must be this version's (schema_version 2 or 3) and valid against the
    published schema (report.schema.json), and name at least one host. Raises ProvisionError."""
    try:
        data = json.loads(rundir.report.read_text())
    except (OSError, ValueError) as exc:
        raise ProvisionError(f"{rundir.report}: not a readable run report ({exc})") from None
    if not isinstance(data, dict) or data.get("schema_version") not in (2, SCHEMA_VERSION) or isinstance(
            data.get("schema_version"), bool):
        raise ProvisionError(f"{rundir.report}: schema_version must be 2 or {SCHEMA_VERSION}: merge joins runs of this "
                             "version (`provision evaluate` rewrites an older one)")
    try:
        schema.validate(data, str(rundir.report))
    except ValueError as exc:
        raise ProvisionError(str(exc)) from None
    run = rundir.load()
    for host in run.hosts:
        safe_name(host, f"{rundir.report}: hosts")
    if not run.hosts:
        raise ProvisionError(f"{rundir.report}: names no host: not a shard's run")
    return run
