"""Jump host transports are shared (at most ``per_jump`` nodes each, the last node closes them),
chained for several hops, and one failed attempt answers every node that waited for it. The
handshake is replaced by a fake: what is counted is how many transports are opened, to where."""
import threading
import time

import paramiko
import pytest

from provision.engine import sshlink
from provision.engine.sshconfig import Target


def target(name, via=None):
    return Target(name=name, hostname=f"127.0.9.{len(name)}", port=22, user="root", identity_files=(),
                  certificate_files=(), known_hosts_files=(), host_key_alias=None, identity_agent=None,
                  identities_only=True, proxy_command=None, via=via)


class FakeTransport:
    def __init__(self, to, sock):
        self.to, self.sock, self.active, self.channels = to, sock, True, 0

    def open_channel(self, kind, dest, src, timeout):
        assert kind == "direct-tcpip" and self.active
        self.channels += 1
        return FakeChannel(dest)

    def is_active(self):
        return self.active

    ident = None  # no reader thread

    def close(self):
        self.active = False


class FakeChannel:
    def __init__(self, dest):
        self.dest = dest
        self.in_buffer = paramiko.buffered_pipe.BufferedPipe()

    def close(self):
        pass


@pytest.fixture
def opened(monkeypatch):
    made = []

    def handshake(t, sock):
        made.append(FakeTransport(t.name, sock))
        return made[-1]

    monkeypatch.setattr(sshlink, "_handshake", handshake)
    monkeypatch.setattr(sshlink.socket, "create_connection", lambda addr, timeout: ("tcp", addr))
    return made


def test_nodes_share_jump_transports(opened):
    links = sshlink.Links(per_jump=2)
    bastion = target("bastion")
    nodes = [links.open(target(f"node{i}", via=bastion)) for i in range(5)]
    jumps = [t for t in opened if t.to == "bastion"]
    assert [t.channels for t in jumps] == [2, 2, 1] and all(t.sock == ("tcp", ("127.0.9.7", 22)) for t in jumps)
    assert [n.transport.sock.channel.dest for n in nodes] == [("127.0.9.5", 22)] * 5
    for n in nodes[:4]:
        n.close()
    assert [t.active for t in jumps] == [False, False, True]
    nodes[4].close()
    assert not any(t.active for t in opened)


def test_several_hops_chain(opened):
    links = sshlink.Links()
    outer = target("outer")
    inner = target("inner1", via=outer)
    a, b = links.open(target("nodeA", via=inner)), links.open(target("nodeB", via=inner))
    assert [t.to for t in opened] == ["outer", "inner1", "nodeA", "nodeB"]
    assert opened[1].sock.channel.dest == (inner.hostname, 22) and opened[2].sock.channel.dest == ("127.0.9.5", 22)
    a.close()
    b.close()
    assert not any(t.active for t in opened)


def test_one_failed_attempt_answers_the_nodes_that_waited(monkeypatch):
    attempts = []

    def handshake(t, sock):
        attempts.append(t.name)
        time.sleep(0.2)  # every other node asks meanwhile
        raise sshlink.Refused("host key for 127.0.9.7 does not match known_hosts (kh:1)")

    monkeypatch.setattr(sshlink, "_handshake", handshake)
    monkeypatch.setattr(sshlink.socket, "create_connection", lambda addr, timeout: ("tcp", addr))
    links, bastion, errors = sshlink.Links(), target("bastion"), []

    def node(i):
        try:
            links.open(target(f"node{i}", via=bastion))
        except sshlink.Refused as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=node, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert attempts == ["bastion"] and len(errors) == 8
    assert set(errors) == {"jump host bastion (127.0.9.7:22): host key for 127.0.9.7 does not match known_hosts (kh:1)"}
    node(9)  # a later attempt (the burn-in's retry) tries again
    assert attempts == ["bastion", "bastion"]


def test_a_tunnel_closes_after_its_transport_s_reader_ended(opened, monkeypatch):
    """paramiko closes a transport's socket while its reader may still write; the channel must
    close only after that reader ended, or sshd drops the whole bastion connection."""
    order = []
    monkeypatch.setattr(FakeChannel, "close", lambda self: order.append("channel closed"))
    monkeypatch.setattr(FakeTransport, "ident", 1, raising=False)
    monkeypatch.setattr(FakeTransport, "join", lambda self, timeout: order.append(f"{self.to} reader joined"),
                        raising=False)
    link = sshlink.Links().open(target("node1", via=target("bastion")))
    link.transport.sock.close()  # what paramiko's Transport.close does first: only marks it
    assert order == [] and link.transport.sock.recv(10) == b""
    with pytest.raises(OSError):
        link.transport.sock.send(b"late")
    assert link.transport.sock.channel.in_buffer._closed  # its reader's blocked recv returned at once
    link.close()
    assert order[:2] == ["node1 reader joined", "channel closed"]
