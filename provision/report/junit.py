"""JUnit XML from a run, made with junit-xml: one testsuite per host of the run (a host only cluster
tests covered included), plus one ``cluster`` suite for results that span several hosts (pair, group,
cluster scope) and one ``fabric`` suite with a testcase per leaf-spine cable and switch port
(``Run.fabric_components``: failed, skipped as untested, or passed). A multi-host result that blames a
host is a failed testcase in that host's suite too; a host left out of the cluster tests has a skipped
``cluster`` testcase saying why. Times are seconds rounded to milliseconds.

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

from provision.results import coverage
from provision.results.model import FABRIC, CheckResult, HostInstall, Outcome, Run, Scope
from provision.results.store import atomic_write, safe_name

CLUSTER_SUITE = "cluster"
FABRIC_SUITE = FABRIC  # one testcase per leaf-spine cable and switch port (provision.results.coverage)


def suites(run: Run) -> list[TestSuite]:
    properties = {"run_id": run.run_id}
    out = []
    covering = run.by_host()
    left = run.left_out()
    multi = [r for r in run.results if r.scope is not Scope.NODE]
    for host in sorted(set(run.install) | set(run.verdicts()) - {FABRIC}):
        cases = _install_cases(host, run.install.get(host))
        cases += [_check_case(host, r) for r in covering.get(host, ()) if r.scope is Scope.NODE and r.hosts == (host,)]
        cases += [_blame_case(host, r) for r in multi if r.outcome is Outcome.FAIL and host in r.blamed()]
        if host in left:
            cases.append(_left_out_case(host, left[host]))
        out.append(TestSuite(host, cases, hostname=host, properties=properties))
    if multi:
        cases = [_check_case(CLUSTER_SUITE, r) for r in multi]
        cases += [_suspect_case(f) for r in multi if r.check == "localize" and r.outcome is not Outcome.UNTESTED
                  for f in r.findings if not f.ok and f.fault != coverage.UNTESTED]
        out.append(TestSuite(CLUSTER_SUITE, cases, properties=properties))
    components = run.fabric_components()
    if components:
        out.append(TestSuite(FABRIC_SUITE, [_component_case(c) for c in components], properties=properties))
    return out


def _suspect_case(finding) -> TestCase:
    """One testcase per suspect the localization named (node, HCA or cable), failed with its evidence."""
    case = TestCase(f"suspect[{finding.host} {finding.device}]", classname="burnin.localize", file=CLUSTER_SUITE)
    case.add_failure_info(message=finding.describe())
    return case


def _blame_case(host: str, result: CheckResult) -> TestCase:
    """In a blamed host's own suite: the multi-host result that blames it, failed with its findings on it."""
    case = TestCase(f"{result.check}[{result.host}]", classname=f"burnin.{result.check}", file=host,
                    elapsed_sec=_ms(result.duration_s))
    mine = [f.describe() for f in result.findings if not f.ok and f.host == host]
    case.add_failure_info(message="; ".join(mine) or result.message)
    return case


def _left_out_case(host: str, why: str) -> TestCase:
    """A host the cluster procedure left out: its cluster tests skipped, saying why."""
    case = TestCase("cluster", classname="burnin.cluster", file=host)
    case.add_skipped_info(message=f"left out of the cluster tests: {why}")
    return case


def _component_case(c: coverage.Component) -> TestCase:
    """A cable or a switch port: failed with its fault codes and why, skipped when untested (JUnit has no
    outcome between: the message says untested, why and what would close it), else passed."""
    case = TestCase(c.name, classname=f"fabric.{'cable' if c.kind == 'cable' else 'switch_port'}", file=FABRIC_SUITE)
    if c.outcome is Outcome.FAIL:
        case.add_failure_info(message=f"{' '.join(c.faults)}: {c.detail}" + (f" [{c.action}]" if c.action else ""))
    elif c.outcome is Outcome.UNTESTED:
        case.add_skipped_info(message=f"untested: {c.detail}" + (f" [{c.action}]" if c.action else ""))
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
    case = TestCase(name, classname=f"burnin.{result.check}", elapsed_sec=_ms(result.duration_s), file=suite)
    case.stdout = result.message
    if result.outcome is Outcome.FAIL:
        case.add_failure_info(message=result.message)
    elif result.outcome is Outcome.ERROR:
        case.add_error_info(message=result.message)
    elif result.outcome is Outcome.SKIPPED:
        case.add_skipped_info(message=result.message)
    elif result.outcome is Outcome.UNTESTED:  # a coverage gap: not a failure (provision.results.coverage)
        case.add_skipped_info(message=f"untested: {result.message}")
    return case


def _ms(seconds: float) -> float:
    """Seconds rounded to milliseconds: JUnit's times (a sum of floats prints 42.230000000000004)."""
    return round(float(seconds or 0.0), 3)


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
    for element in elements:  # junit-xml sums the cases' times as floats: write milliseconds
        element.set("time", f"{_ms(float(element.get('time') or 0)):.3f}")
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
    totals["time"] = f"{_ms(sum(float(e.get('time', 0)) for e in elements)):.3f}"
    attributes = "".join(f' {key}="{value}"' for key, value in totals.items())
    return f"<?xml version='1.0' encoding='utf-8'?>\n<testsuites{attributes}>{''.join(texts)}</testsuites>\n"
