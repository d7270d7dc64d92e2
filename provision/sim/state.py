"""Where a simulated rack keeps its state: outside its inventory folder.

A rack's state (rack.json, the controller's key, known_hosts, faults.json, logs, the package
repository and every node's overlay dirs: about 3,000 files a node) would make its inventory
folder slow to load and to lint, so only ``hosts.yml`` is written into the inventory folder.
The rest goes to ``<root>/<folder name>-<hash>/``, where the hash is of the inventory folder's
absolute path (symlinks resolved): racks in different folders never share state, and the same
folder finds its rack again. ``<root>`` is ``$PROVISION_SIM_STATE_DIR``, else
``/var/lib/provision-sim/racks``; it must be a filesystem that can hold an overlay's upper dir
(not overlayfs itself, as a container's root often is).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

ROOT_ENV = "PROVISION_SIM_STATE_DIR"
DEFAULT_ROOT = Path("/var/lib/provision-sim/racks")
LEGACY_NAME = ".sim"  # the state folder inside the inventory folder, before it moved out


def root() -> Path:
    """The folder holding every rack's state folder."""
    value = os.environ.get(ROOT_ENV)
    return Path(value).expanduser().resolve() if value else DEFAULT_ROOT


def folder(inventory_dir: Path) -> Path:
    """The state folder of the rack whose inventory folder is ``inventory_dir``."""
    absolute = Path(inventory_dir).resolve()
    digest = hashlib.sha256(str(absolute).encode()).hexdigest()[:12]
    return root() / f"{absolute.name or 'root'}-{digest}"


def legacy_folder(inventory_dir: Path) -> Path:
    """Where a rack started by an older version kept its state (``sim down`` still clears it)."""
    return Path(inventory_dir) / LEGACY_NAME
