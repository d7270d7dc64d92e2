"""A server is ready when it printed its line and its port listens: never after a sleep."""
from provision.checks.base import Ready
from provision.engine.readiness import listening, wait_ready

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0A01007F:4873 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0B01007F:4874 0C01007F:0016 01 00000000:00000000 00:00000000 00000000     0        0 1 1
   2: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 0 0 0 0 0 0 0
"""


def test_listening_reads_proc_net_tcp_by_port_state_and_address():
    assert listening(TCP, 18547, "127.0.1.10")        # 0x4873 on 127.0.1.10 (little-endian hex)
    assert not listening(TCP, 18547, "127.0.1.11")    # another node's server on the same port
    assert not listening(TCP, 18548, "127.0.1.11")    # an established connection, not LISTEN
    assert listening(TCP, 80, "10.1.2.3")             # the IPv6 wildcard serves every address
    assert not listening("garbage\n: : :", 80, "x")


class Server:
    def __init__(self, lines):
        self.lines = lines

    def read_until(self, text, timeout_s):
        return any(text in line for line in self.lines)


class Conn:
    def __init__(self, listings):
        self.listings, self.calls = list(listings), 0

    def run(self, argv, timeout_s):
        from provision.engine.transport import CommandResult

        self.calls += 1
        text = self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]
        return CommandResult(argv, 0, text, "", 0.0, False)


def test_wait_ready_waits_for_the_line_then_the_port():
    header = TCP.splitlines()[0] + "\n"
    conn = Conn([header, header, TCP])
    assert wait_ready(Server(["* Waiting for client to connect... *"]), conn,
                      Ready("Waiting for client", 18547), "127.0.1.10", 5) == ""
    assert conn.calls == 3
    assert "did not print" in wait_ready(Server(["error"]), Conn([TCP]), Ready("Waiting", 1), "127.0.0.1", 1)
    assert "nothing listened on TCP port 9" in wait_ready(Server([]), Conn([header]), Ready(None, 9), "127.0.0.1", 0.2)
