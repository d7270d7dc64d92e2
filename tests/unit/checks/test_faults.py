"""The fault catalogue (provision/checks/faults.yaml) and the checks agree: every code a check
reports is catalogued, every catalogued code is reported by some check, every row is complete."""
import ast
import re
from pathlib import Path

import pytest
import yaml

from provision.checks import faults, xid
from provision.checks.base import judge_outputs
from provision.errors import ParseError, ProfileError

from tests.unit.checks import hosts_of

CHECKS_DIR = Path(faults.__file__).parent
HELPERS = {"plausible", "__init__", "base", "rules", "faults", "references"}
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # GPU_MISSING, XID_79


def _declares_a_check(tree: ast.Module) -> bool:
    """Whether a module of provision/checks/ declares a check (a top-level ``CHECK = ...``), not a helper."""
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CHECK" for t in n.targets)
               for n in tree.body)


def codes_in_source() -> dict[str, set[str]]:
    """Check module -> the fault codes written in it (string constants shaped like a code),
    plus the codes xid builds from its Xid numbers."""
    out = {}
    for path in sorted(CHECKS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        if path.stem in HELPERS or not _declares_a_check(tree):
            continue
        out[path.stem] = {n.value for n in ast.walk(tree)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}
    # the code checks share (provision/checks/common/) writes the codes of the checks that call it
    for path in sorted((CHECKS_DIR / "common").glob("*.py")):
        codes = {n.value for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}
        if codes:
            out[f"common/{path.stem}"] = codes
    out["xid"] |= {xid.code(n) for n in xid.SEVERITY} | {xid.code(-1)}
    # the cluster procedure's suspects (provision/engine/cluster.py) carry codes of their own
    tree = ast.parse((CHECKS_DIR.parent / "engine" / "cluster.py").read_text())
    out["localize"] = {n.value for n in ast.walk(tree)
                       if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}
    # a hung node's recovery (provision/engine/recovery.py) records its power cycle with codes of its own
    tree = ast.parse((CHECKS_DIR.parent / "engine" / "recovery.py").read_text())
    out["node_recovery"] = {n.value for n in ast.walk(tree)
                            if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}
    # the history's regression gates (provision/history/regress.py) carry one of their own
    tree = ast.parse((CHECKS_DIR.parent / "history" / "regress.py").read_text())
    out["regression"] = {n.value for n in ast.walk(tree)
                         if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}
    return out


def test_every_code_a_check_writes_is_catalogued():
    catalogue = faults.catalogue()
    for module, codes in codes_in_source().items():
        assert codes, module
        assert not codes - set(catalogue), f"provision/checks/{module}.py uses codes not in faults.yaml"


def test_every_catalogued_code_is_used_by_some_check():
    used = set().union(*codes_in_source().values())
    assert not set(faults.catalogue()) - used, "dead entries in faults.yaml"


def test_every_row_has_meaning_action_and_a_source():
    rows = yaml.safe_load(faults.CATALOGUE.read_text())
    for code, row in rows.items():
        assert CODE.match(code), code
        assert set(row) == {"meaning", "action", "source"}, code
        assert all(isinstance(v, str) and v.strip() for v in row.values()), code
        assert "https://" in row["source"] or "provision/" in row["source"], f"{code}: source is no URL or repo path"


def test_one_action_per_fault_across_checks():
    """No check writes its own advice any more: each finding's action is its code's."""
    for path in sorted(CHECKS_DIR.glob("*.py")) + sorted((CHECKS_DIR / "common").glob("*.py")):
        if path.stem in HELPERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "action":
                assert not isinstance(node.value, ast.Constant), f"{path.name}: literal action"


def test_an_unknown_code_is_refused():
    with pytest.raises(KeyError, match="NOPE"):
        faults.action("NOPE")


def test_xid_unknown_numbers_get_the_unknown_code():
    assert xid.code(79) == "XID_79" and xid.code(999) == "XID_UNKNOWN"


def _every_case():
    """(check, profile, texts, hosts) of every declared case (tests/data/<check>/cases.yaml)."""
    from provision.checks import registry
    from tests.unit.checks.declared import cases

    for case in cases():
        check = registry()[case.check]
        yield check, case.host_profile(), case.texts(), case.job_hosts(check.scope)


def test_every_finding_of_the_captures_carries_its_catalogue_action():
    seen = set()
    for check, profile, texts, hosts in _every_case():
        try:
            findings = judge_outputs(check, profile, hosts_of(check, hosts, profile), texts)
        except (ParseError, ProfileError):
            continue  # truncated and foreign captures: errors, judged elsewhere
        for f in findings:
            if f.fault:
                assert f.action == faults.action(f.fault), (check.id, f.fault)
                seen.add(f.fault)
            assert f.ok or f.fault, (check.id, f.device, f.metric)
    assert len(seen) >= 20  # the captures exercise most of the catalogue
