"""Snapshots of NVIDIA's real package repositories: the facts the simulated repositories serve.

One YAML file per target under ``snapshot/`` (``ubuntu2204``, ``ubuntu2404``, ``debian12``,
``rhel9``, and ``ubuntu2404-sbsa`` for arm64 servers; format and sources in ``snapshot/README.md``):
the repository's URL layout, signing key, keyring and source file, module streams (EL9), and per
package its exact name, version, dependencies and which of our commands it ships, each with the
public source it was read from. The simulated repository serves exactly these packages, so a role
that asks for a name or a version NVIDIA does not publish fails on the simulated rack as it would on
a real node.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from provision.errors import ProvisionError

SNAPSHOT_DIR = Path(os.environ.get("PROVISION_SIM_SNAPSHOT_DIR", Path(__file__).with_name("snapshot")))
TARGETS = ("ubuntu2204", "ubuntu2404", "debian12", "rhel9")
# NVIDIA's arm64 server folders (``<target>/sbsa``, e.g. GB200's Grace hosts): ``<target>-sbsa``.
SBSA_TARGETS = ("ubuntu2404-sbsa",)
ALL_TARGETS = TARGETS + SBSA_TARGETS
# Simulated node OS -> the NVIDIA repository folder it uses (Rocky Linux 9 uses NVIDIA's rhel9 folder,
# https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ "Rocky Linux 9").
OS_TARGET = {"ubuntu2204": "ubuntu2204", "ubuntu2404": "ubuntu2404", "debian12": "debian12", "rocky9": "rhel9"}


@dataclass(frozen=True)
class Package:
    """One package as the repository publishes it: ``version`` exact (epoch ``N:`` included)."""

    name: str
    version: str
    arch: str
    depends: tuple[str, ...]
    ships: tuple[str, ...]
    role: str
    sources: tuple[str, ...]
    provides: tuple[str, ...] = ()
    # The stack release line the entry belongs to ("" for the seed line, "blackwell" for driver 580 / CUDA 13).
    line: str = ""

    @property
    def epoch(self) -> str | None:
        return self.version.split(":", 1)[0] if ":" in self.version else None

    @property
    def upstream(self) -> str:
        """The version without epoch and revision/release: ``3:550.127.05-1.el9`` -> ``550.127.05``."""
        return self.version.split(":", 1)[-1].rsplit("-", 1)[0]


@dataclass(frozen=True)
class Snapshot:
    target: str
    format: str  # deb | rpm
    repository: dict
    modules: tuple[dict, ...]
    packages: tuple[Package, ...]

    def package(self, name: str, version: str | None = None) -> Package | None:
        """The first package of that name (the snapshot's oldest line), or the one of that exact version.
        A repository holds several versions of one name (libnccl2 +cuda12.4 and +cuda13.0)."""
        return next((p for p in self.packages if p.name == name and version in (None, p.version)), None)

    def versions(self, name: str) -> tuple[str, ...]:
        return tuple(p.version for p in self.packages if p.name == name)


def load(target: str, folder: Path | None = None) -> Snapshot:
    """Read ``<folder>/<target>.yaml``. Raises ProvisionError naming the file and field."""
    path = (folder or SNAPSHOT_DIR) / f"{target}.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ProvisionError(f"{path}: cannot read the repository snapshot ({exc})") from None
    try:
        packages = tuple(_package(p) for p in data.get("packages") or ())
        return Snapshot(target=data["target"], format=data["format"], repository=data["repository"],
                        modules=tuple(data.get("modules") or ()), packages=packages)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ProvisionError(f"{path}: malformed snapshot (field {exc})") from None


def _package(entry: dict) -> Package:
    return Package(name=entry["name"], version=str(entry["version"]), arch=entry.get("arch") or "all",
                   depends=tuple(entry.get("depends") or ()), ships=tuple(entry.get("ships") or ()),
                   role=entry.get("role", ""), sources=tuple(entry.get("sources") or ()),
                   provides=tuple(entry.get("provides") or ()), line=entry.get("line") or "")


DOCA_KEY = "GPG-KEY-Mellanox.pub"


def doca(target: str, folder: Path | None = None) -> Snapshot | None:
    """The DOCA-OFED host repository of ``target`` from ``doca.yaml`` as a Snapshot (its URL path
    is its folder on the mirror); None when the snapshot has none for the target."""
    path = (folder or SNAPSHOT_DIR) / "doca.yaml"
    try:
        data = yaml.safe_load(path.read_text())
        entry = ((data.get("targets") or {}).get(target) or {}).get("doca")
        if not entry:
            return None
        packages = tuple(_package(p) for p in entry.get("packages") or () if p.get("version"))
        fmt = load(target, folder).format
        return Snapshot(target=target, format=fmt, repository={**entry, "signing_key": DOCA_KEY},
                        modules=(), packages=packages)
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise ProvisionError(f"{path}: malformed DOCA snapshot for {target} ({exc})") from None
