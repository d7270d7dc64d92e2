"""Roles in the cluster procedure (provision.checks.base.Role) are declared by the checks, and a role
goes with its scope: the procedure runs a check of a role as that role's jobs."""
import pytest

from provision import checks
from provision.checks.base import Check, Role, Scope
from provision.errors import ProvisionError


def test_every_role_is_declared_by_a_check_of_its_scope():
    registered = checks.registry().values()
    assert {c.role for c in registered if c.role} == set(Role)
    assert all(c.scope is c.role.scope for c in registered if c.role)


def test_a_role_outside_its_scope_is_refused():
    def nothing(*args):
        return []
    with pytest.raises(ValueError, match="check x: role pair-evidence needs scope pair, not node"):
        Check(id="x", tool="t", steps=nothing, judge=nothing, order=1, role=Role.PAIR_EVIDENCE)
    assert Check(id="x", tool="t", steps=nothing, judge=nothing, order=1, scope=Scope.GROUP,
                 role=Role.GROUP_EVIDENCE).role.scope is Scope.GROUP


def test_a_site_module_declaring_a_role_outside_its_scope_is_one_line_of_bad_input(tmp_path, monkeypatch):
    (tmp_path / "site_pairs.py").write_text(
        "from provision.checks.base import Check, Role\n"
        "CHECK = Check(id='site_pairs', tool='t', steps=None, judge=None, order=1,"
        " role=Role.PAIR_EVIDENCE)\n")
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    with pytest.raises(ProvisionError, match="site_pairs.py: cannot load this check module .*"
                                                    "role pair-evidence needs scope pair, not node"):
        checks.registry()
