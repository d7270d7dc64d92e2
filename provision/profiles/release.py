"""The stack release: the software pins every node gets (``stack_release.yaml`` beside this module).

``pins(target)`` is the release's pins with the overrides of ``target``, NVIDIA's repository
folder of the node (``ubuntu2404``...), applied: keys driver_branch, driver_version,
cuda_version, cudnn_version, nccl_version, nccl_cuda_version. The roles read the same file
(playbooks/group_vars/all.yml), so what is installed and what is checked are one thing.
"""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from provision.errors import ProfileError
from provision.profiles import schema

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


def targets() -> dict:
    """NVIDIA repository folder -> {pins, reason, source} where that folder's pins differ."""
    return release()["targets"]


def pins(target: str | None = None) -> dict[str, str]:
    """The release's pins, with ``target``'s overrides when it has any."""
    return {**release()["pins"], **(targets().get(target) or {}).get("pins", {})}
