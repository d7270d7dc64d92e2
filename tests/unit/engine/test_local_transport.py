"""The local transport (``provision burnin --local``): argv without a shell, exit statuses as the SSH
transport gives them (124 timed out, 127 not installed), output read as it comes, kill stops the tool."""
import os

from provision.engine.local import LocalTransport
from provision.inventory import Host

HOST = Host("here", "localhost", 22, "root", None, None, "p")


def test_argv_is_not_a_shell_line_and_both_streams_come_back():
    conn = LocalTransport().connect(HOST)
    result = conn.run(["sh", "-c", 'echo "$1"; echo err >&2; exit 3', "sh", "a b; $(no)"], 30)
    assert (result.rc, result.stdout, result.stderr, result.timed_out) == (3, "a b; $(no)\n", "err\n", False)
    assert result.argv == ["sh", "-c", 'echo "$1"; echo err >&2; exit 3', "sh", "a b; $(no)"]


def test_a_missing_tool_exits_127_as_over_ssh():
    result = LocalTransport().connect(HOST).run(["no-such-tool-anywhere"], 30)
    assert result.rc == 127 and not result.timed_out


def test_a_tool_past_its_timeout_is_killed_with_124(tmp_path):
    marker = tmp_path / "still-running"
    result = LocalTransport().connect(HOST).run(["sh", "-c", f"sleep 30; touch {marker}"], 1)
    assert result.rc == 124 and result.timed_out
    assert not marker.exists()


def test_read_until_sees_output_before_the_tool_exits_and_kill_stops_it(tmp_path):
    pidfile = tmp_path / "pid"
    proc = LocalTransport().connect(HOST).start(["sh", "-c", f"echo $$ > {pidfile}; echo ready; exec sleep 60"], 120)
    assert proc.read_until("ready", 30)
    assert not proc.read_until("never printed", 0.1)
    proc.kill()
    result = proc.wait()
    assert result.rc != 0 and "ready" in result.stdout
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the tool outlived kill()"
