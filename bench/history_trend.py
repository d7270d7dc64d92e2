"""Bench: `provision report RUN --history H` for a 3-host run against a history holding one 2,000-host run.

Prints figures, never passes or fails. The history holds one imported run of ``--hosts`` hosts
(bench/report_html.py's synthetic run: 15 checks a host, about 240 rows a host); the report is a
``--report-hosts`` run of three of those hosts, started a day later. The command runs in a child
process, as an operator runs it, which reports its own CPU seconds and peak resident memory
(getrusage RUSAGE_SELF ru_maxrss), with and without ``--history``, so the history's share shows beside
the report's own; wall seconds beside them (on a shared machine CPU is the steadier figure). Issue 21
cause 13: 8.4 s and 552 MB before the trend was filtered in SQL.
``--work DIR`` keeps the history and the run between invocations (building them is not counted).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report_html import synthetic_run  # noqa: E402

from provision.history import db  # noqa: E402
from provision.results.store import RunStore  # noqa: E402


def prepare(work: Path, hosts: int, report_hosts: int) -> None:
    """The history (one run of ``hosts`` hosts) and the run folder ``small``, unless already there."""
    history, runs = work / "history.db", work / "runs"
    if not history.exists():
        t = time.monotonic()
        big = dataclasses.replace(synthetic_run(hosts), run_id="big")
        with db.connect(history) as conn:
            rows = db.insert(conn, big, {})
        print(f"# history: one {hosts}-host run, {rows} rows, {history.stat().st_size / 1e6:.0f} MB "
              f"(built in {time.monotonic() - t:.0f} s, not counted)")
    if not (runs / "small" / "report.json").exists():
        small = dataclasses.replace(synthetic_run(report_hosts, seed=2), run_id="small",
                                    started="2026-12-02T10:00:00+00:00", finished="2026-12-02T11:00:00+00:00")
        RunStore(runs).create("small").save(small, latest=False)


def measure(work: Path, with_history: bool) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of one `provision report small` in a fresh child process."""
    argv = [sys.executable, "-m", "provision", "report", "small", "--out", str(work / "small.html")]
    if with_history:
        argv += ["--history", str(work / "history.db")]
    # A grandchild's own peak: a fresh interpreter measures itself and prints it on its last line.
    probe = ("import resource, runpy, sys; sys.argv = ['provision', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('provision', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "u = resource.getrusage(resource.RUSAGE_SELF)\n"
             "print('maxrss', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr)\n"
             "sys.exit(code)\n")
    env = {**os.environ, "PROVISION_RUNS_DIR": str(work / "runs")}
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-c", probe, *argv[3:]], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    wall = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"provision report exited {done.returncode}: {done.stderr.strip()}")
    _, kib, cpu = done.stderr.strip().splitlines()[-1].split()
    return wall, float(cpu), int(kib) / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=2000)
    p.add_argument("--report-hosts", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", help="keep the history and the run in this folder (default: a temp folder, removed)")
    args = p.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-history-trend-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        prepare(work, args.hosts, args.report_hosts)
        for with_history in (False, True):
            figures = [measure(work, with_history) for _ in range(args.repeat)]
            wall, cpu = min(f[0] for f in figures), min(f[1] for f in figures)
            peak = max(f[2] for f in figures)
            label = "report --history" if with_history else "report (no history)"
            print(f"{label:<22} {wall:>6.2f} s, CPU {cpu:.2f} s (best of {args.repeat})  peak RSS {peak:>5.0f} MiB")
        print(f"(RUSAGE_CHILDREN of this process: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f}"
              " MiB, the largest child)")
    finally:
        if not args.work:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
