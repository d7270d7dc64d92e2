"""Hardware profiles: one YAML per SKU under ``provision/profiles/data/``, and what a host adds.

A profile holds hardware facts only: the GPU model and count, NVLink, PCIe, HCAs, topology,
and the ``references`` the burn-in judges against (ReFrame semantics: ``value`` with
``lower`` and ``upper`` bounds as signed fractions of it, ``null`` for unbounded; each with
its ``unit``, the test ``params`` it holds for, and its ``source``). Its schema,
``profile.schema.json``, refuses unknown keys, so a misspelt key is an error, never a rule
silently turned off.

The rest of what a check needs lives with its own concern:
- software pins: ``stack_release.yaml`` (``Profile.stack``; the roles read the same file);
- site facts: the inventory's ``provision_storage`` (``Profile.site``, ``site.schema.json``);
- the simulator's healthy figures: ``provision/sim/figures.yaml``.
``for_host`` puts a host's profile together: the profile, the site's reference overrides
(``provision_reference_overrides``) and its site facts.

Work once per distinct thing: ``load`` parses and validates a profile once per file (and again only
when its text changes), ``for_host`` builds a host's view once per distinct (profile, overrides,
site facts), so 1,250 hosts of one profile cost one load, not 1,250. A profile's ``data`` and
``site`` are read-only (``frozen``: a change raises TypeError) since every host of that name
shares them; ``with_overrides`` works on a deep copy, so one host's overrides never reach another.
"""
from __future__ import annotations

import copy
import difflib
import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from provision.errors import ProfileError
from provision.profiles import release, schema
from provision.profiles.frozen import freeze
from provision.results.model import Reference

DATA_DIR = Path(__file__).with_name("data")
BONDING_DIR = "/proc/net/bonding"  # the bonding driver's status files (kernel bonding.rst)
# Hardware feature -> the key path whose value must be truthy (``Profile.has``).
FEATURES = {"gpu": ("gpu", "count"), "hca": ("hca", "count"), "nvlink": ("gpu", "nvlink", "links")}
SITE_FACTS = ("provision_storage", "provision_regression", "provision_plan")  # site.schema.json


@dataclass(frozen=True)
class Profile:
    """A hardware profile as a host sees it: ``data`` the validated YAML mapping, ``path`` where
    it came from, ``target`` the node's NVIDIA repository folder (``for_target``; None before
    the node's OS is known) and ``site`` the host's site facts ({"storage": {...}})."""

    name: str
    data: dict
    path: str
    target: str | None = None
    site: dict = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    @property
    def stack(self) -> dict[str, str]:
        """The software pins for this node: the stack release's, with its target's overrides.
        Keys driver_branch, driver_version, cuda_version, cudnn_version, nccl_version,
        nccl_cuda_version."""
        return release.pins(self.target)

    def has(self, feature: str) -> bool:
        """Whether the host has ``feature``: gpu, hca, nvlink (hardware) or storage (site facts)."""
        if feature == "storage":
            return bool(self.site.get("storage"))
        if feature not in FEATURES:
            raise ValueError(f"unknown feature {feature!r} (known: {', '.join([*FEATURES, 'storage'])})")
        value: Any = self.data
        for key in FEATURES[feature]:
            value = value.get(key) if isinstance(value, dict) else None
        return bool(value)

    def reference(self, check: str, metric: str) -> Reference | None:
        """The reference for ``check``/``metric``, or None when the profile has none."""
        row = self.data.get("references", {}).get(check, {}).get(metric)
        if row is None:
            return None
        return Reference(value=float(row["value"]), lower=row["lower"], upper=row["upper"], unit=row["unit"],
                         source=row["source"], params=dict(row.get("params") or {}))

    def required_reference(self, check: str, metric: str) -> Reference:
        """The reference a check cannot run or judge without. Raises ProfileError naming it."""
        ref = self.reference(check, metric)
        if ref is None:
            raise ProfileError(f"profile {self.name} ({self.path}): references.{check}.{metric}: missing; "
                               f"the {check} check takes its thresholds and test sizes from it")
        return ref

    def with_overrides(self, overrides: dict | None, origin: str) -> "Profile":
        """A copy with a site's reference overrides ({check: {metric: {key: value}}}) merged in."""
        if not overrides:
            return self
        where = f"{origin}: provision_reference_overrides"
        if not isinstance(overrides, dict) or not all(isinstance(m, dict) for m in overrides.values()):
            raise ProfileError(f"{where}: must map check -> metric -> fields, e.g. "
                               "{ib_write_bw: {bw_avg_Gbps: {value: 360}}}")
        data = copy.deepcopy(self.data)
        references = data.setdefault("references", {})
        for check, metrics in overrides.items():
            for metric, fields in (metrics or {}).items():
                row = references.get(check, {}).get(metric)
                if row is None or not isinstance(fields, dict):
                    near = _near(metric, references[check]) if check in references else _near(check, references)
                    raise ProfileError(f"{where}.{check}.{metric}: no such reference in profile {self.name}{near}")
                row.update(fields)
        try:
            schema.validate(data, "profile", origin)
        except ProfileError as exc:  # name the override as well as the key it made wrong
            raise ProfileError(str(exc).replace(f"{origin}: ", f"{where}: ", 1)) from None
        return dataclasses.replace(self, data=freeze(data))

    def with_site(self, host_vars: dict, origin: str) -> "Profile":
        """A copy with the site facts of a host's variables (``provision_storage``), validated
        against ``site.schema.json``; ``bonding_dir`` defaults to /proc/net/bonding."""
        facts = {k: host_vars[k] for k in SITE_FACTS if host_vars.get(k) is not None}
        schema.validate(facts, "site", origin)
        site = {}
        if "provision_storage" in facts:
            site["storage"] = {"bonding_dir": BONDING_DIR, **facts["provision_storage"]}
        return self if site == self.site else dataclasses.replace(self, site=freeze(site))

    def for_target(self, target: str | None) -> "Profile":
        """A copy for a node of NVIDIA repository folder ``target`` (its pins: ``stack``)."""
        return self if target is None else dataclasses.replace(self, target=target)


def _near(name: str, known) -> str:
    """' (did you mean X?)' for a misspelt check or metric of an override, when difflib finds one."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def for_host(profile_name: str, host_vars: dict, host_name: str) -> Profile:
    """Host ``host_name``'s profile: ``profile_name`` loaded, its site's reference overrides
    (``provision_reference_overrides``) and site facts (``provision_storage``) from
    ``host_vars`` applied. Raises ProfileError naming ``host <name>`` and the key.

    Built once per distinct (profile as loaded, overrides, site facts) and shared, read-only, by
    every host that has the same; a host whose values are not JSON data gets a view of its own."""
    origin = f"host {host_name}"
    base = load(profile_name)
    overrides = host_vars.get("provision_reference_overrides")
    facts = {k: host_vars[k] for k in SITE_FACTS if host_vars.get(k) is not None}
    try:
        key = (id(base), json.dumps([overrides, facts], sort_keys=True))
    except (TypeError, ValueError):  # not JSON data: built for this host alone
        return base.with_overrides(overrides, origin).with_site(facts, origin)
    found = _VIEWS.get(key)
    if found is not None and found[0] is base:
        return found[1]
    view = base.with_overrides(overrides, origin).with_site(facts, origin)  # raises naming this host; not kept
    if len(_VIEWS) >= MAX_VIEWS:
        _VIEWS.clear()
    _VIEWS[key] = (base, view)  # the base is kept with its view, so that its id names it
    return view


MAX_VIEWS = 4096  # distinct host views kept; beyond it the memo starts again (a bound, not a tuned figure)
_VIEWS: dict[tuple, tuple[Profile, Profile]] = {}


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
    """Load a bundled profile by name, or a YAML file by path. Raises ProfileError.

    Parsed and validated once per file and content: a later call finds the same text and returns
    the same read-only Profile (a changed file is read again)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else DATA_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ProfileError(f"{path}: no such hardware profile (known: {', '.join(names())})")
    return _parsed(path, path.read_text())


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, text: str) -> Profile:
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    schema.validate(data, "profile", str(path))
    return Profile(data["name"], freeze(data), str(path))


# libyaml's safe loader when PyYAML was built with it (the same YAML, several times faster), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
