"""The stack release: the software pins every node gets (``stack_release.yaml`` beside this module).

``pins(target, line)`` is a release line's pins with the overrides of ``target``, NVIDIA's repository
folder of the node (``ubuntu2404``...), applied: keys driver_branch, driver_version,
cuda_version, cudnn_version, nccl_version, nccl_cuda_version. The default line is the file's top level
(``pins``, ``targets``); other lines (``lines: {blackwell: {pins, targets, reason, source}}``) are named by
a hardware profile's ``stack_line``, so a B200 node gets driver 580 and CUDA 13 while an H100 node keeps
its line. The roles read the same file and take their pins from the same code (``install_facts``, the playbooks'
``stack_pins`` filter: playbooks/group_vars/all.yml), so what is installed and what is checked are one thing.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import yaml

from provision.errors import ProfileError
from provision.profiles import install_facts, schema

RELEASE = Path(__file__).with_name("stack_release.yaml")


@functools.cache
def release() -> dict:
    """The release file, validated (``stack_release.schema.json``). Raises ProfileError."""
    try:
        data = yaml.safe_load(RELEASE.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(f"{RELEASE}: not valid YAML: {str(exc).splitlines()[0]}") from None
    schema.validate(data, "stack_release", str(RELEASE))
    return data


def lines() -> tuple[str, ...]:
    """The names of the release lines besides the default one."""
    return tuple(release().get("lines") or {})


def _line(line: str | None) -> Mapping:
    """The default line (the file's top level) or line ``line``. Raises ProfileError for an unknown name."""
    try:
        return install_facts.release_line(release(), line)
    except ValueError as exc:
        raise ProfileError(f"{RELEASE}: {exc}") from None


def targets(line: str | None = None) -> dict:
    """NVIDIA repository folder -> {pins, reason, source} where that folder's pins differ, on ``line``."""
    return _line(line)["targets"]


def pins(target: str | None = None, line: str | None = None) -> dict[str, str]:
    """Release line ``line``'s pins (None: the default line), with ``target``'s overrides when it has any
    (``install_facts.pins``). Raises ProfileError for an unknown line."""
    try:
        return install_facts.pins(release(), line, target)
    except ValueError as exc:
        raise ProfileError(f"{RELEASE}: {exc}") from None
