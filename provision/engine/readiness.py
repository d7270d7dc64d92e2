"""When a server is ready for its client: it printed its listening line, and its host has a
TCP socket listening on its port.

Both, because perftest prints "Waiting for client to connect..." before it calls listen()
(perftest's perftest_communication.c: the banner comes before ethernet_server_connect()), so
the line alone still races; the port alone cannot tell a new server from a stale one that
another job left. The port is read from /proc/net/tcp and /proc/net/tcp6 (proc(5): local
address and port in hex, state 0A = LISTEN), which every Linux node has, rather than from
``ss``, which minimal images lack.
"""
from __future__ import annotations

import ipaddress
import time

from provision.checks.base import Ready
from provision.engine.transport import Connection, Process

POLL_S = 0.05
LISTEN = "0A"
WILDCARDS = {"0.0.0.0", "::"}


def wait_ready(server: Process, conn: Connection, ready: Ready, address: str, timeout_s: float) -> str:
    """Wait until ``server`` is ready by ``ready``'s rules; '' when it is, else why not."""
    deadline = time.monotonic() + timeout_s
    if ready.line and not server.read_until(ready.line, timeout_s):
        return f"the server did not print {ready.line!r} within {timeout_s:.0f} s"
    while ready.port is not None:
        listing = conn.run(["cat", "/proc/net/tcp", "/proc/net/tcp6"], max(1.0, deadline - time.monotonic()))
        if listening(listing.stdout, ready.port, address):
            return ""
        if time.monotonic() > deadline:
            return f"nothing listened on TCP port {ready.port} within {timeout_s:.0f} s"
        time.sleep(POLL_S)
    return ""


def listening(proc_net_tcp: str, port: int, address: str) -> bool:
    """True when a LISTEN row holds ``port`` on the wildcard address or on ``address`` (any
    address when ``address`` is a name, not an IP)."""
    want = _ip(address)
    for line in proc_net_tcp.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[3] != LISTEN or ":" not in fields[1]:
            continue
        local, _, hexport = fields[1].rpartition(":")
        try:
            if int(hexport, 16) != port:
                continue
        except ValueError:
            continue
        bound = _decode(local)
        if want is None or bound in WILDCARDS or bound == want:
            return True
    return False


def _ip(address: str) -> str | None:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


def _decode(hexaddr: str) -> str:
    """/proc/net/tcp's address: 8 hex digits (IPv4, host byte order) or 32 (IPv6, four words)."""
    try:
        raw = bytes.fromhex(hexaddr)
    except ValueError:
        return ""
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # little-endian x86/arm hosts
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    return str(ip)
