"""Bench: the reports of a 1,250-host run (15 checks each): report.json, JUnit, the summary, the HTML
report, the Prometheus textfile, the history insert and its regression gate.

Prints figures, never passes or fails. The run is bench/report_html.py's synthetic one (the real checks'
judges on the healthy captures of tests/data, values jittered, every 8th host slow). Each step is timed
on its own (wall seconds, in process, and the process's CPU seconds beside them: on a machine shared
with other work the CPU figure is the steadier one); the HTML's first page and host pages are sized
apart (the first page must stay under 5 MB, issue 20); peak memory is the process's maximum resident set
(getrusage ru_maxrss) after all steps. Goal (issue 13): <= 10 s in all and <= 1 GiB peak.
"""
from __future__ import annotations

import argparse
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report_html import synthetic_run  # noqa: E402

from provision.history import db, fingerprint, regress  # noqa: E402
from provision.report import html, junit, prometheus, summary  # noqa: E402
from provision.results.store import RunStore  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=1250)
    p.add_argument("--keep", action="store_true", help="keep the written files (about 320 MB at 1,250 hosts) and "
                   "print their folder; by default it is removed at the end")
    args = p.parse_args()
    start = time.monotonic()
    run = synthetic_run(args.hosts)
    print(f"# {args.hosts} hosts, {len(run.results)} results, {sum(len(r.findings) for r in run.results)} findings; "
          f"built in {time.monotonic() - start:.1f} s (not counted)")
    work = Path(tempfile.mkdtemp(prefix="bench-report-scale-"))
    rundir = RunStore(work / "runs").create("scale")
    steps = {
        "report.json": lambda: rundir.save(run),
        "journal (results.jsonl)": lambda: [rundir.record(r) for r in run.results],
        "JUnit": lambda: junit.write(rundir.junit, run),
        "summary": lambda: summary.render(run),
        "HTML report": lambda: html.write(rundir.path / "report.html", run, rundir),
        "Prometheus textfile": lambda: prometheus.write(rundir.path / "burnin.prom", run),
    }
    total, cpu_total = 0.0, 0.0
    for name, step in steps.items():
        t, cpu = time.monotonic(), time.process_time()
        step()
        spent, cpu = time.monotonic() - t, time.process_time() - cpu
        total, cpu_total = total + spent, cpu_total + cpu
        print(f"{name:<28} {spent:>7.2f} s  (CPU {cpu:.2f} s)")
    prints = fingerprint.of_run(run, None)
    t = time.monotonic()
    with db.connect(work / "history.db") as conn:
        db.insert(conn, run, prints)
    spent = time.monotonic() - t
    total += spent
    print(f"{'history insert':<28} {spent:>7.2f} s")
    t = time.monotonic()
    with db.connect(work / "history.db") as conn:
        flagged = regress.gate(conn, run, prints)
    spent = time.monotonic() - t
    total += spent
    print(f"{'regression gate':<28} {spent:>7.2f} s  ({len(flagged)} hosts flagged)")
    size = {f.name: f.stat().st_size for f in rundir.path.iterdir() if f.is_file()}
    rows = sqlite3.connect(work / "history.db").execute("select count(*) from results").fetchone()[0]
    print(f"{'total':<28} {total:>7.2f} s  (CPU of the steps above the history: {cpu_total:.2f} s)")
    pages = list((rundir.path / "report" / "hosts").glob("*.html"))
    page_sizes = [p.stat().st_size for p in pages]
    print(f"HTML first page {size['report.html'] / 1e6:.2f} MB; {len(pages)} host pages, "
          f"{sum(page_sizes) / 1e6:.1f} MB, largest {max(page_sizes, default=0) / 1e3:.0f} kB")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak memory (max RSS)        {peak:>7.0f} MiB")
    print("sizes: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(size.items())) + f"; history rows {rows}")
    if args.keep:
        print(f"files in {work}")
    else:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
