"""Every program the code, the tests and bench/ start comes from a Debian package the Makefile installs.

The programs are found in the source, not listed by hand: the first word of every argv list literal
given to a call that starts a process (``subprocess.run``, ``Popen``, ``external.run``, a module's
``_run``/``_start``/``run`` helper) or assigned to an argv-like name, the default ``command`` of a
parameter, and every ``shutil.which("...")``. A program started for the first time fails here until
its package is named (provision/external.py for what ``provision`` starts, TEST_PACKAGES below for
what only the tests and benchmarks start) and the Makefile installs it. Where a program is installed,
``dpkg -S`` must agree with the table. ``provision/sim/tools/`` runs inside the simulated nodes, whose
programs come from the nodes' base root (NODE_PACKAGES, provision/sim/base.py), not from the Makefile.
"""
from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
import sys

import pytest

from provision import external, paths
from provision.errors import ExitStatus, MissingProgramError
from provision.sim import base

SOURCES = ("provision", "tests", "bench")
NODE_SIDE = paths.ROOT / "provision/sim/tools"  # runs inside the nodes
# What install --method local|image runs on every node (provision/rollout/node_side.py, sent there): programs of any
# node the roles support, by their package on Debian/Ubuntu and EL (findutils, tar and dpkg are Essential in Debian;
# systemd the init system the roles require; rpm on EL), never the controller's.
ROLLOUT_NODE_SIDE = paths.ROOT / "provision/rollout/node_side.py"
ROLLOUT_NODE_PROGRAMS = {"find": "findutils", "tar": "tar", "systemctl": "systemd", "dpkg-query": "dpkg",
                         "rpm": "rpm"}
# Calls that start a process here: subprocess.X and external.X, and the modules' own helpers (bare
# names; ``conn.run`` and ``sim.run`` start nothing here: they reach a node or a simulated tool)
# -> the index of their argv argument.
MODULE_SPAWNERS = {"run": 0, "Popen": 0, "check_output": 0, "check_call": 0, "call": 0, "popen": 0}
BARE_SPAWNERS = {"run": 0, "_run": 0, "_start": 1, "Popen": 0}
# Program -> (Debian package, the Makefile variable or file that installs it): what only the tests
# and the benchmarks start. make cannot install make: .ci/run does.
TEST_PACKAGES = {
    "chromium": ("chromium", "TEST_APT_PACKAGES"),
    "slurmctld": ("slurmctld", "TEST_APT_PACKAGES"),
    "slurmd": ("slurmd", "TEST_APT_PACKAGES"),
    "munged": ("munge", "TEST_APT_PACKAGES"),
    "mungekey": ("munge", "TEST_APT_PACKAGES"),
    "cmake": ("cmake", "TEST_APT_PACKAGES"),
    "pgrep": ("procps", "TEST_APT_PACKAGES"),
    "clush": ("clustershell", "TEST_APT_PACKAGES"),
    "make": ("make", ".ci/run"),
    "ip": ("iproute2", "TEST_APT_PACKAGES"),  # network namespaces: nodes behind a bastion
    "ssh-keygen": ("openssh-client", "APT_PACKAGES"),
    "ssh-agent": ("openssh-client", "APT_PACKAGES"),
    "ssh-add": ("openssh-client", "APT_PACKAGES"),
    "dpkg": ("dpkg", "SIM_APT_PACKAGES"),  # this test's own cross-check (dpkg -S)
    "dpkg-query": ("dpkg", "SIM_APT_PACKAGES"),
    # a job sent to, and cancelled on, a simulated node's slurmd (tests/integration/test_health_slurm.py)
    "sbatch": ("slurm-client", "TEST_APT_PACKAGES"),
    "scancel": ("slurm-client", "TEST_APT_PACKAGES"),
    # the libraries Slurm's programs need inside a simulated node (tests/integration/slurm_node.py); the role's
    # wrapper checked by sh -n (tests/unit/test_role_health_check.py): both essential in Debian
    "ldconfig": ("libc-bin", "TEST_APT_PACKAGES"),
    "sh": ("dash", "TEST_APT_PACKAGES"),
    # LBNL NHC's node-mark-offline/-online, the oracle of provision health's drain rules
    # (tests/integration/test_nhc_oracle.py)
    "bash": ("bash", "TEST_APT_PACKAGES"),
    # bench/install_scale.py: the bytes on the controller's SSH connections (ss -ti)
    "ss": ("iproute2", "TEST_APT_PACKAGES"),
}
# Programs that a program we start starts in turn: the C++ compiler cmake runs for the simulated
# nvbandwidth tree (tests/unit/sim/test_sources.py).
# unshare: provision/sim/node-boot.sh, the simulated node's supervisor, boots the node with it; nsenter: the
# prefix tests/integration/hidden_net.py gives the rack's node start (a node inside a network namespace).
INDIRECT = {"c++": ("g++", "TEST_APT_PACKAGES"), "unshare": ("util-linux", "SIM_APT_PACKAGES"),
            "nsenter": ("util-linux", "SIM_APT_PACKAGES"),
            "sinfo": ("slurm-client", "TEST_APT_PACKAGES")}  # NHC's helpers read a node's state with it
# Programs a test uses only where the machine has them (the test is skipped elsewhere), with their Debian package,
# which the Makefile does not install: promtool checks the Prometheus textfile (tests/unit/report/test_one_truth.py),
# but Debian's prometheus package brings the server, 33 packages and 96 MB to a CI run.
OPTIONAL = {"promtool": "prometheus"}
# provision/external.py's make targets -> the Makefile variable each installs.
TARGET_VARIABLES = {"make setup": "APT_PACKAGES", "make sim-base": "SIM_APT_PACKAGES", "make test": "TEST_APT_PACKAGES"}
# Programs the burn-in starts inside the nodes (over SSH), from the nodes' base root: mpirun is
# nccl_cluster's launcher (provision/engine/cluster.py), run on the group's first node.
NODE_PACKAGES = {"mpirun": "openmpi-bin"}


def _argv_head(node: ast.AST | None, lists: dict[str, ast.AST]) -> str | None:
    """The program of an argv expression: a literal list, a name bound to one, or ``name + [...]``;
    its first word a string or a name bound to one (``[SSH, "-G", ...]``)."""
    if isinstance(node, ast.BinOp):
        node = node.left
    if isinstance(node, ast.Name):
        node = lists.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        if isinstance(first, ast.Name):
            first = lists.get(first.id)
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def _argv_arg(call: ast.Call) -> ast.AST | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in ("subprocess", "external"):
        index = MODULE_SPAWNERS.get(func.attr)
    elif isinstance(func, ast.Name):
        index = BARE_SPAWNERS.get(func.id)
    else:
        return None
    return call.args[index] if index is not None and len(call.args) > index else None


def _programs_in(tree: ast.Module) -> dict[str, int]:
    found: dict[str, int] = {}
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    module = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name)}
    for scope in scopes:
        lists = module | {t.id: n.value for n in ast.walk(scope) if isinstance(n, ast.Assign)
                          for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(scope):
            if isinstance(node, ast.Call):
                program = _argv_head(_argv_arg(node), lists)
                if program is not None:
                    found.setdefault(program, node.lineno)
                func = node.func
                if getattr(func, "attr", getattr(func, "id", "")) == "which" and node.args \
                        and isinstance(node.args[0], ast.Constant):
                    found.setdefault(str(node.args[0].value), node.lineno)
            elif isinstance(node, ast.arguments):  # def f(..., command=("scontrol",))
                named = node.posonlyargs + node.args
                defaults = [None] * (len(named) - len(node.defaults)) + list(node.defaults)
                for arg, default in zip(named + node.kwonlyargs, defaults + list(node.kw_defaults)):
                    program = _argv_head(default, {}) if arg.arg == "command" else None
                    if program is not None:
                        found.setdefault(program, default.lineno)
    return found


@functools.cache
def started_programs() -> dict[str, str]:
    """Program -> the first place (file:line) the source starts it."""
    found: dict[str, str] = {}
    for top in SOURCES:
        for path in sorted((paths.ROOT / top).rglob("*.py")):
            if path.is_relative_to(NODE_SIDE) or path == ROLLOUT_NODE_SIDE:
                continue
            for program, line in _programs_in(ast.parse(path.read_text(), str(path))).items():
                found.setdefault(program, f"{path.relative_to(paths.ROOT)}:{line}")
    return found


def makefile_variables() -> dict[str, set[str]]:
    """Every ``*APT_PACKAGES`` variable of the Makefile (``:=`` and ``+=`` lines) -> its packages."""
    values: dict[str, set[str]] = {}
    for line in (paths.ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Z_]*APT_PACKAGES)\s*(\+?:?=)\s*(.*)$", line)
        if m:
            words = set(m.group(3).split())
            values[m.group(1)] = values.get(m.group(1), set()) | words if m.group(2) == "+=" else words
    return values


def table() -> dict[str, tuple[str, str]]:
    """Program -> (package, where it is installed) for everything started on this machine."""
    product = {p: (pkg.name, TARGET_VARIABLES[pkg.target]) for p, pkg in external.PACKAGES.items()}
    assert not product.keys() & TEST_PACKAGES.keys()
    return product | TEST_PACKAGES | INDIRECT


def test_the_source_starts_programs_the_scan_finds():
    found = started_programs()  # the scan itself must see the programs it is meant to see
    assert {"rpmbuild", "createrepo_c", "debootstrap", "mount", "gpg", "chromium", "slurmctld"} <= found.keys()


def test_every_program_started_has_a_package():
    unknown = {p: where for p, where in started_programs().items() if p not in table() and p not in OPTIONAL}
    assert not unknown, f"programs with no Debian package in provision/external.py or TEST_PACKAGES: {unknown}"


def test_no_package_entry_outlives_its_program():
    assert sorted(table().keys() - INDIRECT.keys() - started_programs().keys()) == []
    assert sorted(OPTIONAL.keys() - started_programs().keys()) == []


def test_the_makefile_installs_every_package_in_its_variable():
    variables, ci = makefile_variables(), (paths.ROOT / ".ci/run").read_text()
    assert {"APT_PACKAGES", "SIM_APT_PACKAGES", "TEST_APT_PACKAGES"} <= variables.keys()
    absent = {p: (pkg, where) for p, (pkg, where) in table().items()
              if not (pkg in variables.get(where, set()) if where.endswith("APT_PACKAGES") else re.search(
                  rf"install\b.*\b{re.escape(pkg)}\b", ci))}
    assert not absent, f"program -> (package, where it should be installed) missing there: {absent}"


def test_programs_run_inside_the_nodes_come_from_the_base_root():
    assert set(NODE_PACKAGES.values()) <= set(base.INCLUDE + base.EXTRA)
    source = (paths.ROOT / "provision/engine/cluster.py").read_text() + (paths.ROOT / "provision/checks"
                                                                          / "nccl_cluster.py").read_text()
    assert all(p in source for p in NODE_PACKAGES)


def _dpkg_owners(programs) -> dict[str, str]:
    """Program -> the package dpkg says ships it, for the installed ones (one ``dpkg -S`` for all; merged
    /usr: a file of /bin is found on PATH as /usr/bin)."""
    candidates: dict[str, str] = {}
    for program in programs:
        path = shutil.which(program)
        if path is not None:
            real = os.path.realpath(path)
            for candidate in (real, path, re.sub(r"^/usr/", "/", real), re.sub(r"^/usr/", "/", path)):
                candidates.setdefault(candidate, program)
    out = subprocess.run(["dpkg", "-S", *candidates], capture_output=True, text=True).stdout
    owners: dict[str, str] = {}
    for line in out.splitlines():
        packages, _, path = line.partition(": ")
        if path in candidates:
            owners.setdefault(candidates[path], packages.split(",")[0].split(":")[0].strip())
    return owners


def _depends_closure() -> dict[str, set[str]]:
    """Installed package -> every installed package it depends on, directly or not (gnupg -> gpg -> gpgconf)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Depends}, ${Pre-Depends}\n"],
                         capture_output=True, text=True).stdout
    direct = {}
    for line in out.splitlines():
        name, _, deps = line.partition("\t")
        direct[name] = {re.split(r"[\s(:]", d.strip())[0] for d in re.split(r"[,|]", deps) if d.strip()}
    closure: dict[str, set[str]] = {}
    for name in direct:
        seen, todo = set(), [name]
        while todo:
            for dep in direct.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        closure[name] = seen
    return closure


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian machine: no dpkg to ask")
def test_dpkg_agrees_with_the_table_for_every_installed_program():
    owners = _dpkg_owners(table())
    assert owners, "no program of the table is installed: nothing was cross-checked"
    closure = _depends_closure()
    wrong = {p: f"dpkg -S: {owner}, table: {table()[p][0]}" for p, owner in owners.items()
             if owner != table()[p][0] and owner not in closure.get(table()[p][0], set())}
    assert not wrong


def test_a_missing_program_is_one_line_naming_its_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingProgramError) as caught:
        external.run(["rpmbuild", "--version"], capture_output=True)
    assert str(caught.value) == "rpmbuild not found: install Debian package rpm (make sim-base installs it)"
    assert caught.value.exit_status == ExitStatus.MISSING_PROGRAM == 4
    with pytest.raises(MissingProgramError, match=r"^createrepo_c not found: install Debian package createrepo-c "):
        external.popen(["createrepo_c", "--version"])
    absent = "no-such-" + "tool"  # built, so that the scan above does not count it as a program started
    with pytest.raises(MissingProgramError, match=r"^no-such-tool not found: it is not installed on this machine$"):
        external.run([absent])


def test_a_missing_working_folder_is_not_called_a_missing_program(tmp_path):
    with pytest.raises(FileNotFoundError):
        external.run([sys.executable, "-c", "pass"], cwd=tmp_path / "absent")


def test_the_rocky_repository_without_rpmbuild_is_one_line_not_an_internal_error(tmp_path):
    """What `provision sim up --os rocky9` met on a fresh machine (rpmbuild via rpmrepo.build_one)."""
    code = ("import sys; from pathlib import Path; from provision.sim import rpmrepo, snapshot; "
            "from provision.errors import ProvisionError\n"
            "try:\n    rpmrepo.build_one(snapshot.Package('x', '1-1', 'noarch', (), (), 'os', ()), Path(sys.argv[1]), "
            "Path(sys.argv[1]) / 'out')\n"
            "except ProvisionError as exc:\n    print(exc); sys.exit(exc.exit_status)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PATH": str(tmp_path)}, cwd=paths.ROOT)
    assert (proc.returncode, proc.stdout.strip()) == (
        4, "rpmbuild not found: install Debian package rpm (make sim-base installs it)"), proc.stderr


def test_the_command_line_says_it_in_one_line_with_its_exit_status(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "provision", "sim", "base"], capture_output=True, text=True,
                          env={**os.environ, "PATH": str(tmp_path), "PROVISION_SIM_CACHE": str(tmp_path / "cache")},
                          cwd=paths.ROOT)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr == ("provision: error: debootstrap not found: install Debian package debootstrap "
                           "(make sim-base installs it)\n")


def test_what_the_install_methods_run_on_a_node_is_every_supported_node_s():
    """node_side.py starts only ROLLOUT_NODE_PROGRAMS (each from a package every node the roles support has)."""
    started = set(_programs_in(ast.parse(ROLLOUT_NODE_SIDE.read_text(), str(ROLLOUT_NODE_SIDE))))
    assert started and started <= set(ROLLOUT_NODE_PROGRAMS), started - set(ROLLOUT_NODE_PROGRAMS)
