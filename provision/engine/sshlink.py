"""Authenticated paramiko transports to resolved ``Target``s, through their jump hosts.

``Links.open(target) -> Link`` reaches ``target`` as OpenSSH would (``sshconfig.py``): over its
ProxyCommand (``paramiko.ProxyCommand``, run by ``/bin/sh -c exec ...`` as ssh runs it), else
over a ``direct-tcpip`` channel of its last jump host's transport (chained for several hops),
else over TCP. Every transport offers only the host key algorithms its target's HostKeyAlgorithms
allows (OpenSSH's default list ordered by what known_hosts holds, as OpenSSH orders it), its host
key is checked strictly against the target's own known_hosts files and trust policy
(``knownhosts.py``), the jump hosts' too, and it logs in with public keys (``sshauth.py``).

Jump host transports are shared: a node's link leases a channel on one, a transport serves at
most ``CHANNELS_PER_JUMP`` nodes, and the last lease to end closes it. Concurrent nodes behind a
hop wait for one attempt to reach it, not one each, and share its failure. A refusal
(``Refused``) names the hop and what was refused.
"""
from __future__ import annotations

import logging
import shlex
import socket
import threading
import time
from dataclasses import dataclass, field

import paramiko
from paramiko.ssh_exception import IncompatiblePeer

from provision.engine import knownhosts, sshauth
from provision.engine.sshconfig import Target

CONNECT_TIMEOUT_S = 15.0
# paramiko logs a failed handshake (a node whose sshd never sends its banner: a frozen node) from its transport
# thread at ERROR with the whole traceback, which Python's last-resort handler prints on stderr; the failure is
# already this module's one line (Refused / CommandError), so paramiko's own log says nothing to the operator.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False
# Nodes per jump host transport. sshd's MaxSessions (default 10, sshd_config(5)) counts session
# channels only; a direct-tcpip channel is no session, so it does not bound this. What does:
# each transport is one paramiko thread doing the crypto of every node behind it, and every
# new transport is an unauthenticated start-up against MaxStartups (default 10:30:100). 32 keeps
# 1,250 nodes to 40 bastion connections, opened one after another.
CHANNELS_PER_JUMP = 32
CLOSE_WAIT_S = 5.0  # for a node transport's reader thread to end before its tunnel closes (_Tunnel)


class Refused(Exception):
    """A hop could not be reached, was not trusted or did not let us in; the text says which and why."""


class _Transport(paramiko.Transport):
    """A client transport that asks first for the host key types known_hosts vouches for.

    Its reader thread wakes every ``_active_check_timeout`` seconds when nothing arrives, to see
    whether the transport was closed or the handshake timed out (paramiko's ``Packetizer.read_all``).
    paramiko's 0.1 s is 10,000 wake-ups a second, each taking the GIL, at 1,000 idle nodes; 1 s
    makes it 1,000, and costs at most a second more to notice a handshake past its timeout
    (``CONNECT_TIMEOUT_S``). A tunnel's reader is woken at once on close (``_Tunnel.close``).
    """

    _active_check_timeout = 1.0
    host_key_first: tuple[str, ...] = ()
    host_key_only: tuple[str, ...] | None = None  # HostKeyAlgorithms set in ssh_config, in its order

    @property
    def preferred_keys(self):
        keys = super().preferred_keys
        if self.host_key_only is not None:
            return tuple(k for k in self.host_key_only if k in keys)
        first = tuple(k for k in self.host_key_first if k in keys)
        return first + tuple(k for k in keys if k not in first)


class _Tunnel:
    """A jump host channel as a node transport's socket, whose ``close`` only marks it closed.

    paramiko's Transport.close closes its socket while its reader thread may still be writing;
    on a channel, that thread's data packet can then follow the channel's close, and sshd drops
    the whole jump host connection, every node on it ("data packet referred to nonexistent
    channel", seen at 64 nodes behind one bastion). So ``Link.close`` waits for the reader
    thread to end, and only then closes the channel (``_Lease.release``).
    """

    def __init__(self, channel: paramiko.Channel):
        self.channel, self._closed = channel, False

    def send(self, data: bytes) -> int:
        if self._closed:
            raise OSError("the tunnel is closed")
        return self.channel.send(data)

    def recv(self, size: int) -> bytes:
        return b"" if self._closed else self.channel.recv(size)

    def settimeout(self, timeout_s: float | None) -> None:
        self.channel.settimeout(timeout_s)

    def getpeername(self):
        return self.channel.getpeername()

    def close(self) -> None:
        """Mark the tunnel closed and wake the node transport's reader thread now: closing the
        channel's input buffer (paramiko's ``BufferedPipe.close``, local, nothing is sent) makes
        its blocked ``recv`` return, so ``Link.close`` need not wait for the reader's next timeout."""
        self._closed = True
        self.channel.in_buffer.close()


@dataclass
class Link:
    """An authenticated transport; ``lease`` the jump host channel it rides on, if any."""

    transport: paramiko.Transport
    lease: _Lease | None = None

    def close(self) -> None:
        try:
            self.transport.close()
        except (paramiko.SSHException, OSError, EOFError):
            pass  # its jump host transport is gone already: nothing left to close through it
        if self.lease is not None:
            if self.transport.ident is not None:  # its reader thread was started: let it end first (_Tunnel)
                self.transport.join(CLOSE_WAIT_S)
            self.lease.release()
            self.lease = None


@dataclass
class _Shared:
    link: Link
    users: int = 1


@dataclass
class _Lease:
    links: Links
    shared: _Shared
    channel: paramiko.Channel
    released: bool = field(default=False)

    def release(self) -> None:
        if not self.released:
            self.released = True
            try:
                self.channel.close()
            except (paramiko.SSHException, OSError, EOFError):
                pass  # the jump host transport is gone already

            self.links.release(self.shared)


class Links:
    """Opens links; keeps jump host transports shared (see the module's docstring)."""

    def __init__(self, per_jump: int = CHANNELS_PER_JUMP):
        self.per_jump = per_jump
        self._lock = threading.Lock()
        self._shared: dict[Target, list[_Shared]] = {}
        self._opening: dict[Target, threading.Lock] = {}
        self._failed: dict[Target, tuple[float, str]] = {}

    def open(self, target: Target) -> Link:
        """An authenticated transport to ``target``. Raises Refused (text without the host's name)."""
        sock, lease = self._socket(target)
        try:
            return Link(_handshake(target, sock), lease)
        except Refused as exc:
            if lease is not None:
                lease.release()
            via = f" via {', '.join(h.label for h in target.chain())}" if target.via else ""
            raise Refused(f"({target.hostname}:{target.port}){via}: {exc}") from None

    def _socket(self, target: Target):
        if target.proxy_command:
            try:
                return paramiko.ProxyCommand(shlex.join(["/bin/sh", "-c", f"exec {target.proxy_command}"])), None
            except (paramiko.SSHException, OSError) as exc:
                raise Refused(f"({target.hostname}:{target.port}): ProxyCommand failed: {exc}") from None
        if target.via is not None:
            lease = self._lease(target.via, target.hostname, target.port)
            return _Tunnel(lease.channel), lease
        try:
            return socket.create_connection((target.hostname, target.port), timeout=CONNECT_TIMEOUT_S), None
        except OSError as exc:
            raise Refused(f"({target.hostname}:{target.port}): cannot connect: {exc.strerror or exc}") from None

    def _lease(self, hop: Target, hostname: str, port: int) -> _Lease:
        shared = self._jump(hop)
        try:
            channel = shared.link.transport.open_channel("direct-tcpip", (hostname, port), ("127.0.0.1", 0),
                                                         timeout=CONNECT_TIMEOUT_S)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.release(shared)
            raise Refused(f"({hostname}:{port}) via {hop.label}: the jump host could not open a channel to it: "
                          f"{exc or type(exc).__name__}") from None
        return _Lease(self, shared, channel)

    def _jump(self, hop: Target) -> _Shared:
        """A transport to ``hop`` with room for one more node: shared, else opened (by one thread at a time)."""
        asked = time.monotonic()
        with self._lock:
            opening = self._opening.setdefault(hop, threading.Lock())
        with opening:
            with self._lock:
                for shared in self._shared.get(hop, []):
                    if shared.users < self.per_jump and shared.link.transport.is_active():
                        shared.users += 1
                        return shared
                failed = self._failed.get(hop)
                if failed and failed[0] >= asked:  # another node asked at the same time: its answer stands
                    raise Refused(failed[1])
            try:
                link = self.open(hop)
            except Refused as exc:
                said = str(exc)  # "(address:port)..." of this hop, or an earlier hop's own "jump host ..." line
                text = f"jump host {hop.name}{' ' if said.startswith('(') else ': '}{said}"
                with self._lock:
                    self._failed[hop] = (time.monotonic(), text)
                raise Refused(text) from None
            shared = _Shared(link)
            with self._lock:
                self._shared.setdefault(hop, []).append(shared)
            return shared

    def release(self, shared: _Shared) -> None:
        """One node less on a jump host transport; the last one closes it."""
        with self._lock:
            shared.users -= 1
            if shared.users > 0:
                return
            for same in self._shared.values():
                if shared in same:
                    same.remove(shared)
        shared.link.close()


def _handshake(target: Target, sock) -> paramiko.Transport:
    transport = _Transport(sock)
    transport.host_key_only = target.host_key_algorithms
    try:
        transport.host_key_first = knownhosts.preferred_types(target.key_name, target.known_hosts_files, target.trust)
        try:
            transport.start_client(timeout=CONNECT_TIMEOUT_S)
        except IncompatiblePeer as exc:
            allowed = ",".join(transport.preferred_keys) or "none the burn-in supports"
            raise paramiko.SSHException(f"{exc} (host key algorithms allowed by HostKeyAlgorithms: "
                                        f"{allowed})") from None
        knownhosts.check(transport.get_remote_server_key(), target.key_name, target.principal,
                         target.known_hosts_files, target.trust, target.unported_name)
        sshauth.authenticate(transport, target)
    except (knownhosts.HostKeyRefused, sshauth.Refused) as exc:
        transport.close()
        raise Refused(str(exc)) from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        transport.close()
        raise Refused(f"SSH failed: {exc or type(exc).__name__}") from None
    return transport
