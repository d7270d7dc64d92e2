"""The commands are one module per verb, loaded lazily from the CLI's table, and never import each other."""
from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib

import pytest

from provision import cli, paths
from provision.commands import _job
from provision.errors import ProvisionError
from provision.inventory import Vault

HEAVY = ("paramiko", "jinja2", "prometheus_client", "ansible_runner", "ansible", "rich")


def test_the_table_names_every_verb_of_the_parser_and_each_module_has_main():
    parser = cli._parser()
    verbs = next(a for a in parser._actions if a.dest == "command").choices
    assert sorted(cli.COMMANDS) == sorted(verbs)
    for module in cli.COMMANDS.values():
        assert callable(importlib.import_module(module).main)


def test_the_independence_contract_covers_every_command():
    config = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    independent = [c for c in config if c["type"] == "independence"]
    assert [sorted(c["modules"]) for c in independent] == [sorted(cli.COMMANDS.values())]


@pytest.mark.parametrize("argv", [["checks", "--help"], ["--help"], ["parse", "--help"]])
def test_help_loads_no_heavy_library_and_no_command(argv):
    code = ("import sys; from provision import cli\n"
            "try:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & set(" + repr(HEAVY) + ")))\n"
            "print(sorted(m for m in sys.modules if m.startswith('provision.commands.')))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    heavy, commands = out.stdout.strip().splitlines()[-2:]
    assert heavy == "[]" and commands == "[]"


def test_a_command_loads_only_its_own_module():
    code = ("import sys; from provision import cli; cli.main(['checks'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('provision.commands.')))\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & set(" + repr(HEAVY) + ")))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    commands, heavy = out.stdout.strip().splitlines()[-2:]
    assert commands == "['provision.commands._common', 'provision.commands.checks']" and heavy == "[]"


def test_the_job_options_are_read_once_from_each_commands_arguments():
    parser = cli._parser()
    run = _job.JobOptions.from_args(parser.parse_args(
        ["run", "-i", "a", "-i", "b", "--limit", "n1, n2", "--checks", "xid", "--forks", "4", "--wait",
         "--vault-id", "dev@f"]))
    assert run.phases == ("install", "burnin") and run.inventory == ("a", "b") and run.limit == ("n1", "n2")
    assert run.checks == ("xid",) and run.forks == 4 and run.wait == 3600.0 and run.vault == Vault(ids=("dev@f",))
    install = _job.JobOptions.from_args(parser.parse_args(["install", "-i", "a", "--tags", "t"]))
    assert install.phases == ("install",) and install.tags == "t" and install.checks is None
    assert install.scope == "all" and install.schedule is None and not install.local  # the set's, else quick:
    assert _job.select.schedule(install.check_set, install.schedule) == "quick"
    burnin = _job.JobOptions.from_args(parser.parse_args(["burnin", "--local", "--profile", "p"]))
    assert burnin.phases == ("burnin",) and burnin.local and burnin.profile == "p" and burnin.inventory == ()
    with pytest.raises(ProvisionError, match="--host and --profile go with --local"):
        _job.JobOptions.from_args(parser.parse_args(["burnin", "-i", "a", "--host", "h"]))
    with pytest.raises(ProvisionError, match="-i/--inventory is required"):
        _job.JobOptions.from_args(parser.parse_args(["burnin"]))
