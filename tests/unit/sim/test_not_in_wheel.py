"""The simulator ships with the checkout, not the wheel (issue 22): pyproject's package list leaves
``provision.sim`` (and the fat-tree synthesiser in it) out, and without it ``provision sim`` and a job on
the embedded default answer with one line, exit 2, while the rest of the CLI works."""
import sys
import tomllib

import pytest
from setuptools import find_packages

from provision import cli, embedded, paths
from provision.errors import ProvisionError


def test_the_wheels_packages_leave_the_simulator_out():
    find = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(paths.ROOT), include=find["include"], exclude=find.get("exclude", ()))
    assert "provision" in packages and "provision.fabric" in packages and "provision.checks" in packages
    assert not [p for p in packages if p == "provision.sim" or p.startswith("provision.sim.")]


@pytest.fixture
def no_simulator(monkeypatch):
    """As a wheel install is: importing anything of provision.sim fails."""
    for name in [n for n in sys.modules if n == "provision.sim" or n.startswith("provision.sim.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "provision.sim", None)


def test_sim_command_without_the_simulator_is_one_line(no_simulator, capsys):
    assert cli.main(["sim", "status"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "simulator is not installed" in err[0] and "checkout" in err[0]


def test_embedded_default_without_the_simulator_is_bad_input(no_simulator):
    with pytest.raises(ProvisionError, match="simulator is not installed"):
        embedded.ensure_running(embedded.SIM_INVENTORY)
    embedded.ensure_running(paths.ROOT / "inventory" / "elsewhere")  # any other inventory: nothing to start


def test_other_commands_work_without_the_simulator(no_simulator, capsys):
    assert cli.main(["checks"]) == 0
    assert "gpu_health" in capsys.readouterr().out
