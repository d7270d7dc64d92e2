"""Hardware profiles: one YAML per SKU under ``provision/profiles/data/``.

A profile names the GPU model and count, NVLink, PCIe, HCAs, the driver pin and the
``references`` the burn-in judges against (ReFrame semantics: ``value`` with ``lower``
and ``upper`` bounds as signed fractions of it, ``null`` for unbounded). Every reference
carries its ``unit``, the test ``params`` it holds for and its ``source``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from provision.errors import ProfileError

DATA_DIR = Path(__file__).with_name("data")
REQUIRED = ("name", "gpu", "driver", "references")
REFERENCE_KEYS = ("value", "lower", "upper", "unit", "source")


@dataclass(frozen=True)
class Reference:
    """One threshold: ``value`` in ``unit``; bounds are fractions (-0.05 = 5% below value)."""

    value: float
    lower: float | None
    upper: float | None
    unit: str
    source: str
    params: dict

    def bounds(self) -> tuple[float | None, float | None]:
        """Absolute (low, high) limits in ``unit``; None where unbounded."""
        low = None if self.lower is None else self.value * (1 + self.lower)
        high = None if self.upper is None else self.value * (1 + self.upper)
        return low, high


@dataclass(frozen=True)
class Profile:
    """A loaded hardware profile; ``data`` is the YAML mapping, ``path`` where it came from."""

    name: str
    data: dict
    path: str

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def reference(self, check: str, metric: str) -> Reference | None:
        """The reference for ``check``/``metric``, or None when the profile has none."""
        row = self.data.get("references", {}).get(check, {}).get(metric)
        if row is None:
            return None
        return Reference(
            value=float(row["value"]), lower=row.get("lower"), upper=row.get("upper"),
            unit=row["unit"], source=row["source"], params=row.get("params") or {},
        )

    def with_overrides(self, overrides: dict | None, origin: str) -> "Profile":
        """A copy with a site's reference overrides ({check: {metric: {key: value}}}) merged in."""
        if not overrides:
            return self
        where = f"{origin}: provision_reference_overrides"
        if not isinstance(overrides, dict) or not all(isinstance(m, dict) for m in overrides.values()):
            raise ProfileError(f"{where}: must map check -> metric -> fields, e.g. "
                               "{ib_write_bw: {bw_avg_Gbps: {value: 360}}}")
        data = copy.deepcopy(self.data)
        for check, metrics in overrides.items():
            for metric, fields in (metrics or {}).items():
                row = data.setdefault("references", {}).setdefault(check, {}).get(metric)
                if row is None or not isinstance(fields, dict):
                    raise ProfileError(f"{origin}: provision_reference_overrides.{check}.{metric}: "
                                       f"no such reference in profile {self.name}")
                row.update(fields)
        _validate(data, origin)
        return Profile(self.name, data, self.path)

    def for_target(self, target: str | None) -> "Profile":
        """A copy whose stack pins are those of ``target`` (``stack_targets``); ``stack_target`` set."""
        if target is None:
            return self
        data = copy.deepcopy(self.data)
        data.setdefault("stack", {}).update((stack_targets().get(target) or {}).get("stack") or {})
        data["stack_target"] = target
        return Profile(self.name, data, self.path)


STACK_TARGETS = Path(__file__).with_name("stack_targets.yaml")


def stack_targets() -> dict:
    """Per NVIDIA repository folder, the stack pins that differ from a profile's (``stack_targets.yaml``)."""
    return yaml.safe_load(STACK_TARGETS.read_text()) or {}


def target_of(os_release: dict) -> str | None:
    """NVIDIA's repository folder for a node from its /etc/os-release fields: ``ubuntu2404``,
    ``debian12``, ``rhel9`` (Rocky, Alma, RHEL: ID_LIKE has rhel); None for other systems."""
    ident, version = os_release.get("ID", ""), os_release.get("VERSION_ID", "")
    if ident == "ubuntu":
        return "ubuntu" + version.replace(".", "")
    if ident == "debian":
        return "debian" + version.split(".")[0]
    if ident == "rhel" or "rhel" in os_release.get("ID_LIKE", "").split():
        return "rhel" + version.split(".")[0]
    return None


def names() -> list[str]:
    """Names of the bundled profiles."""
    return sorted(p.stem for p in DATA_DIR.glob("*.yaml"))


def load(name: str) -> Profile:
    """Load a bundled profile by name, or a YAML file by path. Raises ProfileError."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else DATA_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ProfileError(f"{path}: no such hardware profile (known: {', '.join(names())})")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    _validate(data, str(path))
    return Profile(data["name"], data, str(path))


def _validate(data: Any, origin: str) -> None:
    if not isinstance(data, dict):
        raise ProfileError(f"{origin}: a profile must be a mapping")
    for key in REQUIRED:
        if key not in data:
            raise ProfileError(f"{origin}: missing field '{key}'")
    for check, metrics in data["references"].items():
        for metric, row in (metrics or {}).items():
            where = f"{origin}: references.{check}.{metric}"
            if not isinstance(row, dict):
                raise ProfileError(f"{where}: must be a mapping")
            missing = [k for k in REFERENCE_KEYS if k not in row]
            if missing:
                raise ProfileError(f"{where}: missing {', '.join(missing)}")
            if not isinstance(row["value"], (int, float)):
                raise ProfileError(f"{where}.value: not a number: {row['value']!r}")
            for bound in ("lower", "upper"):
                if row[bound] is not None and not isinstance(row[bound], (int, float)):
                    raise ProfileError(f"{where}.{bound}: not a fraction: {row[bound]!r}")
