"""The stack manifest: the roles' own variables, as Ansible resolves them for each host and OS target.

No second place holds the versions: ``provision.inventory.playvars`` reads the inventory with the
playbook's group_vars and the roles' defaults, and templates the names in ``VARIABLES`` with the
OS facts of the host's target. The target is the inventory variable ``provision_os`` (ubuntu2204,
ubuntu2404, debian12, rhel9: NVIDIA's repository folders); a host without it is planned for
every target, since the pins differ per target (stack_release.yaml's ``targets``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from provision import profiles
from provision.errors import InventoryError, ProfileError
from provision.inventory import Problem, Vault, playvars
from provision.plan.stack import Env, Package, Stack

VARIABLES = ("nvidia_driver_version", "cuda_toolkit_version", "cudnn_version", "nccl_version", "nccl_cuda_version",
             "framework_venv_python", "framework_venv_envs")
ROLES = ("nvidia_driver", "cuda_toolkit", "cudnn", "nccl", "framework_venv")
# The facts the playbook's stack_target filter reads, per target (install_facts.target; playbooks/group_vars/all.yml).
TARGETS = {
    "ubuntu2204": {"os_family": "Debian", "distribution": "Ubuntu", "distribution_version": "22.04",
                   "distribution_major_version": "22"},
    "ubuntu2404": {"os_family": "Debian", "distribution": "Ubuntu", "distribution_version": "24.04",
                   "distribution_major_version": "24"},
    "debian12": {"os_family": "Debian", "distribution": "Debian", "distribution_version": "12",
                 "distribution_major_version": "12"},
    "rhel9": {"os_family": "RedHat", "distribution": "Rocky", "distribution_version": "9.4",
              "distribution_major_version": "9"},
}
OS_VAR = "provision_os"
REQUIREMENT_NAME = re.compile(r"\s*[A-Za-z0-9]")  # a requirement starts with its project name (PEP 508)


def stacks(sources: Sequence[Path], vault: Vault = Vault(), limit: list[str] | None = None, session=None
           ) -> tuple[dict[str, list[Stack]], list[Problem]]:
    """({host: [its Stack per target]}, problems) for the GPU nodes of ``sources``; ``session`` the
    inventory's parsed sources when already read (``Inventory.session``). Raises InventoryError."""
    problems: list[Problem] = []

    def facts(host: str, variables: dict) -> dict[str, dict] | None:
        if not variables.get("provision_profile"):
            return None
        target = variables.get(OS_VAR)
        if target is not None and (not isinstance(target, str) or target not in TARGETS):
            problems.append(Problem(str(sources[0]), host, OS_VAR, f"field '{OS_VAR}' must be one of "
                                    f"{', '.join(TARGETS)}, got {str(target)[:40]!r}"))
            return None
        return {target: TARGETS[target]} if target else dict(TARGETS)

    found, templating = playvars.play_vars(sources, (*VARIABLES, "provision_profile"), facts, vault, limit, ROLES,
                                           session)
    problems += templating
    out: dict[str, list[Stack]] = {}
    for host, per_target in found.items():
        try:
            out[host] = [stack_of(host, values, target) for target, values in per_target.items()]
        except (ProfileError, InventoryError) as exc:
            problems.append(Problem(str(sources[0]), host, None, str(exc)))
    return out, problems


def stack_of(host: str, values: dict, target: str) -> Stack:
    """One host's Stack for ``target`` from its templated variables. Raises ProfileError, InventoryError."""
    profile = profiles.load(str(values["provision_profile"]))
    envs = []
    raw_envs = values.get("framework_venv_envs") or []
    if not isinstance(raw_envs, list) or not all(isinstance(e, dict) for e in raw_envs):
        raise InventoryError(f"host {host}: field 'framework_venv_envs' must be a list of {{name, packages, imports}}")
    for env in raw_envs:
        packages = env.get("packages") or []
        if not isinstance(packages, list) or not all(isinstance(p, str) and REQUIREMENT_NAME.match(p)
                                                     for p in packages):
            raise InventoryError(f"host {host}: field 'framework_venv_envs' entry {env.get('name')!r}: packages "
                                 "must be a list of requirement strings such as torch==2.4.1, "
                                 f"got {str(packages)[:60]}")
        envs.append(Env(str(env.get("name", "?")), tuple(Package.parse(str(p)) for p in packages)))
    pins = {name: _version(host, values, name) for name in VERSIONS}
    interpreter = values.get("framework_venv_python", "python3")
    if not isinstance(interpreter, str) or not interpreter.strip():
        raise InventoryError(f"host {host}: field 'framework_venv_python' must be an interpreter such as python3.11, "
                             f"got {interpreter!r}")
    return Stack(target=target, gpu=profile.gpu.model, compute_capability=profile.gpu.compute_capability,
                 driver=pins["nvidia_driver_version"], cuda=pins["cuda_toolkit_version"],
                 cudnn=pins["cudnn_version"], nccl=pins["nccl_version"], nccl_cuda=pins["nccl_cuda_version"],
                 interpreter=interpreter, envs=tuple(envs))


VERSIONS = ("nvidia_driver_version", "cuda_toolkit_version", "cudnn_version", "nccl_version", "nccl_cuda_version")
VERSION = re.compile(r"\d+(\.\d+)+\Z")


def _version(host: str, values: dict, name: str) -> str:
    """A pin as the roles use it: dotted numbers (550.127.05, 12.4.1, 12.4). Raises InventoryError."""
    value = values.get(name)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not VERSION.match(str(value).strip()):
        raise InventoryError(f"host {host}: field '{name}' must be a dotted version such as "
                             f"{EXAMPLES[name]}, got {str(value)[:40]!r}")
    return str(value).strip()


EXAMPLES = {"nvidia_driver_version": "550.127.05", "cuda_toolkit_version": "12.4.1", "cudnn_version": "9.1.0.70",
            "nccl_version": "2.21.5", "nccl_cuda_version": "12.4"}
