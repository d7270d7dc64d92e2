"""Hardware profiles: one YAML per SKU under ``provision/profiles/data/``, and what a host adds.

A profile holds hardware facts only: the GPU model and count, NVLink, PCIe, HCAs, topology,
and the ``references`` the burn-in judges against (ReFrame semantics: ``value`` with
``lower`` and ``upper`` bounds as signed fractions of it, ``null`` for unbounded; each with
its ``unit``, the test ``params`` it holds for, and its ``source``). Its schema,
``profile.schema.json``, refuses unknown keys, so a misspelt key is an error, never a rule
silently turned off. Readers use the typed parts (``provision.profiles.hardware``), built once from
the validated mapping: ``profile.gpu.count``, ``profile.hca.rate_Gbps``, ``profile.reference(check, metric)``.
Adding a profile is one data file (and the simulator's figures where it simulates the SKU).

References are declared once and merged in layers, lowest first (``provision.profiles.layers``): a check's default
rows (``Check.references``, for the profiles the check applies to; handed down by the checks, which sit above this
package: ``layers.provide``), ``site_references.yaml``, the profile's own rows (only what its
hardware changes), and a host's ``provision_reference_overrides`` (the inventory: changes fields of a row, or adds a
complete one). Below the inventory a row replaces a lower layer's row of the same check and metric whole; each
row's layer is kept (``Profile.reference_layer``; ``provision checks --references HOST`` prints them).

The rest of what a check needs lives with its own concern:
- software pins: ``stack_release.yaml`` (``Profile.stack``; the roles read the same file);
- site facts: the inventory's ``provision_storage`` (``Profile.site``, ``site.schema.json``), and the
  references that are the site's rather than the hardware's (the checkpoint store's write bandwidth):
  ``site_references.yaml``, merged into every profile as it loads (a site overrides them as any other);
- check sets: tags on each check (``Check.sets``); a profile only excludes checks (``exclude_checks``);
- the simulator's healthy figures: ``provision/sim/figures.yaml``.
``for_host`` puts a host's profile together: the profile, its site facts, the default rows of the checks that apply
to it (``defaults``), and the site's reference overrides (``provision_reference_overrides``).

Work once per distinct thing: ``load`` parses and validates a profile once per file (and again only
when its text changes), ``for_host`` builds a host's view once per distinct (profile, overrides,
site facts, check defaults), so 1,250 hosts of one profile cost one load, not 1,250. A profile's ``data`` and
``site`` are read-only (``frozen``: a change raises TypeError) since every host of that name
shares them; ``with_overrides`` works on a deep copy, so one host's overrides never reach another.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping, Sequence

import yaml

from provision.errors import ProfileError
from provision.profiles import hardware, layers, release, schema
from provision.profiles.frozen import freeze
from provision.profiles.hardware import GPU, HCA, Hardware, Host, NVLinkDomain, Power, Topology
from provision.profiles.layers import DefaultRows
from provision.results.model import Reference

DATA_DIR = Path(__file__).with_name("data")
SITE_REFERENCES = Path(__file__).with_name("site_references.yaml")
BONDING_DIR = "/proc/net/bonding"  # the bonding driver's status files (kernel bonding.rst)
# The platform traits a check or one of its rules may need (``Check.needs``, ``Check.rules``), each derived from the
# profile and answered by ``Profile.has``; the text says what a profile without it lacks (a skip's reason).
PLATFORMS = {
    "gpu": "GPUs (gpu.count 0)",
    "hca": "RDMA adapters (hca.count 0)",
    "nvlink": "NVLink between its GPUs (no gpu.nvlink, or links: 0: a PCIe board)",
    "ecc": "GPU memory that counts its errors (gpu.memory_error_mechanism: none)",
    "nvswitch": "an NVSwitch board (gpu.nvswitch false: its GPUs do not meet through NVSwitches on the board, "
                "so no host Fabric Manager)",
    "nvlink_domain": "a multi-node NVLink domain (no nvlink_domain: NVLink, if any, stays inside the node; no IMEX)",
    "imex": "an NVLink domain whose trays run the IMEX daemon (no nvlink_domain, or nvlink_domain.imex false)",
    "pcie_gpu": "GPUs on a PCIe host link (gpu.host_link c2c: the GPUs reach the host over NVLink-C2C)",
    "c2c_gpu": "GPUs on NVLink-C2C to the host CPU (gpu.host_link pcie)",
    "grace_host": "a Grace host CPU (host.cpu is not Grace)",
    "storage": "a storage network (no provision_storage in the site facts)",
    "mndiag": "GPUs DCGM's multi-node diagnostic supports, GB200 NVL or GB300 NVL in an NVLink domain (gpu.model is "
              "neither, or no nvlink_domain)",
}
# The GPU products ``dcgmi mndiag`` runs on: NVIDIA/DCGM modules/mndiag/DcgmMnDiagManager.cpp (DCGM 4.6, 72fa3fe)
# supports PCI devices 2941 (GB200 NVL) and 31c2 (GB300 NVL) only, and refuses a head node with any other GPU.
MNDIAG_MODELS = ("GB200", "GB300")
FEATURES = tuple(PLATFORMS)  # every trait ``Profile.has`` answers
SITE_FACTS = ("provision_storage", "provision_regression", "provision_plan", "provision_firmware")  # site.schema.json


@dataclass(frozen=True)
class Profile:
    """A hardware profile as a host sees it: its typed hardware (``gpu``, ``hca``, ``topology``, ``power``,
    ``references``, ``exclude_checks``), ``data`` the validated YAML mapping they are built from (what
    overrides merge into and the simulator builds a node from), ``path`` where it came from, ``target``
    the node's NVIDIA repository folder (``for_target``; None before the node's OS is known), ``site``
    the host's site facts ({"storage": {...}}) and ``reference_layers`` check -> metric -> the layer its row
    comes from (``provision.profiles.layers``; read it with ``reference_layer``)."""

    name: str
    data: dict
    path: str
    target: str | None = None
    site: dict = field(default_factory=dict)
    reference_layers: Mapping[str, Mapping[str, str]] = field(default_factory=dict, repr=False, compare=False)
    hardware: Hardware = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hardware", _hardware(self.data))

    @property
    def description(self) -> str:
        return self.hardware.description

    @property
    def gpu(self) -> GPU:
        return self.hardware.gpu

    @property
    def hca(self) -> HCA:
        return self.hardware.hca

    @property
    def topology(self) -> Topology:
        return self.hardware.topology

    @property
    def power(self) -> Power | None:
        return self.hardware.power

    @property
    def references(self) -> Mapping[str, Mapping[str, Reference]]:
        """check -> metric -> Reference (read-only, shared)."""
        return self.hardware.references

    @property
    def exclude_checks(self) -> tuple[str, ...]:
        return self.hardware.exclude_checks

    @property
    def nvlink_domain(self) -> NVLinkDomain | None:
        """The multi-node NVLink domain the node's GPUs belong to (GB200 NVL72), or None."""
        return self.hardware.nvlink_domain

    @property
    def host(self) -> Host | None:
        """The host CPU where the profile names it (a GB200 tray's Grace), else None."""
        return self.hardware.host

    @property
    def stack(self) -> dict[str, str]:
        """The software pins for this node: its hardware's stack release line (``stack_line``; the default
        line where it names none), with its target's overrides. Keys driver_branch, driver_version,
        cuda_version, cudnn_version, nccl_version, nccl_cuda_version."""
        return release.pins(self.target, self.hardware.stack_line)

    def has(self, feature: str) -> bool:
        """Whether the host has platform trait ``feature`` (``PLATFORMS``): gpu, hca, nvlink, ecc (GPU memory that
        counts its errors: ``gpu.memory_error_mechanism`` other than none), nvswitch (``gpu.nvswitch``: an HGX
        board, Fabric Manager on the host), nvlink_domain (``nvlink_domain``: GB200/GB300 NVL72), imex (a domain whose
        trays run the IMEX daemon: ``nvlink_domain.imex``), pcie_gpu
        and c2c_gpu (``gpu.host_link``: pcie, or NVLink-C2C to a Grace CPU), grace_host (``host.cpu`` Grace),
        storage (site facts) or mndiag (a GB200/GB300 NVL tray: ``MNDIAG_MODELS`` in an NVLink domain)."""
        gpus = self.gpu.count > 0
        traits = {
            "storage": lambda: bool(self.site.get("storage")),
            "gpu": lambda: gpus,
            "hca": lambda: self.hca.count > 0,
            "nvlink": lambda: self.gpu.nvlink is not None and self.gpu.nvlink.links > 0,
            "ecc": lambda: gpus and self.gpu.memory_error_mechanism != "none",
            "nvswitch": lambda: gpus and self.gpu.nvswitch,
            "nvlink_domain": lambda: self.nvlink_domain is not None,
            "imex": lambda: self.nvlink_domain is not None and self.nvlink_domain.imex,
            "pcie_gpu": lambda: gpus and self.gpu.host_link == "pcie",
            "c2c_gpu": lambda: gpus and self.gpu.host_link == "c2c",
            "grace_host": lambda: self.hardware.host is not None and self.hardware.host.cpu == "Grace",
            "mndiag": lambda: gpus and self.nvlink_domain is not None
            and any(m in self.gpu.model for m in MNDIAG_MODELS),
        }
        if feature not in traits:
            raise ValueError(f"unknown feature {feature!r} (known: {', '.join(FEATURES)})")
        return bool(traits[feature]())

    def traits(self) -> tuple[str, ...]:
        """The platform traits this host has, in ``PLATFORMS`` order."""
        return tuple(f for f in FEATURES if self.has(f))

    def lacking(self, needs: tuple[str, ...]) -> str:
        """Why a check or rule needing ``needs`` does not apply here ('' when it does): each trait missing with
        what the profile says instead, e.g. "needs nvswitch: an NVSwitch board (gpu.nvswitch false: ...)"."""
        missing = [need for need in needs if not self.has(need)]
        return "; ".join(f"needs {need}: {PLATFORMS[need]}" for need in missing)

    def reference(self, check: str, metric: str) -> Reference | None:
        """The reference for ``check``/``metric`` (shared, read-only), or None when the profile has none."""
        return self.references.get(check, {}).get(metric)

    def reference_layer(self, check: str, metric: str) -> str | None:
        """The layer ``check``/``metric``'s row comes from (``provision.profiles.layers``): ``check <id> default``,
        ``site_references.yaml``, ``profile <name> (<path>)``, or ``inventory: provision_reference_overrides`` (a
        host's view, shared by the hosts with the same values) with ``(added)`` or ``(overridden: <fields>; over
        <the layer below>)``; None when the profile has no such row."""
        if self.reference(check, metric) is None:
            return None
        return self.reference_layers.get(check, {}).get(metric) or layers.profile_layer(self.name, self.path)

    def required_reference(self, check: str, metric: str) -> Reference:
        """The reference a check cannot run or judge without. Raises ProfileError naming it."""
        ref = self.reference(check, metric)
        if ref is None:
            raise ProfileError(f"profile {self.name} ({self.path}): references.{check}.{metric}: missing; "
                               f"the {check} check takes its thresholds and test sizes from it")
        return ref

    def with_defaults(self, defaults: Sequence[DefaultRows]) -> "Profile":
        """A copy with the default rows of the checks that apply to it (``DefaultRows.needs``, as ``Check.applies``
        says) under its own and its site's rows: a check's row only where no higher layer has that check and
        metric. The rows are reference rows already (``layers.provided`` checks the registered checks')."""
        applying = [one for one in defaults if one.rows and not self.lacking(one.needs)]
        if all(self.reference(one.check, metric) is not None for one in applying for metric in one.rows):
            return self
        own = self.data.get("references") or {}
        references, names = layers.stack([(lambda check, metric: self.reference_layer(check, metric) or "", own),
                                          *((lambda check, _metric: layers.default_layer(check), {one.check: one.rows})
                                            for one in applying)])
        data = {**copy.deepcopy(self.data), "references": references}
        return dataclasses.replace(self, data=freeze(data), reference_layers=freeze(names))

    def with_overrides(self, overrides: dict | None, origin: str, layer: str | None = None) -> "Profile":
        """A copy with a site's reference overrides ({check: {metric: {key: value}}}) merged in: the inventory's layer
        (``provision.profiles.layers``), named ``layer`` (None: ``inventory: <origin> provision_reference_overrides``)
        with ``(added)`` or ``(overridden: ...)``. An override that sets a value and says nothing of ``estimate`` is
        the site's own figure: the row is no longer an estimate. An override of a check and metric that no lower
        layer has adds a row when it is complete (``layers.NEW_ROW``; ``params`` {} when left out), else is refused
        naming what it lacks, or the reference it may have meant."""
        if not overrides:
            return self
        where = f"{origin}: provision_reference_overrides"
        if not isinstance(overrides, dict) or not all(isinstance(m, dict) for m in overrides.values()):
            raise ProfileError(f"{where}: must map check -> metric -> fields, e.g. "
                               "{ib_write_bw: {bw_avg_Gbps: {value: 360}}}")
        data = copy.deepcopy(self.data)
        names = {check: {metric: self.reference_layer(check, metric) or "" for metric in rows}
                 for check, rows in self.references.items()}
        layers.overlay(data.setdefault("references", {}), names, overrides, where,
                       layers.inventory_layer(origin) if layer is None else layer, self.name)
        try:
            schema.validate(data, "profile", origin)
        except ProfileError as exc:  # name the override as well as the key it made wrong
            raise ProfileError(str(exc).replace(f"{origin}: ", f"{where}: ", 1)) from None
        return dataclasses.replace(self, data=freeze(data), reference_layers=freeze(names))

    def with_site(self, host_vars: dict, origin: str) -> "Profile":
        """A copy with the site facts of a host's variables (``provision_storage``), validated
        against ``site.schema.json``; ``bonding_dir`` defaults to /proc/net/bonding."""
        facts = {k: host_vars[k] for k in SITE_FACTS if host_vars.get(k) is not None}
        _versions_are_text(facts.get("provision_firmware"), origin)
        schema.validate(facts, "site", origin)
        site = {}
        if "provision_storage" in facts:
            site["storage"] = {"bonding_dir": BONDING_DIR, **facts["provision_storage"]}
        if "provision_firmware" in facts:  # the firmware manifest (provision.checks.versions)
            site["firmware"] = dict(facts["provision_firmware"])
        return self if site == self.site else dataclasses.replace(self, site=freeze(site))

    def for_target(self, target: str | None) -> "Profile":
        """A copy for a node of NVIDIA repository folder ``target`` (its pins: ``stack``)."""
        return self if target is None else dataclasses.replace(self, target=target)


def _versions_are_text(manifest: object, origin: str) -> None:
    """A version YAML read as a number (``bmc: 3.10`` is the float 3.1) is refused naming the field and the quoting
    that keeps it, before the schema's generic message. Raises ProfileError."""
    if not isinstance(manifest, dict):
        return
    for field_name, value in manifest.items():
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, (int, float)) and not isinstance(one, bool):
                raise ProfileError(f"{origin}: provision_firmware.{field_name}: {one!r} is a number to YAML: quote "
                                   f"the version as it is printed (e.g. \"3.10\"), or 3.10 reads as 3.1")


def _hardware(data: dict) -> Hardware:
    """The typed hardware of ``data``, built once per mapping: every view that shares a profile's data
    (another target, other site facts) shares its hardware."""
    found = _BUILT.get(id(data))
    if found is not None and found[0] is data:
        return found[1]
    built = hardware.build(data)
    if len(_BUILT) >= MAX_VIEWS:
        _BUILT.clear()
    _BUILT[id(data)] = (data, built)  # the mapping is kept with its hardware, so that its id names it
    return built


def for_host(profile_name: str, host_vars: dict, host_name: str,
             defaults: Sequence[DefaultRows] | None = None) -> Profile:
    """Host ``host_name``'s profile: ``profile_name`` loaded, its site facts (``provision_storage``), the
    ``defaults`` rows of the checks that apply to it (the lowest layer; None: every registered check's,
    ``layers.provided``) and its site's reference overrides (``provision_reference_overrides``, the inventory's
    layer) from ``host_vars`` applied. Raises ProfileError naming ``host <name>`` and the key.

    Built once per distinct (profile as loaded, overrides, site facts, defaults) and shared, read-only, by
    every host that has the same; a host whose values are not JSON data gets a view of its own."""
    origin = f"host {host_name}"
    defaults = layers.provided() if defaults is None else defaults
    base = load(profile_name, defaults)  # the rows of the checks that need a site fact join once it is known
    overrides = host_vars.get("provision_reference_overrides")
    facts = {k: host_vars[k] for k in SITE_FACTS if host_vars.get(k) is not None}
    return _once(base, [overrides, facts, _rows(defaults)],  # raises naming this host; not kept
                 lambda: base.with_site(facts, origin).with_defaults(defaults).with_overrides(overrides, origin,
                                                                                              layers.INVENTORY))


def _rows(defaults: Sequence[DefaultRows]) -> list:
    return [[one.check, list(one.needs), one.rows] for one in defaults]


def _once(base: Profile, inputs: list, build) -> Profile:
    """``build()``, the view of ``base`` with ``inputs``, once per distinct (base, inputs as JSON); built every time
    for inputs that are not JSON data."""
    try:
        key = (id(base), json.dumps(inputs, sort_keys=True))
    except (TypeError, ValueError):  # not JSON data: built for this host alone
        return build()
    found = _VIEWS.get(key)
    if found is not None and found[0] is base:
        return found[1]
    view = build()
    if len(_VIEWS) >= MAX_VIEWS:
        _VIEWS.clear()
    _VIEWS[key] = (base, view)  # the base is kept with its view, so that its id names it
    return view


MAX_VIEWS = 4096  # distinct host views kept; beyond it the memo starts again (a bound, not a tuned figure)
_VIEWS: dict[tuple, tuple[Profile, Profile]] = {}
_BUILT: dict[int, tuple[dict, Hardware]] = {}


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


def markdown_list() -> str:
    """README's list of the bundled profiles: name and description, one line each."""
    return "".join(f"- `{name}`: {load(name).description}\n" for name in names())


def load(name: str, defaults: Sequence[DefaultRows] | None = None) -> Profile:
    """Load a bundled profile by name, or a YAML file by path, with the ``defaults`` rows of the checks that apply
    to it under its own (None: every registered check's, ``layers.provided``; () none). Raises ProfileError.

    Parsed and validated once per file and content, and built with the checks' rows once per distinct rows: a
    later call finds the same text and returns the same read-only Profile (a changed file is read again)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else DATA_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ProfileError(f"{path}: no such hardware profile (known: {', '.join(names())})")
    base = _parsed(path, path.read_text())
    defaults = layers.provided() if defaults is None else defaults
    return _once(base, ["load", _rows(defaults)], lambda: base.with_defaults(defaults)) if defaults else base


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, text: str) -> Profile:
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    names: dict = {}
    if isinstance(data, dict) and layers.is_table(data.get("references")):  # the profile's own rows over the site's
        own = layers.profile_layer(str(data.get("name")), str(path))
        data["references"], names = layers.stack([(lambda _check, _metric: own, data["references"]),
                                                  (lambda _check, _metric: layers.SITE, site_references())])
    schema.validate(data, "profile", str(path))
    if data.get("stack_line") is not None and data["stack_line"] not in release.lines():
        raise ProfileError(f"{path}: stack_line: no release line {data['stack_line']!r} in {release.RELEASE}"
                           f" (lines: {', '.join(release.lines()) or 'none'})")
    return Profile(data["name"], freeze(data), str(path), reference_layers=freeze(names))


@functools.cache
def site_references() -> dict:
    """The references of ``site_references.yaml`` (check -> metric -> row), validated, read once: the
    figures that belong to the site, not the hardware (a site overrides them with
    ``provision_reference_overrides``). A profile's own row of the same check and metric replaces its row."""
    try:
        data = yaml.load(SITE_REFERENCES.read_text(), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{SITE_REFERENCES}: not valid YAML: {str(exc).splitlines()[0]}") from None
    schema.validate(data, "references", str(SITE_REFERENCES))
    return freeze(data["references"])


# libyaml's safe loader when PyYAML was built with it (the same YAML, several times faster), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
