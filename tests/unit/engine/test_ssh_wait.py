"""SshProcess waits on paramiko's own events (data, EOF, exit status), never in a polling loop: on a real
``paramiko.Channel`` (no transport) fed as paramiko's transport thread feeds it."""
import threading
import time

import paramiko

from provision.engine import ssh


class Counting(paramiko.Channel):
    """A channel that counts how often the waiter looks at its buffers."""

    def __init__(self):
        super().__init__(1)
        self.looks = 0

    def recv_ready(self):
        self.looks += 1
        return super().recv_ready()


def later(delay_s, *steps):
    """Run ``steps`` (callables) one after another in a thread, ``delay_s`` apart."""
    def run():
        for step in steps:
            time.sleep(delay_s)
            step()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def exit_status(channel, rc):
    channel.exit_status = rc  # what Channel._handle_request does on "exit-status"
    channel.status_event.set()


def test_output_exit_status_and_eof_in_any_order_give_the_whole_result():
    channel = Counting()
    process = ssh.SshProcess(None, channel, ["tool"], 30)
    later(0.05, lambda: channel.in_stderr_buffer.feed(b"provision-pid 42\nwarn\n"),
          lambda: channel.in_buffer.feed(b"first\n"), lambda: exit_status(channel, 3),
          lambda: channel.in_buffer.feed(b"last\n"), lambda: channel._handle_eof(None))
    result = process.wait()
    assert (result.rc, result.stdout, result.stderr, result.timed_out) == (3, "first\nlast\n", "warn\n", False)


def test_a_quiet_command_is_waited_on_without_polling():
    channel = Counting()
    process = ssh.SshProcess(None, channel, ["tool"], 30)
    later(1.0, lambda: channel.in_buffer.feed(b"done\n"), lambda: channel._handle_eof(None),
          lambda: exit_status(channel, 0))
    result = process.wait()
    assert result.rc == 0 and result.stdout == "done\n"
    assert channel.looks < 30  # a 10 ms poll looked about 100 times a second


def test_a_closed_channel_wakes_the_waiter(monkeypatch):
    channel = Counting()
    process = ssh.SshProcess(None, channel, ["tool"], 30)

    def lost():
        with channel.lock:
            channel._set_closed()  # what paramiko does to every channel of a transport that died

    later(0.2, lost)
    result = process.wait()
    assert result.rc == -1 and not result.timed_out and channel.looks < 30


def test_a_command_past_its_deadline_is_abandoned_as_timed_out(monkeypatch):
    monkeypatch.setattr(ssh, "GRACE_S", 0.0)
    channel = Counting()
    process = ssh.SshProcess(None, channel, ["tool"], 0.3)
    result = process.wait()
    assert result.rc == 124 and result.timed_out and channel.looks < 30


def test_read_until_wakes_on_the_text():
    channel = Counting()
    process = ssh.SshProcess(None, channel, ["server"], 30)
    later(0.3, lambda: channel.in_buffer.feed(b"Waiting for client"), lambda: channel.in_buffer.feed(b" to connect\n"))
    assert process.read_until("to connect", 10) and channel.looks < 30
