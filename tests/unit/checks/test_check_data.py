"""Every check against its test data: each case of every ``tests/data/<check>/cases.yaml``
(tests/unit/checks/declared.py says what a case holds) judged by the engine's verdict, with the
declared outcome, message fragments and fault codes; and properties over the registry that no
hand-kept list has to repeat: every registered check has its folder with a passing and a failing
case, every capture in a folder is judged by some case, every fault code a case shows has its
catalogue action and every failing finding names its device, fault and action; and the capture
script (tests/data/tools/capture.py) remakes one check's folder, reproducibly.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from provision.checks import faults, registry
from provision.engine.verdict import not_applicable
from provision.results.model import Outcome

from tests.unit.checks import judge
from tests.unit.checks.declared import DATA, HOST, cases, folders, load

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_is_judged_as_declared(case):
    profile = case.host_profile()
    check = registry()[case.check]
    hosts = case.job_hosts(check.scope)
    # the engine's first stage, then its verdict: a case on a platform the check does not apply to is skipped
    result = not_applicable(check, hosts, check.scope, profile) or judge(HOST, check, profile, case.texts(), hosts,
                                                                          case.addresses)
    assert result.outcome == case.outcome, result.message
    for needle in case.needles(profile):
        assert needle in result.message
    failing = [f for f in result.findings if not f.ok]
    if case.outcome is Outcome.FAIL:
        assert failing and all(f.fault and f.action == faults.action(f.fault) and f.device for f in failing)
    if case.faults is not None:
        assert sorted({f.fault for f in failing}) == sorted(case.faults)
    for finding in result.findings:
        assert finding.ok or finding.fault, (finding.device, finding.metric)


def test_every_registered_check_has_its_folder_with_passing_and_failing_cases():
    declared = {folder.name for folder in folders()}
    for check_id in registry():
        assert check_id in declared, f"tests/data/{check_id}/cases.yaml: missing"
        outcomes = {c.outcome for c in CASES if c.check == check_id}
        assert Outcome.PASS in outcomes and Outcome.FAIL in outcomes, check_id


def test_every_folder_is_a_registered_check_and_its_case_names_are_unique():
    for folder in folders():
        assert folder.name in registry(), f"{folder}: no check of that id"
        names = [c.name for c in load(folder)]
        assert len(names) == len(set(names)), folder


def test_every_capture_of_a_folder_is_judged_by_some_case():
    for folder in folders():
        used = {(folder / path).resolve() for c in load(folder) for path in c.captures.values()}
        unused = sorted(p.name for p in folder.glob("*.txt") if p.resolve() not in used)
        assert not unused, f"{folder.relative_to(DATA.parent)}: captures no case judges: {unused}"


def test_the_cases_show_most_of_the_fault_catalogue():
    shown = {code for c in CASES for code in c.faults or ()}
    assert not shown - set(faults.catalogue())
    assert len(shown) >= 20


def test_the_capture_script_remakes_one_check_and_only_it_with_the_same_bytes(tmp_path):
    """tests/data/tools/capture.py --check xid: only xid's simulated captures, byte-identical when run
    twice (fixed clock and seed), and judged as the declaration says."""
    script = DATA / "tools" / "capture.py"
    runs = []
    for name in ("one", "two"):
        out = tmp_path / name
        subprocess.run([sys.executable, str(script), "--check", "xid", "--out", str(out)], check=True,
                       capture_output=True, text=True)
        runs.append({p.name: p.read_bytes() for p in out.iterdir()})
    expected = {Path(path).name for c in load(DATA / "xid") if c.sim and "recorded" not in c.sim
                for path in c.captures.values()}
    assert set(runs[0]) == expected and runs[0] == runs[1]
    xid79 = next(c for c in load(DATA / "xid") if c.name == "xid79")
    texts = {"": runs[0]["sim_h100_xid79.txt"].decode()}
    result = judge(HOST, registry()["xid"], xid79.host_profile(), texts)
    assert result.outcome == xid79.outcome and all(n in result.message for n in xid79.needles(xid79.host_profile()))
