"""``install --method local`` and ``--method image``: the controller ships, the nodes install themselves.

- **local**: every node gets the install bundle, its own inventory and (once) Ansible, then runs the same playbook
  on itself (``ansible-playbook -c local`` under ansible-runner, ``node_side.run``); its events come back on the
  SSH channel and are read as a push run's (``provision.runner.ansible.host_events``): the same install section of
  report.json, a failed role named with its task. The controller's work per host is a handful of SSH commands.
- **image**: the nodes are grouped by kind (``image_key``: OS, machine, kernel, profile, the bundle, the variables
  that are not the node's own). Per kind, unless the controller's cache holds its image: one node (the builder: the
  kind's first node never given a bundle) records its root (``node_side.stamp``), installs itself as under
  ``local``, and the files the install wrote come back as a gzip'd tar (``node_side.capture``: everything whose
  inode changed since, less the per-node paths ``EXCLUDES`` and the inventory's ``provision_image_exclude``). Every
  other node of the kind gets that tar unpacked over its root (only a node whose package list is the builder's
  before its install: the image is a difference, not a whole root), the paths the build removed removed, then runs
  the roles itself as under ``local``: a no-op for what the image holds, and what is the node's own (its name in
  health.json, its NVLink domain's nodes_config.cfg, its services started) done as the roles do it.

Both run ``forks`` nodes at once (every node by default) on threads, one SSH connection each. A step that fails is
that host's install failure, named as push names it: ``FailedTask(step, message)``.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision.engine.ssh import SshTransport
from provision.errors import CommandError
from provision.rollout import bundle as shipped
from provision.rollout import steps
from provision.rollout.node_side import IMAGE_MARK
from provision.rollout.steps import Node, StepError
from provision.runner.ansible import PlaybookHost, host_events

METHODS = ("push", "local", "image")
# Paths of a node that are its own, never in an image (Warewulf's and BCM's per-node overlays hold the same): its name
# and addresses, SSH host keys and root's keys, machine-id, logs, caches, temporary files, the install's own state.
# The package archives apt downloaded (/var/cache/apt) are not state: the image leaves them out, as push leaves them
# on every node. The roles' own state (/var/lib/provision/nvidia-repo: the signing keys) and apt's lists are kept.
# Its network identity too (leases, connections, netplan, resolv.conf), cloud-init's instance, clocks' drift files,
# rotation and backup state: a booted image's nodes get these from their own boot.
EXCLUDES = ("/etc/hostname", "/etc/hosts", "/etc/machine-id", "/var/lib/dbus/machine-id", "/etc/ssh", "/root",
            "/var/log", "/var/cache/apt", "/var/tmp", "/tmp", steps.STATE_DIR, steps.BUILD_DIR, IMAGE_MARK,
            "/var/lib/systemd/random-seed", "/var/lib/systemd/timers", "/var/lib/systemd/coredump", "/var/lib/dhcp",
            "/var/lib/dhclient", "/var/lib/NetworkManager", "/etc/NetworkManager/system-connections", "/etc/netplan",
            "/etc/resolv.conf", "/var/lib/cloud", "/var/lib/chrony", "/var/lib/logrotate", "/var/backups",
            "/var/lib/snapd", "/run", "/etc/slurm", "/etc/provision/health.json",
            "/etc/nvidia-imex/nodes_config.cfg", "/var/spool", "/boot/grub/grubenv")
IMAGE_EXCLUDE_VAR = "provision_image_exclude"  # the site's own per-node paths (a list), added to EXCLUDES


def cache_dir() -> Path:
    """Where the controller keeps wheels and images: ``$PROVISION_CACHE_DIR``, else ``~/.cache/provision``."""
    return Path(os.environ.get("PROVISION_CACHE_DIR") or Path.home() / ".cache" / "provision")


@dataclass
class Rollout:
    """What ``install`` needs for ``--method local|image``: the run's id (ansible-runner's ident on the nodes), the
    playbook, tags, hosts worked on at once, a cancel poll, a progress callback, a folder for each host's events (the
    run's ``ansible/``) and the inventory's hosts (``peers``; empty: the hosts installed)."""

    ident: str
    playbook: str
    tags: str | None
    forks: int
    cancel: Callable[[], bool]
    progress: Callable[[str], None]
    artifacts: Path
    peers: tuple = ()  # every host of the inventory, in its order, whatever the limit: nvidia_imex's groups['all']


@dataclass
class Outcome:
    """Per host its ``PlaybookHost``, the bytes the controller sent it; the images used (key -> description)."""

    hosts: dict[str, PlaybookHost] = field(default_factory=dict)
    sent_bytes: dict[str, int] = field(default_factory=dict)
    images: dict[str, dict] = field(default_factory=dict)


def _failed(host: Any, task: str, message: str, status: str = "failed") -> PlaybookHost:
    entry = PlaybookHost(host.name, status=status)
    entry.roles["play"]["failed"].append({"task": task, "msg": " ".join(message.split())[:300]})
    return entry


class _Shared:
    """What every node of a run shares: the bundle, the wheels per (Python, machine), the transport."""

    def __init__(self, rollout: Rollout, hosts: list[Any]):
        self.rollout, self.hosts = rollout, list(rollout.peers) or hosts
        enabled = [h.name for h in hosts if str(h.vars.get("health_check_enabled", False)).lower()
                   in ("true", "yes", "1", "on")]
        if enabled:
            raise shipped.RolloutError(
                f"install --method local|image: {', '.join(enabled[:5])} enable the health_check role, whose wheel "
                "is built on the controller (its delegate_to: localhost steps): install them with --method push")
        self.bundle, self.digest = shipped.build()
        self.transport = SshTransport()
        self._wheels: dict[tuple[str, str], tuple[bytes, str]] = {}
        self._lock = threading.Lock()

    def wheels(self, probe: dict) -> tuple[bytes, str]:
        key = (str(probe.get("python")), str(probe.get("machine")))
        with self._lock:
            if key not in self._wheels:
                try:
                    self._wheels[key] = shipped.wheelhouse(cache_dir(), *key)
                except shipped.RolloutError as exc:  # this node's Python or machine only: its error, not the run's
                    raise StepError("install Ansible on the node", str(exc)) from None
            return self._wheels[key]

    def inventory(self, host: Any) -> bytes:
        return shipped.host_inventory(host, shipped.domain_peers(host, self.hosts))

    def connect(self, host: Any) -> Node:
        try:
            return Node(host, self.transport.connect(host))
        except CommandError as exc:
            raise StepError("connect", str(exc)) from None

    def converge(self, node: Node) -> PlaybookHost:
        """The roles run by the node itself (Ansible, bundle and inventory sent where missing): its result.

        A node cannot reboot itself in the middle of its own playbook (Ansible's reboot module refuses a local
        connection), so where the inventory lets the driver role reboot (``nvidia_driver_reboot``, true by default)
        the node runs with it false, is rebooted from here when the role says a reboot is pending, and runs the
        roles again: the reboot push's handler does, at the same point of the install."""
        rollout = self.rollout
        if not node.probe.get("python_path") and not node.probe.get("wheels"):
            node.bootstrap(b"", "")  # names the Python the node lacks
        if node.probe.get("wheels") != self.wheels(node.probe)[1]:
            node.bootstrap(*self.wheels(node.probe))
        node.ship_bundle(self.bundle, self.digest)
        may_reboot = _may_reboot(node.host)
        extra = {"nvidia_driver_reboot": False} if may_reboot else None
        entry = self._run(node, extra, quiet=may_reboot, part="")
        if may_reboot and entry.status == "ok" and entry.reboot_pending:
            rollout.progress(f"  install {node.host.name:<12} nvidia_driver: rebooting to load the driver, then the "
                             "roles again")
            node.reboot(lambda: self.connect(node.host).conn, rollout.cancel)
            first = entry
            entry = self._run(node, extra, part=".after-reboot")
            entry.changed += first.changed
            for role, row in first.roles.items():
                entry.roles[role]["changed"] += row["changed"]
        return entry

    def _run(self, node: Node, extra: dict | None, quiet: bool = False, part: str = "") -> PlaybookHost:
        rollout = self.rollout
        node.ship_inventory(self.inventory(node.host))  # each run's own: the node deletes it when the run ends
        events, end = node.run_roles(rollout.ident, rollout.playbook, rollout.tags, rollout.cancel, extra)
        _keep_events(rollout.artifacts, node.host.name + part, events, end)
        progress = rollout.progress if not quiet else (
            lambda line: None if "reboot pending" in line else rollout.progress(line))
        entry = host_events(events, progress).get(node.host.name) or PlaybookHost(node.host.name)
        if end.get("status") not in ("successful", "failed") or (end.get("status") == "failed"
                                                                  and entry.status == "ok"):
            entry.status = "failed"
            entry.roles["play"]["failed"].append({"task": "ansible-playbook", "msg": f"ansible-runner ended "
                                                  f"{end.get('status')} (rc {end.get('rc')}) on the node"})
        return entry


def _may_reboot(host: Any) -> bool:
    """Whether the inventory lets the driver role reboot the node (``nvidia_driver_reboot``, true by default)."""
    return str(host.vars.get("nvidia_driver_reboot", True)).lower() not in ("false", "no", "0", "off")


def _keep_events(folder: Path, host: str, events: list[dict], end: dict) -> None:
    """The node's events as JSON lines in the run's ``ansible/`` folder (0600): what push keeps as artifacts."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / f"{host}.events.jsonl"
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.writelines(json.dumps(e) + "\n" for e in [*events, end])
    except OSError:
        pass  # the install's record in report.json says what happened; the events are extra


def _each(rollout: Rollout, hosts: list, work) -> dict:
    """``work(host)`` for every host, ``forks`` at once; {host name: its return value}. A host whose work raises
    anything but StepError (a bug, a full disk here) gets that as its own install error, never the run's."""
    def guarded(host: Any):
        try:
            return work(host)
        except StepError:
            raise
        except Exception as exc:  # noqa: BLE001 (one host's failure, whatever it is, is that host's)
            rollout.progress(f"  install {host.name:<12} FAILED: {type(exc).__name__}: {exc}")
            return _failed(host, "install", f"{type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=max(1, min(rollout.forks, len(hosts)))) as pool:
        return dict(zip([h.name for h in hosts], pool.map(guarded, hosts)))


def _close(node: Node | None) -> None:
    if node is not None:
        try:
            node.conn.close()
        except Exception:  # noqa: BLE001 (closing a connection that already failed)
            pass


def install_local(hosts: list, rollout: Rollout) -> Outcome:
    """``--method local`` on ``hosts`` (``provision.inventory.Host``). Raises RolloutError (exit 2) when the bundle or
    the wheels cannot be made; a node's own failure is its entry's."""
    shared, out = _Shared(rollout, hosts), Outcome()

    def one(host: Any) -> PlaybookHost:
        node = None
        if rollout.cancel():
            return _failed(host, "-", "interrupted before it ran")
        try:
            node = shared.connect(host)
            node.do_probe()
            return shared.converge(node)
        except StepError as exc:
            status = "unreachable" if exc.task == "connect" else "failed"
            rollout.progress(f"  install {host.name:<12} {status.upper()} '{exc.task}': {exc}")
            return _failed(host, exc.task, str(exc), status)
        finally:
            out.sent_bytes[host.name] = node.sent_bytes if node else 0
            _close(node)

    out.hosts = _each(rollout, hosts, one)
    return out


def kind_key(host: Any, probe: dict, bundle_digest: str, tags: str | None = None) -> str:
    """The kind of node: sha256 of its OS, machine, kernel, profile, the bundle, the variables that are not the
    node's own (``bundle.PER_NODE``) and the Ansible tags run."""
    kind = [probe.get("os"), probe.get("machine"), probe.get("kernel"), host.profile, bundle_digest,
            shipped.image_vars_digest(host), tags or ""]
    return hashlib.sha256(json.dumps(kind).encode()).hexdigest()[:16]


def image_key(host: Any, probe: dict, bundle_digest: str, tags: str | None = None) -> str | None:
    """The image a node takes: its kind (``kind_key``) over its package list (the OS image the nodes share: an image
    is a difference over it), sha256. A node that holds an image of its kind (the mark ``finish-image`` left) takes
    that one; None for a node holding an image of another kind (the bundle or its variables changed since): its
    package list is no OS image any more, so it converges as under local."""
    kind = kind_key(host, probe, bundle_digest, tags)
    if probe.get("image"):
        return str(probe["image"]) if probe.get("image_kind") == kind else None
    return hashlib.sha256(f"{kind} {probe.get('packages')}".encode()).hexdigest()[:16]


def _excludes(host: Any) -> list[str]:
    extra = host.vars.get(IMAGE_EXCLUDE_VAR) or []
    return [*EXCLUDES, *[str(p) for p in (extra if isinstance(extra, list) else [extra])]]


class _Images:
    """The run's images by key: from the cache, or built once on a builder node (``_build``). ``found[key]`` is
    written once per key, by the one builder of that key, before any node of the key reads it."""

    def __init__(self, shared: _Shared):
        self.shared, self.folder = shared, cache_dir() / "images"
        self.found: dict[str, tuple[bytes, dict] | None] = {}
        self.converge_only: set[str] = set()  # kinds whose builder was installed already: nothing to capture

    def cached(self, key: str) -> tuple[bytes, dict] | None:
        meta_path, data_path = self.folder / f"{key}.json", self.folder / f"{key}.tar.gz"
        try:
            meta = json.loads(meta_path.read_text())
            data = data_path.read_bytes()
        except (OSError, ValueError):
            return None
        return (data, meta) if hashlib.sha256(data).hexdigest() == meta.get("sha256") else None

    def store(self, key: str, data: bytes, meta: dict) -> None:
        """Keep the image for the next run, owner-only (an image holds what the roles wrote from secret variables);
        a cache that cannot be written costs only the next run a build."""
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            for name, content in ((f"{key}.tar.gz", data), (f"{key}.json", json.dumps(meta, indent=1).encode())):
                tmp = self.folder / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                    f.write(content)
                tmp.replace(self.folder / name)
        except OSError as exc:
            self.shared.rollout.progress(f"install: warning: image {key} not kept in {self.folder}: {exc}")


def install_image(hosts: list, rollout: Rollout) -> Outcome:
    """``--method image`` on ``hosts``: probe all, build each kind's image once (or take it from the cache), roll
    it out, converge every node. Raises RolloutError (exit 2) before any node when the bundle cannot be made or a
    host enables the health_check role; every node's own failure is its entry's."""
    shared, out = _Shared(rollout, hosts), Outcome()
    images = _Images(shared)
    nodes: dict[str, Node] = {}

    def probe(host: Any) -> PlaybookHost | None:
        if rollout.cancel():
            return _failed(host, "-", "interrupted before it ran")
        try:
            node = shared.connect(host)
            nodes[host.name] = node
            node.do_probe()
            return None
        except StepError as exc:
            status = "unreachable" if exc.task == "connect" else "failed"
            rollout.progress(f"  install {host.name:<12} {status.upper()} '{exc.task}': {exc}")
            return _failed(host, exc.task, str(exc), status)

    try:
        failed = {name: entry for name, entry in _each(rollout, hosts, probe).items() if entry is not None}
        out.hosts.update(failed)
        kinds, drifted = _kinds([h for h in hosts if h.name not in failed], nodes, shared)
        rollout.progress(f"install: {len(kinds)} image(s) for {sum(map(len, kinds.values()))} hosts: "
                         + "; ".join(f"{k} ({nodes[g[0].name].probe.get('os')}, {g[0].profile}): {len(g)} hosts"
                                     for k, g in kinds.items())
                         + (f"; {len(drifted)} hosts hold an image of an older bundle or other variables, and "
                            f"converge as under local: {', '.join(h.name for h in drifted[:8])}" if drifted else ""))
        builders = {}
        for key, group in kinds.items():
            images.found[key] = images.cached(key)
            lacking = [h for h in group if nodes[h.name].probe.get("image") != key]
            if images.found[key] is None and lacking:
                builders[key] = lacking[0]
        # the builders first, all kinds at once; then every other node
        key_of = {h.name: k for k, g in kinds.items() for h in g}
        built = _each(rollout, list(builders.values()), lambda h: _build(shared, images, nodes[h.name], key_of[h.name]))
        out.hosts.update(built)
        rest = [h for g in kinds.values() for h in g if h.name not in built] + drifted
        out.hosts.update(_each(rollout, rest, lambda h: _roll(shared, images, nodes[h.name], key_of.get(h.name))))
        for key, found in images.found.items():
            if found is not None:
                out.images[key] = found[1]
    finally:
        for node in nodes.values():
            out.sent_bytes[node.host.name] = node.sent_bytes
            _close(node)
    return out


def _kinds(hosts: list[Any], nodes: dict[str, Node], shared: _Shared) -> tuple[dict[str, list], list[Any]]:
    """({image key: its hosts}, the hosts holding an image of another kind: ``image_key`` None)."""
    kinds: dict[str, list] = {}
    drifted = []
    for host in hosts:
        key = image_key(host, nodes[host.name].probe, shared.digest, shared.rollout.tags)
        if key is None:
            drifted.append(host)
        else:
            kinds.setdefault(key, []).append(host)
    return kinds, drifted


def _build(shared: _Shared, images: _Images, node: Node, key: str) -> PlaybookHost:
    """The kind's image built on ``node``: its root recorded, the roles run by the node, the result captured. A
    builder the roles change nothing on (installed already, by push or before the cache was emptied) has nothing to
    capture: its kind then converges as under local."""
    host, progress = node.host, shared.rollout.progress
    started = time.monotonic()
    try:
        if shared.rollout.cancel():
            return _failed(host, "-", "interrupted before it ran")
        base = node.stamp()
        entry = shared.converge(node)
        if entry.status != "ok":
            return entry
        if entry.changed == 0:
            images.converge_only.add(key)
            progress(f"install: image {key} not built: the roles changed nothing on its builder {host.name} "
                     "(installed already); its kind's nodes converge as under local")
            return entry
        kind = kind_key(host, node.probe, shared.digest, shared.rollout.tags)
        data = node.capture(key, kind, _excludes(host))
        meta = {"key": key, "kind": kind, "builder": host.name, "os": node.probe.get("os"),
                "machine": node.probe.get("machine"), "kernel": node.probe.get("kernel"), "profile": host.profile,
                "bundle": shared.digest, "packages": base.get("packages"), "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        images.store(key, data, meta)
        images.found[key] = (data, meta)
        progress(f"install: image {key} built on {host.name} in {time.monotonic() - started:.0f} s "
                 f"({len(data) / 1e6:.1f} MB)")
        node.probe["image"] = key
        return entry
    except StepError as exc:
        progress(f"  install {host.name:<12} FAILED '{exc.task}': {exc}")
        return _failed(host, exc.task, str(exc))


def _roll(shared: _Shared, images: _Images, node: Node, key: str | None) -> PlaybookHost:
    """The kind's image unpacked on ``node`` (unless it holds it, or the kind has none: ``key`` None or a builder
    that changed nothing), then the roles run by the node."""
    host, progress = node.host, shared.rollout.progress
    try:
        if shared.rollout.cancel():
            return _failed(host, "-", "interrupted before it ran")
        applied = False
        if key is not None and key not in images.converge_only and node.probe.get("image") != key:
            found = images.found.get(key)
            if found is None:
                return _failed(host, "build the image", f"no image for this kind ({key}): its build failed on "
                               "another node")
            data, meta = found
            if node.probe.get("packages") != meta.get("packages"):
                return _failed(host, "unpack the image", f"this node's packages differ from those image {key} was "
                               f"built over (on {meta.get('builder')}): an image is a difference, not a whole "
                               "root; install this node with --method local or push")
            node.apply_image(data, key, meta.get("kind", ""))
            applied = True
            if _may_reboot(host):  # the image's driver and blacklist take effect at a boot, as a booted image's do
                progress(f"  install {host.name:<12} image: rebooting into the unpacked image")
                node.reboot(lambda: shared.connect(host).conn, shared.rollout.cancel)
            node.do_probe()  # the image brought the bundle and Ansible: nothing more to send
        entry = shared.converge(node)
        if applied:
            image_row = entry.roles["image"]
            image_row["tasks"], image_row["changed"] = 1, 1
            entry.changed += 1
            if not _may_reboot(host) and entry.status == "ok":
                # as push's driver role says when it may not reboot: the unpacked driver loads at the next boot
                entry.reboot_pending = True
                progress(f"  install {host.name:<12} image: reboot pending (nvidia_driver_reboot is false)")
        return entry
    except StepError as exc:
        progress(f"  install {host.name:<12} FAILED '{exc.task}': {exc}")
        return _failed(host, exc.task, str(exc))
