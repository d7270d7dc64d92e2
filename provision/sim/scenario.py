"""Scenario files: a simulated rack and the faults to replay on it, for a site's own CI.

Format (YAML)::

    nodes: 4                       # rack size
    profile: h100-sxm5-80g-ndr     # hardware profile of every node
    os: [ubuntu2204, rocky9]       # optional: node OS, one name or a list given in turn
    faults:                        # optional: node -> list of faults (see `provision sim faults`)
      node02:
        - {kind: ib_rate, device: mlx5_3, value: 200}
      node03:
        - {kind: xid79, device: 2}

``provision sim up --scenario FILE`` starts the rack, then injects each fault. ``load`` checks
every field's type before anything starts (unknown top-level keys too) and names file and
field in one line: ``scenario.yaml: faults.node02[0].value: must be a number or a string``.
"""
from __future__ import annotations

import math
from pathlib import Path

import yaml

from provision import profiles
from provision.errors import ExitStatus, ProfileError, ProvisionError
from provision.sim import faults, rack

KEYS = ("nodes", "profile", "os", "fabric", "faults")
FABRIC_KEYS: dict[str, type | tuple[type, ...]] = {"leaves": int, "spines": int, "oversubscription": (int, float)}
FAULT_KEYS = {"kind", "device", "value"}
DEFAULT_PROFILE = "h100-sxm5-80g-ndr"


def load(path: Path) -> dict:
    """Read and validate a scenario. Raises ProvisionError naming file and field."""
    data = _read(path)
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise ProvisionError(f"{path}: {unknown[0]}: unknown field (known: {', '.join(KEYS)})")
    nodes = _nodes(path, data)
    _check_profile(path, data)
    _check_os(path, data, nodes)
    _check_fabric(path, data)
    _check_faults(path, data, nodes)
    return data


def _check_fabric(path: Path, data: dict) -> None:
    """The optional ``fabric`` field: the fat-tree's ``leaves``, ``spines`` and ``oversubscription``."""
    shape = data.get("fabric")
    if shape is None:
        return
    if not isinstance(shape, dict):
        raise ProvisionError(f"{path}: fabric: must be a mapping of {', '.join(FABRIC_KEYS)}")
    for key, value in shape.items():
        kind = FABRIC_KEYS.get(str(key))
        if kind is None:
            raise ProvisionError(f"{path}: fabric.{key}: unknown field (known: {', '.join(FABRIC_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:  # type: ignore[operator]
            raise ProvisionError(f"{path}: fabric.{key}: must be a positive number")


def _read(path: Path) -> dict:
    """The scenario file parsed as YAML, which must be a mapping."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ProvisionError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ProvisionError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ProvisionError(f"{path}: a scenario must be a mapping with nodes, profile, faults")
    return data


def _nodes(path: Path, data: dict) -> int:
    """The rack size, which must be a positive integer."""
    nodes = data.get("nodes")
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise ProvisionError(f"{path}: field 'nodes' must be a positive integer, got {nodes!r}")
    return nodes


def _check_profile(path: Path, data: dict) -> None:
    """The optional ``profile`` field: the name of a bundled hardware profile that loads."""
    name = data.get("profile", DEFAULT_PROFILE)
    if not isinstance(name, str) or not name:
        raise ProvisionError(f"{path}: field 'profile' must be a profile name, got {name!r}")
    try:
        profiles.load(name)
    except ProfileError as exc:
        raise ProvisionError(f"{path}: field 'profile': {exc}") from None


def _check_os(path: Path, data: dict, nodes: int) -> None:
    """The optional ``os`` field: an OS name or a list of them that plans for ``nodes`` nodes."""
    if data.get("os") is None:
        return
    if not isinstance(data["os"], (str, list)) or (
            isinstance(data["os"], list) and not all(isinstance(o, str) for o in data["os"])):
        raise ProvisionError(f"{path}: field 'os' must be an OS name or a list of them")
    try:
        rack.os_plan(data["os"], nodes)
    except ProvisionError as exc:
        raise ProvisionError(f"{path}: field 'os': {exc}") from None


def _check_faults(path: Path, data: dict, nodes: int) -> None:
    """The optional ``faults`` field: each key a node of the rack, each item a known fault."""
    names = {f"node{i + 1:02d}" for i in range(nodes)}
    listed = data.get("faults") or {}
    if not isinstance(listed, dict):
        raise ProvisionError(f"{path}: field 'faults' must map node names to lists of faults")
    for node, items in listed.items():
        if node not in names:
            raise ProvisionError(f"{path}: faults.{node}: no such node in a rack of {nodes}")
        if not isinstance(items, (list, type(None))):
            raise ProvisionError(f"{path}: faults.{node}: must be a list of faults")
        for i, item in enumerate(items or []):
            _check_fault(f"{path}: faults.{node}[{i}]", item)


def _check_fault(where: str, item: object) -> None:
    """One fault item: a mapping with a known ``kind`` and optional ``device``, ``value``."""
    if not isinstance(item, dict) or "kind" not in item or set(item) - FAULT_KEYS:
        raise ProvisionError(f"{where}: must be a mapping with kind and optional device, value")
    known = [*faults.KINDS, *faults.FABRIC_KINDS]
    if not isinstance(item["kind"], str) or item["kind"] not in known:
        raise ProvisionError(f"{where}.kind: unknown fault {item['kind']!r} (known: {', '.join(known)})")
    for key in ("device", "value"):
        if not _scalar(item.get(key)):
            raise ProvisionError(f"{where}.{key}: must be a number or a string, got {item[key]!r}")


def _scalar(value: object) -> bool:
    """None, a string, or a finite number that is not a boolean (YAML's yes/no)."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def up(path: Path, inventory_dir: Path, address_base: str, os_arg: str | None = None) -> int:
    """Start the scenario's rack (its ``os``, a name or list, unless ``os_arg`` is given) and
    inject its faults. Returns an exit status."""
    data = load(path)
    inventory_dir.mkdir(parents=True, exist_ok=True)
    rack.up(inventory_dir, data["nodes"], data.get("profile", DEFAULT_PROFILE), address_base,
            os_arg=os_arg or data.get("os"), fabric=data.get("fabric"))
    for node, items in (data.get("faults") or {}).items():
        for item in items or []:
            value = None if item.get("value") is None else str(item["value"])
            device = None if item.get("device") is None else str(item["device"])
            record = faults.inject(inventory_dir, node, item["kind"], device, value)
            print(f"sim: {node}: injected {record['kind']} on {record['label']}")
    return ExitStatus.OK
