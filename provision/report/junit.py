"""JUnit XML from report.json, made with junit-xml: one testsuite per host.

Testcases: ``install.<role>`` (one per role the host ran) and ``burnin.<check>`` (one per
check). A check that failed is a JUnit failure; one that could not run is a JUnit error,
kept apart so CI shows broken tooling differently from broken hardware. Messages carry the
measured value and the reference.
"""
from __future__ import annotations

from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string


def suites(report: dict) -> list[TestSuite]:
    out = []
    hosts = sorted(set(report.get("install", {})) | set(report.get("burnin", {})))
    for host in hosts:
        cases = _install_cases(host, report.get("install", {}).get(host))
        cases += [_check_case(host, row) for row in report.get("burnin", {}).get(host, [])]
        out.append(TestSuite(host, cases, hostname=host, properties={"run_id": report.get("run_id", "")}))
    return out


def _install_cases(host: str, install: dict | None) -> list[TestCase]:
    if not install:
        return []
    cases = []
    for role, row in install["roles"].items():
        case = TestCase(role, classname=f"install.{role}", file=host)
        case.stdout = f"{row['tasks']} tasks, {row['changed']} changed"
        if row["failed"]:
            case.add_failure_info(message="; ".join(f"{f['task']}: {f['msg']}" for f in row["failed"]))
        cases.append(case)
    if install["status"] == "unreachable" and not any(r["failed"] for r in install["roles"].values()):
        case = TestCase("connect", classname="install.connect", file=host)
        case.add_error_info(message="host unreachable")
        cases.append(case)
    return cases


def _check_case(host: str, row: dict) -> TestCase:
    case = TestCase(row["check"], classname=f"burnin.{row['check']}", elapsed_sec=row.get("duration_s", 0), file=host)
    case.stdout = row["message"]
    if row["outcome"] == "fail":
        case.add_failure_info(message=row["message"])
    elif row["outcome"] == "error":
        case.add_error_info(message=row["message"])
    elif row["outcome"] == "skipped":
        case.add_skipped_info(message=row["message"])
    return case


def write(run_dir: Path, report: dict) -> list[Path]:
    """Write ``junit/<host>.xml`` per host and ``junit/all.xml``; return the paths."""
    folder = run_dir / "junit"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.xml"):
        old.unlink()
    written = []
    all_suites = suites(report)
    for suite in all_suites:
        path = folder / f"{suite.name}.xml"
        path.write_text(to_xml_report_string([suite], encoding="utf-8"))
        written.append(path)
    (folder / "all.xml").write_text(to_xml_report_string(all_suites, encoding="utf-8"))
    return written + [folder / "all.xml"]
