"""The burn-in engine's way to the nodes' BMCs (``provision.engine.outofband.OutOfBand``), over this package.

``BmcAccess(insecure, since, boot_id_of)``: ``connect(host, booted)`` gives the ``BmcConnection`` the ``bmc`` check's
steps run through (its SEL answer carries ``since``: the node's last boot or the run's start, whichever is earlier,
which the check judges from); ``view(host)`` the one
line a lost node's findings carry; ``power_cycle(hosts, say)`` the recovery's power cycle (``provision.bmc.power``,
confirmed by a new boot id read over SSH).
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Callable, Mapping, Sequence

from provision.bmc import client, config
from provision.bmc.transport import BmcConnection
from provision.engine.outofband import Cycled
from provision.engine.transport import CommandResult
from provision.errors import BmcError

VIEW_TIMEOUT_S = 15.0  # one request of the view of a lost node: its findings wait for it
BOOT_ID_TIMEOUT_S = 10.0  # `cat` of one small file on a node that answers
VIEW_ENTRIES = 3  # the last event-log entries a lost node's finding names


class WindowedConnection(BmcConnection):
    """A ``BmcConnection`` whose SEL answer says from when the run judges it (``since``, ISO 8601 UTC)."""

    def __init__(self, cfg: config.BmcConfig, since: datetime):
        super().__init__(cfg)
        self.since = since

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        result = super().run(argv, timeout_s)
        if result.rc != 0 or argv[1:] != ["sel"]:
            return result
        try:
            doc = json.loads(result.stdout)
        except ValueError:
            return result  # the parser says what is wrong with it
        if isinstance(doc, dict):
            doc["since"] = self.since.isoformat()
            return CommandResult(result.argv, 0, json.dumps(doc, indent=1), result.stderr, result.duration_s, False)
        return result


class BmcAccess:
    """The nodes' BMCs for one burn-in (module docstring). ``boot_id_of(host) -> str | None`` reads a node's boot id
    over SSH (None when it does not answer)."""

    def __init__(self, insecure: bool, since: datetime, boot_id_of: Callable[[object], str | None]):
        self.insecure, self.since, self.boot_id_of = insecure, since, boot_id_of

    def connect(self, host, booted: datetime | None = None) -> BmcConnection | None:
        """The node's BMC connection, its event log judged from ``booted`` (the node's last boot, as it said) or the
        run's start, whichever is earlier: an entry logged since the node booted is the node's present state."""
        cfg = config.of(host, self.insecure)
        return None if cfg is None else WindowedConnection(cfg, min(self.since, booted) if booted else self.since)

    def view(self, host) -> str:
        cfg = config.of(host, self.insecure)
        if cfg is None:
            return ""
        where = f"BMC {cfg.address} ({cfg.protocol})"
        try:
            bmc = client.connect(cfg, VIEW_TIMEOUT_S)
        except BmcError as exc:
            return f"{where}: did not answer: {_tail(exc)}"
        try:
            status = bmc.status()
            line = (f"{where}: power {status.get('power_state')}, health {status.get('health')}")
            try:
                entries = bmc.log(limit=VIEW_ENTRIES)
            except BmcError as exc:
                return f"{line}; event log not read: {_tail(exc)}"
            said = "; ".join(f"{e.get('created')} {e.get('severity')} {e.get('message')!r}"
                             + (f" ({e.get('sensor')})" if e.get("sensor") else "") for e in entries)
            return f"{line}; last event log entries: {said}" if said else f"{line}; event log empty"
        except BmcError as exc:
            return f"{where}: {_tail(exc)}"
        finally:
            bmc.close()

    def power_cycle(self, hosts: Sequence, say: Callable[[str], None],
                    known: Mapping[str, str] | None = None) -> list[Cycled]:
        """Cycle ``hosts`` in the batches their power allows (``power.batch_defaults``: the plan's rack budget over
        the profile's node power), each done only on a boot id other than its last known one (``known``: the
        node's, as the run read it, for the before-read of a node that no longer answers)."""
        from provision.bmc import power

        first: set[str] = set()

        def boot_id_of(host) -> str | None:
            seen = self.boot_id_of(host)
            if host.name not in first:  # the read before the action: a hung node's last known boot id
                first.add(host.name)
                return seen or (known or {}).get(host.name)
            return seen

        batch, stagger = power.batch_defaults(list(hosts))
        rows = power.power_batches(list(hosts), "cycle", batch=batch, stagger_s=stagger,
                                   bmc_of=lambda h: config.of(h, self.insecure), boot_id_of=boot_id_of,
                                   timeout_s=power.DEFAULT_TIMEOUT_S, say=say)
        return [Cycled(host=r["host"], outcome=r["outcome"], detail=r.get("detail") or "",
                       before_boot_id=r.get("before_boot_id"), after_boot_id=r.get("after_boot_id"),
                       seconds=r.get("seconds"), bmc=r.get("bmc") or "") for r in rows]


def ssh_boot_id(transport) -> Callable[[object], str | None]:
    """``boot_id_of(host)``: the node's boot id (its ``provision_boot_id_path``, read over a fresh SSH connection of
    ``transport``), or None when the node does not answer or the file cannot be read."""
    from provision.errors import CommandError

    def boot_id_of(host) -> str | None:
        cfg = config.of(host)
        path = cfg.boot_id_path if cfg is not None else config.DEFAULT_BOOT_ID_PATH
        try:
            conn = transport.connect(host)
        except CommandError:
            return None
        try:
            result = conn.run(["cat", path], BOOT_ID_TIMEOUT_S)
        except CommandError:
            return None
        finally:
            conn.close()
        text = result.stdout.strip()
        return text.splitlines()[0][:64] if result.rc == 0 and text else None
    return boot_id_of


def _tail(exc: Exception) -> str:
    """A BmcError's words after "HOST: BMC ADDRESS: " (the view already names the BMC)."""
    text = " ".join(str(exc).split())
    parts = text.split(": ", 2)
    return parts[2] if len(parts) == 3 and parts[1].startswith("BMC ") else text
