"""What the controller ships to a node that installs itself: the install bundle, the node's own inventory, the
wheels of Ansible.

- **The bundle** (``build``): the playbooks, roles, filter plugins, ``ansible.cfg``, the profiles and stack
  release the playbooks read, and ``node_side.py``, as one gzip'd tar made byte for byte the same from the same
  sources (sorted entries, owner 0, mtime 0; the reproducible-builds.org rules for archives), so that its sha256
  (``DIGEST`` inside it) says whether a node already holds it. Unpacked at ``/opt/provision/bundle``.
- **The node's inventory** (``host_inventory``): the host with its variables as the controller's Ansible resolved
  them (``provision.inventory``), minus what only the controller uses (``CONTROLLER_ONLY``: connection settings
  and the BMC's credentials, never sent), plus the hosts of its NVLink domain or rack with the two variables the
  IMEX role groups them by and their addresses: the role then writes the same nodes_config.cfg as under ``push``.
- **The wheels** (``wheelhouse``): ansible-core and ansible-runner at the controller's own versions (one Ansible
  for every method), with their dependencies, for the node's Python and machine, fetched once by pip from the
  index pip is configured with (the site's mirror) into a cache folder; a node without them gets them once
  (``provision.rollout.steps.bootstrap``).

Raises RolloutError (exit 2) naming the file or the pip command that failed.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import shutil
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path

import yaml

from provision import paths
from provision.errors import ProvisionError

BUNDLE_DIR = "/opt/provision/bundle"
NODE_SIDE = Path(__file__).resolve().with_name("node_side.py")
# Variables that only the controller reads and never goes to a node: how to reach it (the node installs itself over
# a local connection) and the BMC's credentials (provision.bmc: a node must not learn its BMC's password).
CONTROLLER_ONLY = re.compile(r"^(ansible_(?!host$|python_interpreter$).*|provision_bmc_.*|provision_known_hosts_file)$")
# The variables that name one node rather than a kind of node: left out of the image key (``image_key``) so that the
# nodes of a kind share one image; the roles rewrite what depends on them on every node (``provision.rollout``).
PER_NODE = re.compile(r"^(ansible_.*|provision_bmc_.*|provision_nvlink_domain|provision_rack|provision_slurm_node|"
                      r"provision_known_hosts_file|inventory_.*)$")
DOMAIN_VARS = ("provision_nvlink_domain", "provision_rack")  # nvidia_imex's defaults: domain var, then fallback
WHEELS = ("ansible-core", "ansible-runner")


class RolloutError(ProvisionError):
    """The bundle or the wheels could not be made (exit 2)."""


def _members() -> list[tuple[str, Path]]:
    """(name in the bundle, file here), sorted by name."""
    root, out = paths.ROOT, [("node_side.py", NODE_SIDE), ("ansible.cfg", paths.ROOT / "ansible.cfg")]
    for top, base in (("playbooks", root / "playbooks"), ("roles", root / "roles"),
                      ("plugins", root / "plugins"), ("provision/profiles", paths.PROFILES)):
        for folder, dirs, files in os.walk(base, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in files:
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = Path(folder) / name
                out.append((f"{top}/{path.relative_to(base)}", path))
    return sorted(out)


def build() -> tuple[bytes, str]:
    """(the bundle's gzip'd tar, its sha256 hex digest). Raises RolloutError when a source cannot be read."""
    members = _members()
    digest = hashlib.sha256()
    try:
        contents = [(name, path.read_bytes(), os.access(path, os.X_OK)) for name, path in members]
    except OSError as exc:
        raise RolloutError(f"install bundle: cannot read {exc.filename}: {exc.strerror}") from None
    for name, data, executable in contents:
        digest.update(f"{name}\0{int(executable)}\0{len(data)}\0".encode() + data)
    sha = digest.hexdigest()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, executable in [*contents, ("DIGEST", sha.encode() + b"\n", False)]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime, info.uid, info.gid = len(data), 0o755 if executable else 0o644, 0, 0, 0
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue(), sha


def host_inventory(host, peers: list) -> bytes:
    """The YAML inventory a node installs itself from: ``host`` (a ``provision.inventory.Host``) with its
    variables less ``CONTROLLER_ONLY``, and the ``peers`` of its NVLink domain or rack with their address and
    domain variables only."""
    own = {k: v for k, v in host.vars.items() if not CONTROLLER_ONLY.match(k)}
    own["ansible_host"] = host.address
    hosts = {}
    for peer in [*peers, host] if host not in peers else peers:
        hosts[peer.name] = own if peer.name == host.name else {
            "ansible_host": peer.address, **{k: peer.vars[k] for k in DOMAIN_VARS if k in peer.vars}}
    data = {"all": {"hosts": hosts}}
    # in the inventory's order (sort_keys off): nvidia_imex lists a domain's nodes in groups['all'] order
    return ("---\n# Written by provision install --method local|image for this node only.\n"
            + yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False)).encode()


def _domain(host) -> str:
    """nvidia_imex's grouping key: the domain variable where defined (even empty), else the rack's, else ""
    (roles/nvidia_imex/vars/main.yml: ``default()`` replaces only an undefined variable)."""
    domain, rack = DOMAIN_VARS
    return str(host.vars[domain]) if domain in host.vars else str(host.vars.get(rack, ""))


def domain_peers(host, hosts: list) -> list:
    """The hosts of ``hosts`` that nvidia_imex groups with ``host`` (the same ``_domain``, "" included)."""
    key = _domain(host)
    return [h for h in hosts if _domain(h) == key]


def image_vars_digest(host) -> str:
    """sha256 of the host's variables that describe its kind, not itself (``PER_NODE`` left out)."""
    kind = {k: v for k, v in host.vars.items() if not PER_NODE.match(k)}
    return hashlib.sha256(json.dumps(kind, sort_keys=True, default=str).encode()).hexdigest()


def wheel_versions() -> dict[str, str]:
    """The controller's own ansible-core and ansible-runner versions: the node gets the same."""
    return {name: metadata.version(name) for name in WHEELS}


def wheelhouse(cache: Path, python: str, machine: str) -> tuple[bytes, str]:
    """(a tar of the wheels for Python ``python`` (e.g. "3.11") on ``machine`` (e.g. "x86_64"), its digest), made
    once per (versions, Python, machine) under ``cache`` by ``pip download``. Raises RolloutError when pip fails."""
    if not re.fullmatch(r"\d+\.\d+", python) or not re.fullmatch(r"[A-Za-z0-9_]+", machine):
        raise RolloutError(f"install: a node reported Python {python!r} on {machine!r}")
    pins = [f"{n}=={v}" for n, v in sorted(wheel_versions().items())]
    key = hashlib.sha256(f"{pins} {python} {machine}".encode()).hexdigest()[:16]
    folder = cache / f"wheels-{key}"
    archive = folder.with_suffix(".tar")
    if not archive.is_file():
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"wheels-{key}-", dir=cache))  # two runs at once: one folder each
        glibc = [f"manylinux_2_{m}_{machine}" for m in range(36, 16, -1)] + [f"manylinux2014_{machine}"]
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(folder),
                "--python-version", python, "--implementation", "cp",
                *[a for p in [*glibc, "linux_" + machine, "any"] for a in ("--platform", p)], *pins]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RolloutError(f"install: pip could not fetch {', '.join(pins)} for Python {python} on {machine}: "
                               + " ".join((done.stderr or done.stdout).split())[-300:])
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            for wheel in sorted(folder.glob("*.whl")):
                tar.add(wheel, arcname=wheel.name)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(raw.getvalue())
        os.replace(tmp, archive)  # whole or absent: a reader never sees half an archive
        shutil.rmtree(folder, ignore_errors=True)
    data = archive.read_bytes()
    return data, hashlib.sha256(data).hexdigest()
