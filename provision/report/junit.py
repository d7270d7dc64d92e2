"""JUnit XML from a run, made with junit-xml: one testsuite per host, plus one ``cluster``
suite for results that span several hosts (pair, group, cluster scope).

Testcases: ``install.<role>`` (one per role the host ran) and ``burnin.<check>`` (one per
check; a multi-host result is named ``<check>[host+host]``). A check that failed is a JUnit
failure; one that could not run is a JUnit error, kept apart so CI shows broken tooling
differently from broken hardware. Messages carry the measured value and the reference.

junit-xml builds each suite's element (``TestSuite.build_xml_doc``); each is serialized and
cleaned of characters XML forbids once, and both a host's file and all.xml are made of those
texts under a ``<testsuites>`` element with junit-xml's totals (as its ``to_xml_report_string``
makes it). Not pretty-printed: junit-xml parses the whole document again with minidom for that,
and building every suite twice, took the 6.9 s of 1,250 hosts x 15 checks (issue 20). The XML
is the same elements and attributes on fewer lines; CI tools parse it alike.
"""
from __future__ import annotations

from pathlib import Path

import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite
from junit_xml import _clean_illegal_xml_chars as clean  # junit-xml 1.9's own cleaner: the same output as it

from provision.results.model import CheckResult, HostInstall, Outcome, Run, Scope
from provision.results.store import atomic_write, safe_name

CLUSTER_SUITE = "cluster"


def suites(run: Run) -> list[TestSuite]:
    properties = {"run_id": run.run_id}
    out = []
    covering = run.by_host()
    for host in sorted(set(run.install) | {h for r in run.results if r.scope is Scope.NODE for h in r.hosts}):
        cases = _install_cases(host, run.install.get(host))
        cases += [_check_case(host, r) for r in covering.get(host, ()) if r.scope is Scope.NODE and r.hosts == (host,)]
        out.append(TestSuite(host, cases, hostname=host, properties=properties))
    multi = [r for r in run.results if r.scope is not Scope.NODE]
    if multi:
        cases = [_check_case(CLUSTER_SUITE, r) for r in multi]
        cases += [_suspect_case(f) for r in multi if r.check == "localize" for f in r.findings if not f.ok]
        out.append(TestSuite(CLUSTER_SUITE, cases, properties=properties))
    return out


def _suspect_case(finding) -> TestCase:
    """One testcase per suspect the localization named (node, HCA or cable), failed with its evidence."""
    case = TestCase(f"suspect[{finding.host} {finding.device}]", classname="burnin.localize", file=CLUSTER_SUITE)
    case.add_failure_info(message=finding.describe())
    return case


def _install_cases(host: str, install: HostInstall | None) -> list[TestCase]:
    if not install:
        return []
    cases = []
    for role, row in install.roles.items():
        case = TestCase(role, classname=f"install.{role}", file=host)
        case.stdout = f"{row.tasks} tasks, {row.changed} changed"
        if row.failed:
            case.add_failure_info(message="; ".join(f"{f.task}: {f.msg}" for f in row.failed))
        cases.append(case)
    if install.status == "unreachable" and not any(r.failed for r in install.roles.values()):
        case = TestCase("connect", classname="install.connect", file=host)
        case.add_error_info(message="host unreachable")
        cases.append(case)
    return cases


def _check_case(suite: str, result: CheckResult) -> TestCase:
    name = result.check if result.scope is Scope.NODE else f"{result.check}[{result.host}]"
    case = TestCase(name, classname=f"burnin.{result.check}", elapsed_sec=result.duration_s, file=suite)
    case.stdout = result.message
    if result.outcome is Outcome.FAIL:
        case.add_failure_info(message=result.message)
    elif result.outcome is Outcome.ERROR:
        case.add_error_info(message=result.message)
    elif result.outcome is Outcome.SKIPPED:
        case.add_skipped_info(message=result.message)
    return case


def write(folder: Path, run: Run) -> list[Path]:
    """Write ``<folder>/<suite>.xml`` per suite and ``<folder>/all.xml`` (each atomically, 0600);
    remove other .xml files there; return the paths."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    all_suites = suites(run)
    written = [folder / f"{safe_name(suite.name, 'a JUnit suite (host) name')}.xml" for suite in all_suites]
    written.append(folder / "all.xml")
    for old in set(folder.glob("*.xml")) - set(written):
        old.unlink()
    elements = [suite.build_xml_doc(encoding="utf-8") for suite in all_suites]
    texts = [clean(ET.tostring(element, encoding="unicode")) for element in elements]
    for suite, element, text in zip(all_suites, elements, texts):
        safe_name(suite.name, "a JUnit suite (host) name")
        atomic_write(folder / f"{suite.name}.xml", _document([element], [text]), sync=False)
    atomic_write(folder / "all.xml", _document(elements, texts))
    return written


def _document(elements: list[ET.Element], texts: list[str]) -> str:
    """One JUnit document: ``<testsuites>`` with the suites' totals (disabled, errors, failures, tests,
    time: junit-xml's ``to_xml_report_string``'s), around the suites' serialized ``texts``."""
    totals = {key: str(sum(int(e.get(key, 0)) for e in elements))
              for key in ("disabled", "errors", "failures", "tests")}
    totals["time"] = str(sum(float(e.get("time", 0)) for e in elements))
    attributes = "".join(f' {key}="{value}"' for key, value in totals.items())
    return f"<?xml version='1.0' encoding='utf-8'?>\n<testsuites{attributes}>{''.join(texts)}</testsuites>\n"
