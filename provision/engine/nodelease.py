"""The node lock's lease (``provision.engine.hostlock``): a node lock ends by itself when its controller vanishes.

The node's lock is a flock held by a keeper over the controller's SSH connection. A controller that dies in a
way that closes the connection (``kill -9``, a crash) ends its keepers at once; one that vanishes without
closing TCP (a power cut, a network partition, a hung VM) used to keep them until sshd's TCP keepalive gave
up on the connection: about two hours with Linux's defaults. So the keeper holds the flock only while its
lease is renewed:

- the keeper writes ``<dir>/lease.<token>`` (``<expiry> <keeper pid>``) when it takes the lock, and every
  ``TICK_S`` compares the expiry with the node's clock; past it, it writes the holder's line to
  ``<dir>/expired`` and ends, which drops the flock;
- the controller renews every lease it holds every ``RENEW_S`` (``Renewer``, a thread of the job): ``RENEW``
  run over the same connection sets the expiry to the node's now + ``LEASE_S``;
- the next run's keeper that takes the lock finds ``expired``, and the controller says whose lease it took
  over (``RENEW``'s first run prints it).

Both clocks are the node's ``CLOCK`` (``/proc/uptime``: seconds since boot, which no NTP step or date change
moves), so the controller's and the node's clocks never meet. The controller judges its own leases with its
monotonic clock: one not renewed for ``LEASE_S`` has surely ended on the node (its expiry was set before the
controller's last successful renewal returned), and is said lost.
"""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from provision.engine.transport import CommandResult, Connection

# How long a node stays locked after its controller vanished. A lease that ends under a live run lets another
# run measure the node with it (false failures, then drains); one that ends late leaves a node idle for a few
# minutes after a crash. So long: 5 minutes, against sshd's ~2 hours before.
LEASE_S = 300
# How often the controller renews: a fifth of the lease (the kubelet renews its node Lease at a quarter), so that
# four renewals in a row can fail (a congested management network, a controller busy for a minute) before a
# live run's lease ends. 1,250 nodes: about 21 short commands a second, next to the burn-in's own.
RENEW_S = 60
RENEW_TIMEOUT_S = 30  # one renewal's bound: well under RENEW_S, so a hung one never overlaps the next round's
# How often the keeper looks at its lease: it ends at most this late; a read of two small files per node.
TICK_S = 5
CLOCK = "/proc/uptime"  # the node's clock (its first field: seconds since boot)
RENEW_WORKERS = 64  # renewals run at once (as hostlock.MARK_WORKERS)
LOST = 75  # RENEW's exit status when the lease is no longer held on the node
# $1 the lock folder, $2 the lease's token, $3 LEASE_S, $4 CLOCK. Exit LOST when the keeper is gone; else the
# new expiry is written whole (a temporary file renamed), then the line of a holder whose expired lease this
# keeper took over, once.
RENEW = ('d=$1 t=$2 l=$3 c=$4\n'
         f'read e p < "$d/lease.$t" && kill -0 "$p" 2>/dev/null || exit {LOST}\n'
         'read u _ < "$c" || exit 71\n'
         'echo "$(( ${u%%.*} + l )) $p" > "$d/lease.$t.new" && mv -f "$d/lease.$t.new" "$d/lease.$t" || exit 71\n'
         'if [ -f "$d/took.$t" ]; then cat "$d/took.$t"; rm -f "$d/took.$t"; fi\n')


def renew_argv(folder: str, token: str) -> list[str]:
    """``RENEW`` for the lease ``token`` in the node's lock ``folder``."""
    return ["sh", "-c", RENEW, "provision-renew", folder, token, str(int(LEASE_S)), CLOCK]


def keeper_args(token: str) -> list[str]:
    """The keeper's lease arguments after its folder and holder line: token, lease, tick, clock."""
    return [token, str(int(LEASE_S)), f"{TICK_S:g}", CLOCK]


def renew(conn: Connection, folder: str, token: str) -> CommandResult:
    """One renewal over ``conn``. Raises CommandError when the connection fails."""
    return conn.run(renew_argv(folder, token), RENEW_TIMEOUT_S)


@dataclass
class Lease:
    """A node lock's lease: the connection its keeper runs on, its token, and when (the controller's clock) the
    node last took a renewal."""

    conn: Connection
    folder: str
    token: str
    renewed: float


class Renewer:
    """The leases of one job's node locks, renewed every ``RENEW_S`` by a daemon thread from the first ``add``
    until ``close``. ``say`` gets one line per lease lost (``clock``: the controller's monotonic clock)."""

    def __init__(self, say: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.say = say or (lambda text: print(text, file=sys.stderr))
        self.clock = clock
        self.leases: dict[str, Lease] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, host: str, conn: Connection, folder: str, token: str) -> None:
        """Renew ``host``'s lease from now on (its keeper just took the lock and its first renewal was taken)."""
        with self.lock:
            self.leases[host] = Lease(conn, folder, token, self.clock())
            if self.thread is None or not self.thread.is_alive():
                self.stop = threading.Event()
                self.thread = threading.Thread(target=self._loop, args=(self.stop,), name="node lock leases",
                                               daemon=True)
                self.thread.start()

    def close(self) -> None:
        """Renew nothing more (the keepers are being let go)."""
        with self.lock:
            self.stop.set()
            self.leases = {}

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(RENEW_S):
            self.round()

    def round(self) -> None:
        """Renew every lease once, at most ``RENEW_WORKERS`` at a time, and judge each outcome (``judge``)."""
        with self.lock:
            due = list(self.leases.items())
        if not due:
            return
        with ThreadPoolExecutor(max_workers=min(RENEW_WORKERS, len(due))) as pool:
            outcomes = list(pool.map(lambda item: _attempt(item[1]), due))
        for (host, lease), outcome in zip(due, outcomes):
            self.judge(host, lease, outcome)

    def judge(self, host: str, lease: Lease, outcome: CommandResult | None) -> None:
        """One renewal's outcome (None: the connection failed): renewed; lost (said, and renewed no more) when the
        node says the lease ended or it was not renewed for ``LEASE_S``; dropped without a word when its
        connection was closed (the burn-in is done with the host, or the node rebooted: its keeper ended with
        it); else tried again next round."""
        now = self.clock()
        with self.lock:
            if self.leases.get(host) is not lease:  # let go, or taken anew (a rebooted node) meanwhile
                return
            if outcome is not None and outcome.rc == 0:
                lease.renewed = now
                return
            closed = outcome is None and not getattr(lease.conn, "alive", lambda: True)()
            lost = outcome is not None and outcome.rc == LOST
            if not (closed or lost or now - lease.renewed >= LEASE_S):
                return
            del self.leases[host]
        if not closed:
            why = "the node says it ended" if lost else f"not renewed for {now - lease.renewed:.0f} s"
            self.say(f"provision: warning: host {host}: node lock lease lost ({why}; it lasts {LEASE_S} s "
                     f"unrenewed); another run may take the node while this one measures it")


def _attempt(lease: Lease) -> CommandResult | None:
    try:
        return renew(lease.conn, lease.folder, lease.token)
    except Exception:  # noqa: BLE001 - a connection that failed or was closed: judged as such, never raised here
        return None

