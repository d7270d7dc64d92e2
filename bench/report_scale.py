"""Bench: the reports of a 1,250-host run (15 checks each): report.json, JUnit, the summary, the HTML
report, the Prometheus textfile, the history insert and its regression gate.

Prints figures, never passes or fails. The run is bench/report_html.py's synthetic one (the real checks'
judges on the healthy captures of tests/data, values jittered, every 8th host slow) on a realistic fabric:
``provision.sim.synth.fat_tree``'s 8-rail NDR fat tree of the hosts (1,250: 40 leaves and 32 spines a rail,
10,240 leaf-spine cables), in the cluster group's record as the procedure keeps it, with the fabric
check's width_speed finding for every cable (the HCAs' too), ``FAILED_CABLES`` degraded cables the
localization names and ``UNTESTED_CABLES`` no test carried traffic over. The Prometheus textfile's series
(its samples) are counted, in all and per family. Each step is timed
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

from provision.checks import faults  # noqa: E402
from provision.checks import fabric as fabric_check  # noqa: E402
from provision.history import db, fingerprint, regress  # noqa: E402
from provision.report import html, junit, prometheus, summary  # noqa: E402
from provision.results.model import FABRIC, CheckResult, Finding, Outcome, Run, Scope  # noqa: E402
from provision.results.store import RunStore  # noqa: E402
from provision.sim import synth  # noqa: E402

RAILS = 8  # an H100 node's compute HCAs, one plane each
FAILED_CABLES = 3  # degraded leaf-spine cables, each found by the fabric check and named by the localization
UNTESTED_CABLES = 2  # leaf-spine cables no test carried traffic over


def with_fabric(run: Run, rails: int = RAILS) -> Run:
    """``run`` on a fat tree of its hosts (module doc): the group's ``fabric``, ``suspects`` and ``unknown``
    cables, the fabric check's result and the localization's findings for the failed and untested cables."""
    fabric = synth.fat_tree(list(run.hosts), rails=rails)
    findings, ups = [], []
    for plane in fabric.planes:
        for link in plane.links:
            up = plane.hca_on(link) is None
            ups += [(plane, link)] if up else []
            findings.append(Finding(f"{plane.name} {fabric_check._label(plane, link)}", "width_speed",
                                    link.width_speed, True, expected=link.width_speed,
                                    fault="FABRIC_CABLE_DEGRADED", host=FABRIC if up else plane.hca_on(link).host))
    step = len(ups) // (FAILED_CABLES + UNTESTED_CABLES + 1)
    chosen = [ups[step * (i + 1)] for i in range(FAILED_CABLES + UNTESTED_CABLES)]
    bad, gap = chosen[:FAILED_CABLES], chosen[FAILED_CABLES:]
    for i, f in enumerate(findings):
        if any(f.device == f"{p.name} {fabric_check._label(p, lk)}" for p, lk in bad):
            findings[i] = Finding(f.device, f.metric, "1xNDR", False, expected="4xNDR", fault=f.fault,
                                  action=faults.action(f.fault), host=FABRIC)
    group = run.cluster["groups"][0]
    group["fabric"] = fabric.to_dict("4xNDR")
    group["suspects"] += [{"kind": "cable", "host": None, "rail": fabric.planes.index(p), "device": None,
                           "cable": _cable(p, lk), "alternatives": [], "evidence": [], "confidence": 0.97}
                          for p, lk in bad]
    group["unknown"] = {"hosts": [], "cables": [{"rail": fabric.planes.index(p), "id": lk.id, "plane": p.name}
                                                for p, lk in gap]}
    hosts = tuple(run.hosts)
    run.results.append(CheckResult("fabric", hosts, Outcome.FAIL, f"{FAILED_CABLES} cables degraded",
                                   scope=Scope.CLUSTER, findings=findings))
    localize = next(r for r in run.results if r.check == "localize")
    localize.outcome = Outcome.FAIL
    localize.findings += [Finding(f"cable {lk.a}[{lk.a_port}] <-> {lk.b}[{lk.b_port}] ({p.name})",
                                  "suspect_confidence", 0.97, False, fault="SUSPECT_CABLE",
                                  action=faults.action("SUSPECT_CABLE"), host=FABRIC) for p, lk in bad]
    run.results.append(CheckResult("localize", hosts, Outcome.UNTESTED, f"untested: {UNTESTED_CABLES} cables",
                                   scope=Scope.CLUSTER, findings=[
                                       Finding(f"cable {lk.id} (rail {fabric.planes.index(p)})", "carried_traffic",
                                               False, False, expected=True, fault="FABRIC_CABLE_UNTESTED",
                                               action=faults.action("FABRIC_CABLE_UNTESTED"), host=FABRIC)
                                       for p, lk in gap]))
    return run


def _cable(plane, link) -> dict:
    return {"plane": plane.name, "id": link.id, "leaf": link.a, "leaf_port": link.a_port, "spine": link.b,
            "spine_port": link.b_port, "width_speed": "1xNDR"}


def series(text: str) -> dict[str, int]:
    """{family: its samples} of an exposition text (a sample line is a series)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0].removeprefix(prometheus.PREFIX)
            out[name] = out.get(name, 0) + 1
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=1250)
    p.add_argument("--keep", action="store_true", help="keep the written files (about 320 MB at 1,250 hosts) and "
                   "print their folder; by default it is removed at the end")
    args = p.parse_args()
    start = time.monotonic()
    run = with_fabric(synthetic_run(args.hosts))
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
    counted = series((rundir.path / "burnin.prom").read_text())
    print(f"Prometheus series {sum(counted.values())}: " + ", ".join(
        f"{name} {n}" for name, n in sorted(counted.items(), key=lambda kv: -kv[1])))
    print("sizes: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(size.items())) + f"; history rows {rows}")
    if args.keep:
        print(f"files in {work}")
    else:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
