"""The test data of the checks as declarations: ``tests/data/<check>/cases.yaml``.

Each check's folder holds its captures (the outputs of its steps, from the simulated tools or real
clusters) and one ``cases.yaml`` saying how each case is judged, read by one generic test
(``test_check_data.py``), as DCGM's per-plugin test folders (nvvs/plugin_src/<plugin>/tests/) and
SuperBench's per-benchmark data (tests/data/<bench>.log) do. A case::

    - name: remap_pending                 # unique in the file
      captures: {"": sim_h100_remap_pending.txt}   # step key -> file (relative to the folder;
                                          # ../samples/<name> for a real capture)
      profile: h100-sxm5-80g-ndr          # optional: the file's ``profile`` otherwise
      site: sim                           # optional: the simulated rack's site facts (storage)
      variant: {gpu.count: 9}             # optional: dotted paths set on the profile (null deletes;
                                          # site.<key> edits the site facts; stack.<pin> is the pin a site
                                          # sets in its inventory, e.g. stack.driver_version)
      hosts: 4                            # optional: the job's host count (pair checks 2, else 1)
      addresses: {node07: 172.31.48.81}   # optional: a host's inventory address (default: its name)
      outcome: fail                       # pass | fail | error
      message: ["GPU3 00000000:5D:00.0: remapped_rows_pending"]  # fragments the message must hold;
                                          # {stack[driver_version]} is the profile's stack pin
      faults: [ROW_REMAP_PENDING]         # the fault codes of the failing findings (fail only)
      sim: {...}                          # optional: how tests/data/tools/capture.py makes it

``sim`` (read by the capture script only): ``model`` (dotted paths set on the node's hardware model,
``path+`` appends to a list), ``software`` (the same on its software state: driver, cuda, packages),
``fabric`` (cable edits as ``provision sim fault`` makes them), ``truncate: <case>`` (the first half of
that case's captures), or ``recorded`` (a sentence: made another way, e.g. by a cluster burn-in of the
simulated rack; the script does not remake it).
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from provision import paths, profiles
from provision.results.model import Outcome, Scope

DATA = Path(__file__).resolve().parents[2] / "data"
DECLARATION = "cases.yaml"
# The simulated rack's site facts, with /proc's bonding folder as a real site has it (site: sim).
_SIM_SITE = yaml.safe_load((paths.ROOT / "provision/sim/site.yml").read_text())
SITES = {"sim": {"provision_storage": {**_SIM_SITE["provision_storage"], "bonding_dir": "/proc/net/bonding"}}}
HOST = "node07"


@dataclass(frozen=True)
class Case:
    check: str
    name: str
    captures: dict[str, str]
    profile: str
    outcome: Outcome
    message: tuple[str, ...]
    faults: tuple[str, ...] | None = None
    site: str | None = None
    variant: dict = field(default_factory=dict)
    sim: dict = field(default_factory=dict)
    hosts: int | None = None
    addresses: dict = field(default_factory=dict)  # host -> its inventory address (default: its name)

    @property
    def id(self) -> str:
        return f"{self.check}-{self.name}"

    def job_hosts(self, scope: Scope) -> tuple[str, ...]:
        """The job's hosts: ``HOST`` first, then as many more as the case's ``hosts`` (a pair: two)."""
        count = self.hosts or (2 if scope is Scope.PAIR else 1)
        return (HOST,) + tuple(f"node{8 + i:02d}" for i in range(count - 1))

    def texts(self) -> dict[str, str]:
        """Step key -> captured output."""
        return {key: (DATA / self.check / path).read_text() for key, path in self.captures.items()}

    def host_profile(self) -> profiles.Profile:
        """The profile the case is judged under: the named one, the site's facts, then the variant."""
        if self.site is None:
            base = profiles.load(self.profile)
        else:
            base = profiles.for_host(self.profile, SITES[self.site], HOST)
        return variant(base, f"{self.profile}-{self.name}", self.variant) if self.variant else base

    def needles(self, profile: profiles.Profile) -> list[str]:
        return [text.format(stack=profile.stack) for text in self.message]


@dataclass(frozen=True)
class SitePinned(profiles.Profile):
    """A profile whose stack pins a site changed (its inventory's nvidia_driver_version and the like)."""

    pins: dict = field(default_factory=dict)

    @property
    def stack(self) -> dict[str, str]:
        return {**super().stack, **self.pins}


def variant(base: profiles.Profile, name: str, changes: dict) -> profiles.Profile:
    """A copy of ``base`` named ``name`` with dotted paths ("gpu.count", "site.storage.slaves") set to new
    values (None deletes the key); "stack.<pin>" sets a pin as a site's inventory does."""
    data, site = copy.deepcopy(base.data), copy.deepcopy(base.site)
    pins = {path.split(".", 1)[1]: value for path, value in changes.items() if path.startswith("stack.")}
    changes = {path: value for path, value in changes.items() if not path.startswith("stack.")}
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = {"site": site, **data} if parents[:1] == ["site"] else data
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    changed = dataclasses.replace(base, name=name, data=data, path=f"{base.path} ({name})", site=site)
    if not pins:
        return changed
    return SitePinned(changed.name, changed.data, changed.path, changed.target, changed.site, pins=pins)


def folders() -> list[Path]:
    """Every tests/data/<check>/ holding a declaration."""
    return sorted(p.parent for p in DATA.glob(f"*/{DECLARATION}"))


def load(folder: Path) -> list[Case]:
    """The cases of one folder's declaration. Raises ValueError naming the file and case when one is malformed."""
    path = folder / DECLARATION
    doc = yaml.safe_load(path.read_text()) or {}
    out = []
    for row in doc.get("cases") or []:
        where = f"{path}: case {row.get('name')!r}"
        unknown = set(row) - {"name", "captures", "profile", "site", "variant", "outcome", "message", "faults", "sim",
                                 "hosts", "addresses"}
        if unknown or not row.get("name") or not isinstance(row.get("captures"), dict):
            raise ValueError(f"{where}: needs name and captures; unknown keys {sorted(unknown)}")
        faults = row.get("faults")
        out.append(Case(folder.name, row["name"], {str(k): v for k, v in row["captures"].items()},
                        row.get("profile", doc.get("profile")), Outcome(row["outcome"]),
                        tuple(row.get("message") or ()),
                        None if faults is None else tuple(faults), row.get("site", doc.get("site")),
                        row.get("variant") or {}, row.get("sim") or {}, row.get("hosts"), row.get("addresses") or {}))
    return out


def cases() -> list[Case]:
    """Every declared case of every check folder."""
    return [case for folder in folders() for case in load(folder)]
