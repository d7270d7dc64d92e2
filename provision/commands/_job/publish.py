"""The job's publish phase: every output of the run (report.json, JUnit, burnin.prom, drain.txt), each
written on its own, then the drain in Slurm (``--drain slurm``)."""
from __future__ import annotations

from provision.commands._job.options import JobOptions
from provision.engine.control import Control
from provision.errors import not_written
from provision.report import junit, prometheus
from provision.results.model import Run
from provision.results.store import DRAIN, SLURM, RunDir
from provision.slurm import drain as slurm_drain
from provision.slurm.breaker import Breaker
from provision.slurm.scontrol import Scontrol


def outputs(phases, rundir: RunDir, run: Run, progress, unwritten: list[str]) -> None:
    """Write report.json, JUnit, burnin.prom (node_exporter's textfile collector) and, after a burn-in,
    drain.txt, each on its own: one that cannot be written (a full disk, a read-only folder) is one line
    naming it and why (said once, kept in ``unwritten``), and the others are still written."""
    writes = [lambda: rundir.save(run), lambda: junit.write(rundir.junit, run),
              lambda: prometheus.write(rundir.prometheus, run)]
    if "burnin" in phases:
        writes.append(lambda: rundir.write(DRAIN, "".join(f"{line}\n" for line in slurm_drain.drain_lines(run))))
    for write in writes:
        attempt(write, progress, unwritten)


def attempt(write, progress, unwritten: list[str]) -> None:
    """``write()``; an OSError is one line naming the file and why, said once (kept in ``unwritten``)."""
    try:
        write()
    except OSError as exc:
        line = f"provision: error: {not_written(exc)}"
        if line not in unwritten:
            unwritten.append(line)
            progress(line)


def drain(rundir: RunDir, run: Run, slurm_nodes: dict[str, str], options: JobOptions, control: Control,
          unwritten: list[str] | None = None, breaker: Breaker = Breaker()) -> None:
    """After a burn-in (whose drain.txt ``outputs`` wrote; ``options.phases``): say it; with ``slurm_nodes`` drain
    (resuming passed nodes where ``options.resume_passed``) (no more than
    ``breaker`` allows) and resume in Slurm and write what was done to slurm.txt. A stopped run drains
    nothing (its verdicts are not the burn-in's). scontrol's failures are warning lines
    (``provision.slurm.drain.apply``), never the run's; a file that cannot be written is one line
    (``attempt``, added to ``unwritten``)."""
    unwritten = [] if unwritten is None else unwritten
    phases, resume_passed = options.phases, options.resume_passed
    if "burnin" not in phases:
        return
    lines = slurm_drain.drain_lines(run)
    control.progress(f"drain: {len(lines)} failing hosts in {rundir.drain}")
    if not slurm_nodes:
        return
    if control.stop.is_set():
        said = [f"slurm: stopped by {control.reason}: nothing drained or resumed"]
        control.progress(said[0])
    else:
        said = slurm_drain.apply(run, slurm_nodes, resume_passed, Scontrol(), control.progress, breaker)
    attempt(lambda: rundir.write(SLURM, "".join(f"{line}\n" for line in said)), control.progress, unwritten)
