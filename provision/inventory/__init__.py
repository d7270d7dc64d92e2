"""Inventories as frozen dataclasses, built from ``ansible-inventory --list`` JSON.

``resolve`` turns ``-i`` (a folder, a file, or a name under ``inventory/``) into a path;
``load`` reads it and runs preflight validation, which names file, host and field.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from provision import paths, profiles
from provision.errors import InventoryError, ProfileError


@dataclass(frozen=True)
class Host:
    """One node: ``address`` is what SSH connects to; ``profile`` the hardware profile name."""

    name: str
    address: str
    port: int
    user: str
    key_file: str | None
    known_hosts_file: str | None
    profile: str
    vars: dict = field(repr=False, hash=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: tuple[Host, ...]

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)


def resolve(arg: str) -> Path:
    """``arg`` as given if it exists, else ``inventory/<arg>``. Raises InventoryError."""
    for candidate in (Path(arg), paths.ROOT / "inventory" / arg):
        if candidate.exists():
            return candidate.resolve()
    raise InventoryError(f"{arg}: no such inventory (neither a path nor a folder under {paths.ROOT / 'inventory'})")


def load(path: Path) -> Inventory:
    """Read an inventory with ansible-inventory and validate every host. Raises InventoryError."""
    data = _ansible_inventory(path)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    names = sorted(set(_all_hosts(data)) | set(hostvars))
    if not names:
        raise InventoryError(f"{path}: inventory has no hosts")
    hosts = tuple(_host(path, name, hostvars.get(name, {})) for name in names)
    return Inventory(path=path, hosts=hosts)


def _ansible_inventory(path: Path) -> dict:
    env = dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="True", ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="True",
               ANSIBLE_CONFIG=str(paths.ROOT / "ansible.cfg"))
    proc = subprocess.run([paths.tool("ansible-inventory"), "-i", str(path), "--list"],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("[WARNING]")]
        reason = next((ln for ln in lines if "ERROR" in ln or "Error" in ln), lines[0] if lines else "unknown error")
        raise InventoryError(f"{path}: ansible-inventory could not read it: {reason}")
    return json.loads(proc.stdout)


def _all_hosts(data: dict) -> list[str]:
    hosts = []
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict):
            hosts.extend(body.get("hosts", []))
    return hosts


def _host(path: Path, name: str, hv: dict) -> Host:
    where = f"{_source_file(path, name)}: host {name}"
    address = hv.get("ansible_host")
    if not address:
        raise InventoryError(f"{where}: missing field 'ansible_host' (the address to reach it)")
    profile = hv.get("provision_profile")
    if not profile:
        raise InventoryError(f"{where}: missing field 'provision_profile' (known: {', '.join(profiles.names())})")
    try:
        profiles.load(str(profile))
    except ProfileError as exc:
        raise InventoryError(f"{where}: field 'provision_profile': {exc}") from None
    if not isinstance(address, str):
        raise InventoryError(f"{where}: field 'ansible_host' must be a host name or address, got {address!r}")
    port = hv.get("ansible_port", 22)
    if not str(port).isascii() or not str(port).isdigit() or not 1 <= int(port) <= 65535:
        raise InventoryError(f"{where}: field 'ansible_port' is not a port number (1-65535): {port!r}")
    try:
        profiles.load(str(profile)).with_overrides(hv.get("provision_reference_overrides"), f"host {name}")
    except ProfileError as exc:
        raise InventoryError(f"{_source_file(path, name)}: {exc}") from None
    return Host(name=name, address=str(address), port=int(port), user=str(hv.get("ansible_user", "root")),
                key_file=hv.get("ansible_ssh_private_key_file"), known_hosts_file=hv.get("provision_known_hosts_file"),
                profile=str(profile), vars=hv)


def _source_file(path: Path, name: str) -> Path:
    """The inventory file that names ``name`` (for messages); the inventory path if none does."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in
                                                 ("", ".yml", ".yaml", ".ini", ".cfg"))
    for candidate in files:
        try:
            if name in candidate.read_text(errors="replace"):
                return candidate
        except OSError:
            continue
    return path
