"""``provision report RUN_DIR``: a run's HTML report (one self-contained file) and, with ``--prometheus``,
its node_exporter textfile."""
from __future__ import annotations

import argparse
from pathlib import Path

from provision import paths
from provision.commands._common import cut, rebuilt, say
from provision.errors import ExitStatus, OutputError, ProvisionError
from provision.report import destination, prometheus
from provision.report import html as html_report
from provision.report.destination import Destination
from provision.results.model import Run
from provision.results.store import HTML, PROMETHEUS, RunDir, RunStore

TREND_METRICS = ("busbw_GBps", "bw_avg_Gbps", "gflops")  # the report's per-host trend plots


def main(args: argparse.Namespace) -> int:
    if args.prometheus_out is not None and not args.prometheus_out.strip():  # '' is no path, never the default
        raise ProvisionError(f"--prometheus-out {args.prometheus_out!r}: not a path (an empty value)")
    return report(args.run_dir, args.out, args.history, args.prometheus_out or ("" if args.prometheus else None),
                  progress=say)


def report(run_arg: str, out: str | None = None, history: str | None = None, prometheus_out: str | None = None,
           progress=print) -> ExitStatus:
    """Write a run's HTML report (``provision.report.html``) at ``out`` (default RUN_DIR/report.html),
    with each host's trend from the history database ``history`` when given; with ``prometheus_out``
    ('' for RUN_DIR/burnin.prom, else a path: world-readable there, for node_exporter) the textfile too.
    ``out`` and ``prometheus_out`` are judged first (``provision.report.destination``: a folder, a
    symlink, standard output). Raises ProvisionError for a run folder without a readable report, a
    missing history file or a refused output; OutputError for an unwritable one."""
    rundir = RunStore(paths.RUNS).open(run_arg)
    page = Destination(path=rundir.html) if out is None else destination.resolve(out, HTML, "--out")
    prom = None
    if prometheus_out is not None:  # '': the run folder's own burnin.prom
        prom = destination.resolve(prometheus_out, PROMETHEUS, "--prometheus-out") if prometheus_out else \
            Destination(path=rundir.prometheus)
    if page.fd is not None and prom is not None and prom.fd == page.fd:
        raise ProvisionError(f"--out and --prometheus-out both name {page}: give one of them a file")
    run = rundir.load(rebuild=rebuilt)
    if page.fd is not None and len(run.verdicts()) > html_report.INLINE_HOSTS:
        raise ProvisionError(f"--out {page}: the report of {len(run.verdicts())} hosts is a page per host: "
                             "name a file or a folder")
    said = (lambda line: None) if 1 in (page.fd, prom and prom.fd) else progress  # stdout holds the output
    trend = history_trend(Path(history), run) if history else None
    try:
        _outputs(page, prom, run, rundir, trend, said)
    except OSError as exc:
        raise OutputError(f"report: cannot write {cut(str(exc.filename or page))}: "
                          f"{exc.strerror or exc}") from None
    return ExitStatus.OK


def _outputs(page, prom, run: Run, rundir: RunDir, trend, said) -> None:
    """The HTML report at ``page`` and the Prometheus textfile at ``prom`` (when not None): a file, or an
    open descriptor (``provision.report.destination``). Raises OSError."""
    if page.path is None:
        destination.write_stream(page.fd, html_report.render(run, rundir, trend))
    else:
        html_report.write(page.path, run, rundir, trend)
        said(f"report: {page.path} ({page.path.stat().st_size} bytes)")
    if prom is not None and prom.path is None:
        destination.write_stream(prom.fd, prometheus.text(run))
    elif prom is not None:
        inside = rundir.path in prom.path.resolve().parents
        prometheus.write(prom.path, run, 0o600 if inside else 0o644)
        said(f"prometheus: {prom.path}")


def history_trend(file, run: Run) -> dict:
    """{host: [(run id, series, value)]} of ``run``'s hosts and checks, in runs up to ``run``, from the
    history database ``file`` (read-only). Raises ProvisionError when the file does not exist (opening
    would create an empty one), is not a regular file or not a history database, or stays locked."""
    from provision.history import db

    checks = sorted({r.check for r in run.results})
    return db.read(file, lambda conn: db.trend(conn, sorted(run.verdicts()), TREND_METRICS, checks,
                                                run.started, run.run_id))
