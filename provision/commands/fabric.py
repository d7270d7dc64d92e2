"""``provision fabric``: the InfiniBand fabric mapped with ibnetdiscover (saved outputs, or live from the
inventory's first GPU node): a summary, then leaves missing uplinks, degraded cables, leaves and spines."""
from __future__ import annotations

import argparse
import json

from provision import arguments, embedded, profiles
from provision import inventory as inv
from provision.commands._common import say, warn
from provision.engine.ssh import SshTransport
from provision.errors import CommandError, ExitStatus, ProfileError, ProvisionError
from provision.report import fabric_text

# Bound on one live `ibnetdiscover` run: it sends a few SMPs per port found, one subnet at a time
# (rdma-core libibnetdisc); a bound chosen to cover large fabrics, not a measured figure.
IBNETDISCOVER_TIMEOUT_S = 300.0


def main(args: argparse.Namespace) -> int:
    return fabric(args.inventory, args.ibnetdiscover, args.json, arguments.limit(args.limit), arguments.vault(args),
                  out=say, err=warn)


def fabric(inventory_args: str | list[str] | None, files: list[str] | None = None, as_json: bool = False,
           limit: list[str] | None = None, vault: inv.Vault = inv.Vault(), out=print, err=print) -> ExitStatus:
    """Map the InfiniBand fabric, one plane per dump: from ``files`` (saved ``ibnetdiscover`` outputs),
    else live from the inventory's first GPU node (``ibnetdiscover -C <dev> -P 1`` per HCA of its
    profile). Prints per plane the leaves (hosts, uplinks, oversubscription), spines (downlinks) and
    every cable below the expected width and speed (the profile's ``hca.rate_Gbps``; without a profile
    the most common among the cables), or ``fabric_text.view`` (``Fabric.to_dict(expected)`` with names
    and the leaves missing uplinks) with ``as_json``. The text starts with a summary (sizes, degraded
    cables, leaves missing uplinks, HCA ports without a host name), names switches by their description
    where it names one and HCA ports by host and device, in lines of at most ``fabric_text.WIDTH``. Raises
    ProvisionError (exit 2) for an unreadable file or text that is not ibnetdiscover output,
    CommandError when a node cannot be reached or ibnetdiscover fails there."""
    from provision.fabric import discover

    if not inventory_args and not files:
        raise ProvisionError("fabric: give -i INVENTORY (discover live) or --ibnetdiscover FILE")
    hosts, node, profile = None, None, None
    if inventory_args:
        sources = inv.resolve_all(inventory_args)
        for path in sources if not files else ():
            embedded.ensure_running(path, err)
        inventory = inv.load(sources, vault, limit)
        hosts = [h.name for h in inventory.hosts]
        node = inventory.gpu_hosts[0] if inventory.gpu_hosts else None
        profile = profiles.for_host(str(node.profile), node.vars, node.name) if node else None
    if files:
        dumps, names = read_dumps(files), None
    elif node is None or profile is None:
        raise ProvisionError("fabric: no host in the inventory has provision_profile, so no node to discover from")
    else:
        dumps, names = live_dumps(node, profile)
    found = discover.fabric_from_dumps(dumps, hosts, names, warn=lambda line: err(f"provision: warning: {line}"))
    expected = _expected_width_speed(profile, found, err)
    view = fabric_text.view(found, expected)
    if as_json:
        out(json.dumps({"expected_width_speed": expected, **view}, indent=1))
    else:
        for line in fabric_text.lines(view, expected):
            out(line)
    return ExitStatus.OK


def read_dumps(files: list[str]) -> list[tuple[str, str]]:
    """(file, text) per file, read up to one character past the parsers' bound (so /dev/zero or a FIFO
    that never ends is refused by the parser's size check, not read into memory). Raises ProvisionError
    naming an unreadable one."""
    from provision.parsers import MAX_TEXT_CHARS

    dumps = []
    for file in files:
        try:
            with open(file, encoding="utf-8", errors="replace") as handle:
                dumps.append((file, handle.read(MAX_TEXT_CHARS + 1)))
        except OSError as exc:
            raise ProvisionError(f"{file}: cannot read: {exc.strerror or exc}") from None
    return dumps


def live_dumps(host, profile) -> tuple[list[tuple[str, str]], list[str]]:
    """``ibnetdiscover -C <dev> -P 1`` on ``host`` per HCA device of ``profile``: (source, text) and plane names.
    The tool's stderr (ibwarn/SMP error lines) leads the text, so the parser reports it."""
    from provision.fabric.model import hca_names

    try:
        devices = hca_names(profile)
    except (KeyError, TypeError):
        raise ProfileError(f"host {host.name}: profile {host.profile} has no hca devices to discover from") from None
    conn = SshTransport().connect(host)
    dumps = []
    try:
        for dev in devices:
            argv = ["ibnetdiscover", "-C", dev, "-P", "1"]
            result = conn.run(argv, IBNETDISCOVER_TIMEOUT_S)
            if result.rc != 0:
                said = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1][:200]
                raise CommandError(f"host {host.name}: {' '.join(argv)} exited {result.rc}: {said}")
            dumps.append((f"{host.name}: {' '.join(argv)}", result.stderr + result.stdout))
    finally:
        conn.close()
    return dumps, devices


def _expected_width_speed(profile, found, err) -> str | None:
    """The profile's HCA rate as width and speed, else the cables' most common (and say so)."""
    from provision.fabric import discover, model

    rate = profile.hca.rate_Gbps if profile is not None else None
    if rate:
        try:
            return model.width_speed_for(float(rate))
        except ValueError as exc:
            raise ProfileError(f"profile {profile.name}: hca.rate_Gbps: {exc}") from None
    common = discover.common_width_speed(found)
    err(f"provision: note: no hardware profile: cables are judged against the most common width and speed "
        f"among them, {common}")
    return common
