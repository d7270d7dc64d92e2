"""A run's canonical ``report.json``; JUnit XML and the terminal summary are views of it.

report.json shape::

    {"run_id", "inventory", "started", "finished", "command",
     "install": {host: {"status", "changed", "roles": {role: {"tasks", "changed", "failed": [{task, msg}]}}}},
     "burnin": {host: [{"check", "outcome", "message", "duration_s", "findings": [...], "raw": [...]}]},
     "hosts": {host: "pass"|"fail"|"error"}}

A host's verdict: error if its install failed or any check errored, else fail if any check
failed, else pass.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from provision.burnin import CheckResult


def host_verdicts(report: dict) -> dict[str, str]:
    """Host -> pass|fail|error from the install phase and the burn-in results."""
    verdicts = {}
    hosts = set(report.get("install", {})) | set(report.get("burnin", {}))
    for host in sorted(hosts):
        install = report.get("install", {}).get(host)
        outcomes = [r["outcome"] for r in report.get("burnin", {}).get(host, [])]
        if (install and install["status"] != "ok") or "error" in outcomes:
            verdicts[host] = "error"
        elif "fail" in outcomes:
            verdicts[host] = "fail"
        else:
            verdicts[host] = "pass"
    return verdicts


def burnin_section(results: list[CheckResult]) -> dict[str, list[dict]]:
    section: dict[str, list[dict]] = {}
    for r in results:
        row = r.to_dict()
        section.setdefault(row.pop("host"), []).append(row)
    return section


def write(run_dir: Path, report: dict, latest: bool = True) -> Path:
    """Write report.json (atomically) and, unless ``latest`` is False, point ``runs/latest`` here."""
    report["hosts"] = host_verdicts(report)
    path = run_dir / "report.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str) + "\n")
    tmp.replace(path)
    link = run_dir.parent / "latest"
    if latest and (link.is_symlink() or not link.exists()):
        link.unlink(missing_ok=True)
        os.symlink(run_dir.name, link)
    return path


def load(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())
