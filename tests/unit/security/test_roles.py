"""No role puts an inventory value into code: no templated Python source, no templated shell
line; inventory values that become file names or code on a node are checked by an assert first."""
import re

import yaml

from provision import paths

ROLES = paths.ROOT / "roles"


def tasks():
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            yield path, task


def test_no_task_templates_a_value_into_code_or_a_shell_line():
    for path, task in tasks():
        for module in ("ansible.builtin.shell", "shell"):
            assert module not in task or "{{" not in str(task[module]), (path, task["name"])
        argv = (task.get("ansible.builtin.command") or {}).get("argv") if isinstance(
            task.get("ansible.builtin.command"), dict) else None
        if isinstance(argv, list):
            for i, arg in enumerate(argv[1:], 1):
                assert not (argv[i - 1] == "-c" and "{{" in str(arg)), (path, task["name"], arg)
        assert not re.search(r"import \{\{", str(task)), (path, task["name"])


def test_values_that_become_names_on_a_node_are_asserted_first():
    names: dict[str, list[str]] = {}
    for path, task in tasks():
        names.setdefault(path.parent.parent.name, []).append(task["name"])
    assert names["framework_venv"].index("Check the virtualenv names and imports") < names["framework_venv"].index(
        "Import each virtualenv's frameworks")
    assert names["nvidia_repo"].index("Check the repository names and URLs") < names["nvidia_repo"].index(
        "Configure the repository for the package manager")
