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
from provision.sim import synth
from provision.fabric.model import width_speed_for
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
    _check_fabric(path, data, nodes)
    _check_faults(path, data, nodes)
    _check_fabric_faults(path, data, nodes)
    return data


def _check_fabric(path: Path, data: dict, nodes: int) -> None:
    """The optional ``fabric`` field: the fat-tree's ``leaves``, ``spines`` (positive integers) and
    ``oversubscription`` (a positive finite number), then the shape they give ``nodes`` nodes
    (``_check_fabric_shape``)."""
    shape = data.get("fabric")
    if shape is not None and not isinstance(shape, dict):
        raise ProvisionError(f"{path}: fabric: must be a mapping of {', '.join(FABRIC_KEYS)}")
    for key, value in (shape or {}).items():
        kind = FABRIC_KEYS.get(str(key))
        if kind is None:
            raise ProvisionError(f"{path}: fabric.{key}: unknown field (known: {', '.join(FABRIC_KEYS)})")
        if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ProvisionError(f"{path}: fabric.{key}: must be a positive integer, got {value!r}")
        if kind is not int and (isinstance(value, bool) or not isinstance(value, (int, float))
                                or not math.isfinite(value) or not value > 0):
            raise ProvisionError(f"{path}: fabric.{key}: must be a positive finite number, got {value!r}")
    _check_fabric_shape(path, data, nodes, shape or {})


def _check_fabric_shape(path: Path, data: dict, nodes: int, shape: dict) -> None:
    """The fat-tree ``rack.fabric_world`` builds (``synth.fat_tree``'s layout) must fit its switches:
    no leaf without a node, hosts and uplinks within a leaf's radix, cables within a spine's, no spine
    without a cable. Checked here so a scenario fails before its rack starts, naming file and field."""
    profile = profiles.load(data.get("profile", DEFAULT_PROFILE))
    hca = profile.hca
    if not hca.count or hca.link_layer != "InfiniBand":
        if shape:
            raise ProvisionError(f"{path}: fabric: profile {profile.name} has no InfiniBand HCAs to cable")
        return
    try:
        speed = width_speed_for(float(hca.rate_Gbps or 400))[2:]
    except (TypeError, ValueError):
        speed = "NDR"  # what rack.fabric_world falls back to
    _check_switch_ports(path, nodes, shape, speed, synth.RADIX.get(speed, 64))


def _check_switch_ports(path: Path, nodes: int, shape: dict, speed: str, radix: int) -> None:
    """``_check_fabric_shape`` for switches of ``radix`` ports."""
    if "leaves" in shape and shape["leaves"] > nodes:
        raise ProvisionError(f"{path}: fabric.leaves: {shape['leaves']} leaves for {nodes} nodes "
                             "(a leaf needs a node)")
    leaves, per_leaf, ups = synth.leaf_shape(nodes, radix, shape.get("oversubscription", 1.0), shape.get("leaves"))
    if leaves == 1:
        for key in ("spines", "oversubscription"):
            if key in shape:
                raise ProvisionError(f"{path}: fabric.{key}: a fabric of one leaf has no spines and no uplinks")
        if per_leaf > radix:
            raise ProvisionError(f"{path}: fabric: {per_leaf} nodes on one leaf exceed a {radix}-port {speed} switch")
        return
    if per_leaf + ups > radix:
        said = ups if ups <= radix else f"over {radix}"
        raise ProvisionError(f"{path}: fabric: {per_leaf} nodes and {said} uplinks per leaf exceed a {radix}-port "
                             f"{speed} switch (more leaves, or a higher oversubscription)")
    if "spines" in shape and shape["spines"] > ups:
        raise ProvisionError(f"{path}: fabric.spines: {shape['spines']} spines but each leaf has {ups} uplinks "
                             "(a spine would have no cable)")
    spines = shape["spines"] if "spines" in shape else synth.even_spines(leaves, ups, radix)
    if spines is None:
        raise ProvisionError(f"{path}: fabric: {nodes} nodes need more than two levels of {radix}-port {speed} "
                             f"switches (they reach {radix * radix // 2} hosts at 1:1)")
    per_spine = leaves * math.ceil(ups / spines)
    if per_spine > radix:
        raise ProvisionError(f"{path}: fabric.spines: {per_spine} leaf cables on a spine exceed a {radix}-port "
                             f"{speed} switch (more spines, or a higher oversubscription)")


def _check_fabric_faults(path: Path, data: dict, nodes: int) -> None:
    """Each fabric fault's ``device`` names a cable of the rack's fabric and its ``value`` is one the
    cable can take (``faults._cable``, ``faults._edit_cable`` on a copy of the fabric)."""
    listed = [(node, i, item) for node, items in (data.get("faults") or {}).items()
              for i, item in enumerate(items or []) if item["kind"] in faults.FABRIC_KINDS]
    if not listed:
        return
    names = [f"node{i + 1:02d}" for i in range(nodes)]
    world = rack.fabric_world(profiles.load(data.get("profile", DEFAULT_PROFILE)).data, names,
                              data.get("fabric") or {})
    for node, i, item in listed:
        where = f"{path}: faults.{node}[{i}]"
        if world is None:
            raise ProvisionError(f"{where}.kind: {item['kind']}: the profile has no InfiniBand fabric")
        device, value = item.get("device"), item.get("value")
        if device is None or str(device) == "":
            raise ProvisionError(f"{where}.device: {item['kind']} needs a device (mlx5_R or mlx5_R:upJ)")
        try:
            _, cable = faults._cable(world, node, str(device))
        except ProvisionError as exc:
            raise ProvisionError(f"{where}.device: {exc}") from None
        try:
            faults._edit_cable(dict(cable), faults.FABRIC_KINDS[item["kind"]][1],
                               None if value is None else str(value))
        except ProvisionError as exc:
            raise ProvisionError(f"{where}.value: {exc}") from None


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
    known = [*faults.KINDS, *faults.FABRIC_KINDS, *faults.bf.BMC_KINDS]
    if not isinstance(item["kind"], str) or item["kind"] not in known:
        raise ProvisionError(f"{where}.kind: unknown fault {item['kind']!r} (known: {', '.join(known)})")
    for key in ("device", "value"):
        if not _scalar(item.get(key)):
            raise ProvisionError(f"{where}.{key}: must be a number or a string, got {item[key]!r}")
    if item["kind"] == "slow_node" and item.get("value") is not None:
        factor = _number(item["value"])
        if factor is None or not 0 < factor <= 1:
            raise ProvisionError(f"{where}.value: a slow node's factor must be a number in (0, 1], "
                                 f"got {item['value']!r}")


def _number(value: object) -> float | None:
    """``value`` (a number or a numeric string) as a finite float, else None."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


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
    inject_faults(data, inventory_dir)
    return ExitStatus.OK


def inject_faults(data: dict, inventory_dir: Path, log=print) -> None:
    """Inject the faults of scenario ``data`` (``load``'s) into the running rack in ``inventory_dir``:
    what ``up`` does once the rack is up, and what a test replays on a rack it shares."""
    for node, items in (data.get("faults") or {}).items():
        for item in items or []:
            value = None if item.get("value") is None else str(item["value"])
            device = None if item.get("device") is None else str(item["device"])
            record = faults.inject(inventory_dir, node, item["kind"], device, value)
            log(f"sim: {node}: injected {record['kind']} on {record['label']}")
