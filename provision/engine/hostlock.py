"""Hosts taken by a run: a lock per inventory host on the controller, and a marker on each node.

Two runs on the same nodes measure each other (two ``ib_write_bw`` on one HCA each see half the
bandwidth: false failures, then drains), so an install or burn-in first takes its hosts:

1. **On the controller**: ``fcntl.flock`` on ``<runs>/.locks/<host>.lock``, one file per inventory host,
   in the runs folder (``paths.RUNS``, ``$PROVISION_RUNS_DIR``): where the runs it names are, writable by
   whoever can run the job, no root needed. Every run of that runs folder on this machine sees it.
2. **On the node** (burn-in): ``/run/provision/lock`` (``$PROVISION_NODE_LOCK_DIR`` overrides the folder),
   flock'ed by a small keeper the run starts over its own SSH connection (util-linux ``flock``, then ``cat``
   reading the SSH channel); ``/run/provision/holder`` beside it names the run. Another controller, another
   runs folder or another user sees it. ``burnin --local`` takes the same flock in-process.

What a second run is told comes from the holder's text (run id, controller, PID, user, start). A flock
belongs to an open file and the kernel drops it when its process ends, however it ends (``kill -9``
included): the controller's lock ends with the job's process; the node's ends with the keeper, and the
keeper ends when the controller's connection does (sshd closes the channel's pipe and ``cat`` reads end of
file); ``/run`` is a tmpfs, so a reboot clears it too. A holder file left behind by a crash names nobody:
only the held flock counts. This is the model of a Slurm node's job (slurmd reports the job's processes; the
job ends with them). It leaves one case: a controller that vanishes without closing its TCP connection (a
power cut, a partition) would keep the node's lock until sshd's TCP keepalive dropped it (about two hours
with Linux's defaults). So the node's keeper also holds a lease the controller renews (``nodelease``: a
Kubernetes Lease's renew-or-expire, over the connection the flock is tied to): not renewed for
``nodelease.LEASE_S``, the keeper lets the lock go, and the run that takes it next says whose lease it took
over. Every keeper ends after ``KEEPER_S`` at most.
"""
from __future__ import annotations

import datetime as dt
import contextlib
import fcntl
import getpass
import json
import os
import secrets
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

from provision.engine import nodelease
from provision.engine.transport import Connection, Process
from provision.errors import CommandError, ExitStatus, ProvisionError

LOCKS = ".locks"  # under the runs folder; a run id starts with a letter or digit, so never this
NODE_DIR = "/run/provision"
KEEPER_S = 7 * 24 * 3600  # the keeper's own bound (its timeout wrapper): longer than any burn-in
READY_S = 30.0  # a keeper that has not said "locked" by then never will
POLL_S = 2.0  # --wait: how often held hosts are tried again
LOCKED, TAKEN = "provision-locked", "provision-taken"  # the keeper's first line
# $1 the folder, $2 the holder's line, then the lease (nodelease.keeper_args): $3 its token, $4 LEASE_S, $5 TICK_S,
# $6 the node's clock. Holds the flock on fd 9 (this shell's only) while `cat` reads the channel (its stdin, kept
# on fd 3: a background command's stdin is otherwise /dev/null) and a watcher compares the lease's expiry with
# the clock every tick; when the channel ends (cat: 0), or the lease does (the watcher writes the holder's line to
# `expired` and stops cat), it removes its files (still holding the lock) and exits, which drops it. The next
# keeper to take the lock keeps `expired` as `took.<token>`, for its first renewal to print. The watcher ends with
# the keeper (`kill -0 $$`): one left behind by a keeper killed alone would name the next holder in `expired`.
KEEPER = ('d=$1 t=$3 l=$4 s=$5 c=$6; mkdir -p "$d" && exec 9>>"$d/lock" || exit 71\n'
          f'if ! flock -n 9; then echo {TAKEN}; cat "$d/holder" 2>/dev/null; exit 75; fi\n'
          'rm -f "$d"/lease.* "$d"/took.*; if [ -f "$d/expired" ]; then mv -f "$d/expired" "$d/took.$t"; fi\n'
          'read u _ < "$c" && echo "$(( ${u%%.*} + l )) $$" > "$d/lease.$t" || exit 71\n'
          'printf "%s\\n" "$2" > "$d/holder.$$" && mv -f "$d/holder.$$" "$d/holder" || exit 71\n'
          'exec 3<&0; cat <&3 >/dev/null 2>&1 3<&- 9>&- & k=$!; exec 3<&-\n'
          '(while sleep "$s" && kill -0 $$; do\n'
          ' read e p < "$d/lease.$t" && read u _ < "$c" && [ "${u%%.*}" -lt "$e" ] && continue\n'
          ' cp "$d/holder" "$d/expired"; kill "$k"; exit; done) </dev/null >/dev/null 2>&1 9>&- & w=$!\n'
          f'echo {LOCKED}\n'
          'wait "$k"; r=$?; kill "$w" 2>/dev/null; if [ "$r" = 0 ]; then rm -f "$d/expired"; fi\n'
          'rm -f "$d/holder" "$d/lease.$t" "$d/took.$t"\n')


class HostsBusy(ProvisionError):
    """Some of the hosts are taken by another run (exit ``ExitStatus.BUSY``)."""

    exit_status = ExitStatus.BUSY


def holder(run_id: str, phases) -> dict:
    """What a refused run is told about this one."""
    return {"run": run_id, "controller": socket.gethostname(), "pid": os.getpid(), "user": _user(),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "phases": list(phases)}


def describe(text: str) -> str:
    """``run R (controller C, pid P, since T)`` from a holder's line; 'another run' when unreadable (being
    written, or left by a version without it)."""
    try:
        data = json.loads(text)
        return (f"run {data['run']} (controller {data['controller']}, pid {data['pid']}, user {data['user']}, "
                f"since {data['started']})")
    except (ValueError, KeyError, TypeError):
        return "another run"


@dataclass
class Held:
    """The locks one job holds; ``release`` lets them all go (idempotent)."""

    files: dict[str, int] = field(default_factory=dict)  # host -> the open lock file's descriptor
    keepers: dict[str, Process] = field(default_factory=dict)  # host -> the keeper on the node
    conns: dict[str, Connection] = field(default_factory=dict)  # host -> its connection, until the burn-in takes it
    failed: dict[str, CommandError] = field(default_factory=dict)  # host -> why it could not be reached (once)
    local: int | None = None
    line: str = ""  # the holder line the node locks were taken with (to take one again after a reboot)
    renewer: nodelease.Renewer = field(default_factory=nodelease.Renewer)  # the node locks' leases

    def release(self) -> None:
        self.renewer.close()
        for closing in [*(k.close for k in self.keepers.values()), *(c.close for c in self.conns.values())]:
            try:
                closing()
            except Exception:  # noqa: BLE001 - a connection already gone: its keeper ended with it
                pass
        if self.local is not None:
            _release_local(self.local)
        for fd in self.files.values():
            os.close(fd)  # drops the flock
        self.files, self.keepers, self.conns, self.failed, self.local = {}, {}, {}, {}, None


class Reusing:
    """A transport handing the burn-in the connections ``mark_nodes`` opened (each once), else new ones."""

    def __init__(self, transport, held: Held):
        self.transport, self.held = transport, held

    def connect(self, host):
        """The connection ``mark_nodes`` opened; where it could not, its failure, as the burn-in's first
        attempt (its retries connect anew), so an unreachable node's timeout is not paid twice in a row."""
        failed = self.held.failed.pop(host.name, None)
        if failed is not None:
            raise failed
        conn = self.held.conns.pop(host.name, None)
        if conn is not None and not getattr(conn, "alive", lambda: True)():
            # The node rebooted since its lock was taken (`provision run`: the driver role reboots it): its keeper
            # and this connection ended with that boot. Take its node lock again over a new connection.
            self.held.keepers.pop(host.name, None)
            with contextlib.suppress(Exception):
                conn.close()
            outcome = _mark(host, self.transport, self.held.line, self.held) if self.held.line else None
            if outcome is not None and outcome[0] == "busy":  # ("took", ...): a rebooted node's /run has none
                raise CommandError(f"host {host.name}: taken by {outcome[1]} while it rebooted")
            failed = self.held.failed.pop(host.name, None)
            if failed is not None:
                raise failed
            conn = self.held.conns.pop(host.name, None)
        return conn if conn is not None else self.transport.connect(host)


def take_controller(folder: Path, hosts: list[str], line: str, wait_s: float, fold: Callable, say) -> Held:
    """Flock every host's file under ``folder`` (non-blocking), or raise HostsBusy naming the runs that
    hold some and those hosts (``fold`` writes them as a hostlist); with ``wait_s`` > 0 try again every
    ``POLL_S`` up to then, saying so once. On refusal nothing stays held."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    held, deadline, said = Held(), time.monotonic() + wait_s, False
    while True:
        busy: dict[str, list[str]] = {}
        for host in hosts:
            if host in held.files:
                continue
            fd = os.open(folder / (quote(host, safe="") + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy.setdefault(describe(os.pread(fd, 4096, 0).decode(errors="replace")), []).append(host)
                os.close(fd)
                continue
            _write(fd, line)
            held.files[host] = fd
        if not busy:
            return held
        said = _wait_turn(busy, deadline, said, held, fold, wait_s, say)
        time.sleep(POLL_S)


MARK_WORKERS = 64  # connections opened at once: the burn-in's own bound (provision.engine.burnin.CONNECTS_AT_ONCE)


def mark_nodes(hosts: list, transport, line: str, wait_s: float, fold: Callable, say, held: Held) -> None:
    """Connect to every host and take its node lock over that connection (its keeper); the connections stay
    in ``held.conns`` for the burn-in to use. A host that cannot be reached is left to the burn-in (which
    names it unreachable); one whose node cannot keep a lock (no ``flock``, ``/run`` not writable) is said
    and burned in unmarked. A node whose last holder's lease had expired is taken, saying whose (one line per
    holder). Every lock taken is renewed (``held.renewer``) until ``held.release``. Raises HostsBusy (having
    released everything in ``held``) when some stay taken."""
    deadline, said, todo = time.monotonic() + wait_s, False, list(hosts)
    held.renewer.say = say
    with ThreadPoolExecutor(max_workers=max(1, min(MARK_WORKERS, len(hosts)))) as pool:
        while True:
            busy: dict[str, list[str]] = {}
            took: dict[str, list[str]] = {}
            for host, outcome in zip(todo, pool.map(lambda h: _mark(h, transport, line, held), todo)):
                if outcome is not None and outcome[0] in ("busy", "took"):
                    (busy if outcome[0] == "busy" else took).setdefault(outcome[1], []).append(host.name)
                elif outcome is not None:
                    say(f"provision: warning: host {host.name}: no node lock ({outcome[1]}); "
                        "only this controller's lock keeps other runs off it")
            for who, names in took.items():
                say(f"provision: warning: {fold(names)}: took over the node lock of {who}: its lease had expired "
                    f"(not renewed for {nodelease.LEASE_S} s: its controller vanished or was cut off)")
            if not busy:
                return
            said = _wait_turn(busy, deadline, said, held, fold, wait_s, say)
            todo = [h for h in hosts if h.name in {n for names in busy.values() for n in names}]
            time.sleep(POLL_S)


def _wait_turn(busy: dict[str, list[str]], deadline: float, said: bool, held: Held, fold: Callable, wait_s: float,
               say) -> bool:
    """One more turn of waiting for ``busy`` hosts: past ``deadline`` release ``held`` and raise HostsBusy;
    else say the wait once (returns True: said)."""
    if time.monotonic() >= deadline:
        held.release()
        raise HostsBusy(refusal(busy, fold, wait_s))
    if not said:
        say(f"provision: {waiting(busy, fold)}; waiting up to {wait_s:.0f} s (--wait)")
    return True


def _mark(host, transport, line: str, held: Held) -> tuple[str, str] | None:
    """None when held (or unreachable: the burn-in says so); ("took", whose expired lease) when held too;
    ("busy", who) or ("none", why)."""
    conn = held.conns.get(host.name)
    if conn is None:
        try:
            conn = held.conns[host.name] = transport.connect(host)
        except CommandError as exc:
            held.failed[host.name] = exc  # the burn-in's first attempt (Reusing)
            return None
    folder, token = node_dir(), secrets.token_hex(8)
    try:
        keeper = conn.start(["sh", "-c", KEEPER, "provision-lock", folder, line, *nodelease.keeper_args(token)],
                            KEEPER_S)
    except CommandError:
        return None
    if keeper.read_until(LOCKED, READY_S):
        return _leased(host.name, conn, keeper, folder, token, held)
    done = keeper.close()  # it ended (its output is all there), or said nothing in READY_S
    lines = done.stdout.strip().splitlines()
    if lines and lines[0] == TAKEN:
        return "busy", describe(lines[-1] if len(lines) > 1 else "")
    why = (done.stderr.strip() or done.stdout.strip() or f"no answer in {READY_S:.0f} s").splitlines()[-1]
    return "none", why[:200]


def _leased(name: str, conn: Connection, keeper: Process, folder: str, token: str,
            held: Held) -> tuple[str, str] | None:
    """The keeper said it holds the lock: renew its lease once now (a node where that fails keeps no lock: the
    lease would end under the run) and hand it to ``held.renewer``. ("took", whose) when the first renewal
    printed an expired holder's line; ("none", why) when it failed."""
    try:
        first = nodelease.renew(conn, folder, token)
        why = "" if first.rc == 0 else (first.stderr.strip() or f"exit {first.rc}").splitlines()[-1]
    except CommandError as exc:
        first, why = None, str(exc)
    if first is None or why:
        keeper.close()
        return "none", f"its lease cannot be renewed: {why}"[:200]
    held.keepers[name] = keeper
    held.renewer.add(name, conn, folder, token)
    took = first.stdout.strip().splitlines()
    return ("took", describe(took[-1])) if took else None


def take_local(line: str, fold: Callable, host: str, held: Held) -> None:
    """``burnin --local``: this machine's node lock, taken in-process. Raises HostsBusy when held elsewhere;
    says nothing and takes nothing when the folder cannot be written (not root)."""
    folder = Path(node_dir())
    try:
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        try:
            who = describe((folder / "holder").read_text(errors="replace").strip())
        except OSError:
            who = "another run"
        held.release()
        raise HostsBusy(refusal({who: [host]}, fold, 0.0)) from None
    tmp = folder / f"holder.{os.getpid()}"
    tmp.write_text(line + "\n")
    os.replace(tmp, folder / "holder")
    held.local = fd


def _release_local(fd: int) -> None:
    try:
        os.unlink(Path(node_dir()) / "holder")
    except OSError:
        pass
    os.close(fd)


def node_dir() -> str:
    return os.environ.get("PROVISION_NODE_LOCK_DIR") or NODE_DIR


def refusal(busy: dict[str, list[str]], fold: Callable, wait_s: float) -> str:
    waited = f" (waited {wait_s:.0f} s)" if wait_s > 0 else " (--wait [SECONDS] waits for them)"
    return f"{waiting(busy, fold)}: not starting{waited}"


def waiting(busy: dict[str, list[str]], fold: Callable) -> str:
    return "; ".join(f"{fold(hosts)} taken by {who}" for who, hosts in busy.items())


def _write(fd: int, line: str) -> None:
    data = (line + "\n").encode()
    os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        view = view[os.pwrite(fd, view, len(data) - len(view)):]


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
