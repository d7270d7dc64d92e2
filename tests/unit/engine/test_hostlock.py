"""Hosts taken by a run (issue 21, cause 10): a second install or burn-in on some of the same hosts refuses in
one line naming the run that holds them and those hosts (exit 6), or waits with --wait; a holder that died
holds nothing (the kernel drops its flock), on the controller and on the node."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from provision import cli, paths
from provision import inventory as inv
from provision.commands import _job
from provision.engine import hostlock, nodelease
from provision.engine.local import LocalProcess
from provision.engine.transport import CommandResult
from provision.errors import CommandError, ExitStatus
from provision.report.hostlist import fold
from provision.runner import ansible
from provision.runner.ansible import PlaybookResult

DATA = paths.ROOT / "tests" / "data" / "inventories"
HOMELAB = str(DATA / "homelab")
VAULT = ("--vault-password-file", str(DATA / "homelab-vault-password.txt"))


def line(run: str) -> str:
    return json.dumps(hostlock.holder(run, ["burnin"]))


def test_a_second_run_on_overlapping_hosts_is_refused_naming_the_run_and_the_hosts(tmp_path) -> None:
    said: list[str] = []
    first = hostlock.take_controller(tmp_path, ["n1", "n2", "n3"], line("nightly-1"), 0, fold, said.append)
    with pytest.raises(hostlock.HostsBusy) as refused:
        hostlock.take_controller(tmp_path, ["n3", "n2", "n4"], line("op-2"), 0, fold, said.append)
    message = str(refused.value)
    assert message.startswith("n[2-3] taken by run nightly-1 (controller ")
    assert f"pid {os.getpid()}" in message and "not starting" in message and "\n" not in message
    assert refused.value.exit_status == ExitStatus.BUSY == 6
    other = hostlock.take_controller(tmp_path, ["n4", "n5"], line("op-3"), 0, fold, said.append)  # disjoint: fine
    assert sorted(other.files) == ["n4", "n5"]  # n4 was not kept by the refused run
    first.release()
    again = hostlock.take_controller(tmp_path, ["n3", "n2"], line("op-2"), 0, fold, said.append)
    assert sorted(again.files) == ["n2", "n3"] and said == []
    again.release(), other.release()


def test_wait_says_so_once_then_takes_the_hosts_when_they_are_let_go(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(hostlock, "POLL_S", 0.01)
    first = hostlock.take_controller(tmp_path, ["n1"], line("nightly-1"), 0, fold, print)
    said: list[str] = []

    def say(text: str) -> None:  # the first holder ends as soon as the second says it waits
        said.append(text)
        first.release()

    second = hostlock.take_controller(tmp_path, ["n1"], line("op-2"), 3600, fold, say)
    assert len(said) == 1 and "n1 taken by run nightly-1" in said[0] and "waiting up to 3600 s (--wait)" in said[0]
    assert list(second.files) == ["n1"]
    second.release()


def test_wait_is_bounded(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(hostlock, "POLL_S", 0.01)
    first = hostlock.take_controller(tmp_path, ["n1"], line("nightly-1"), 0, fold, print)
    with pytest.raises(hostlock.HostsBusy, match=r"n1 taken by run nightly-1 .*not starting \(waited 0 s\)"):
        hostlock.take_controller(tmp_path, ["n1"], line("op-2"), 0.05, fold, lambda _text: None)
    first.release()


HOLD = """
import json, sys
from provision.engine import hostlock
line = json.dumps(hostlock.holder(sys.argv[2], ["burnin"]))
held = hostlock.take_controller(__import__("pathlib").Path(sys.argv[1]), ["n1", "n2"], line, 0, str, print)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_holder_in_another_process_refuses_until_it_dies_and_then_holds_nothing(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "nightly-1"], cwd=paths.ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        with pytest.raises(hostlock.HostsBusy, match=rf"n2 taken by run nightly-1 .*pid {proc.pid}"):
            hostlock.take_controller(tmp_path, ["n2"], line("op-2"), 0, fold, print)
        proc.send_signal(signal.SIGKILL)  # a controller killed: no clean-up ran, its text stays in the file
        proc.wait()
        assert "nightly-1" in (tmp_path / "n2.lock").read_text()
        taken = hostlock.take_controller(tmp_path, ["n2"], line("op-2"), 0, fold, print)
        assert "op-2" in (tmp_path / "n2.lock").read_text()
        taken.release()
    finally:
        if proc.poll() is None:
            proc.kill()


class _KeeperProcess(LocalProcess):
    """The keeper as a node runs it: its stdin is the SSH channel, which ``close`` shuts (sshd closing the pipe)."""

    def close(self):
        if self.popen.stdin:
            self.popen.stdin.close()
        self.popen.wait(timeout=30)
        return super().close()


class _Node:
    """A fake connection to a node whose /run/provision is a folder of its own under tmp."""

    def __init__(self, host, root):
        self.host, self.root, self.procs = host, root, []

    def start(self, argv, timeout_s):
        argv = list(argv)
        argv[4] = str(self.root / self.host.name)  # the node's own NODE_DIR
        popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(popen)
        return _KeeperProcess(popen, argv, timeout_s)

    def run(self, argv, timeout_s):
        return self.start(argv, timeout_s).wait()

    def close(self):
        pass

    def keeper(self):
        """The last keeper started here (its lease's renewals are started here too)."""
        return [p for p in self.procs if p.args[3] == "provision-lock"][-1]


class _Transport:
    def __init__(self, root):
        self.root, self.nodes = root, {}

    def connect(self, host):
        return self.nodes.setdefault(host.name, _Node(host, self.root))


class _Host:
    def __init__(self, name):
        self.name = name


def test_node_locks_a_second_controller_sees_and_that_end_with_the_connection(tmp_path) -> None:
    hosts = [_Host(f"gpu{i:02d}") for i in range(1, 4)]
    a, b = _Transport(tmp_path), _Transport(tmp_path)  # two controllers, the same nodes
    first = hostlock.Held()
    hostlock.mark_nodes(hosts[:2], a, line("nightly-1"), 0, fold, print, first)
    assert sorted(first.keepers) == ["gpu01", "gpu02"]
    assert "nightly-1" in (tmp_path / "gpu01" / "holder").read_text()
    second = hostlock.Held()
    with pytest.raises(hostlock.HostsBusy, match=r"^gpu02 taken by run nightly-1 \(controller .*not starting"):
        hostlock.mark_nodes(hosts[1:], b, line("op-2"), 0, fold, print, second)
    assert second.keepers == {} and second.conns == {}  # gpu03's lock, taken meanwhile, was let go
    first.release()  # the connection closes: each keeper removes its holder and drops the lock
    assert not (tmp_path / "gpu01" / "holder").exists()
    hostlock.mark_nodes(hosts[1:], b, line("op-2"), 0, fold, print, second)
    assert sorted(second.keepers) == ["gpu02", "gpu03"]
    keeper = b.nodes["gpu02"].keeper()
    keeper.stdin.close()  # the controller killed (kill -9, no release ran): sshd closes the channel's pipe
    keeper.wait(timeout=60)
    third = hostlock.Held()
    hostlock.mark_nodes(hosts[1:2], _Transport(tmp_path), line("op-3"), 0, fold, print, third)
    assert list(third.keepers) == ["gpu02"]
    third.release(), second.release()


def test_a_node_that_cannot_keep_a_lock_is_said_and_burned_in_unmarked(tmp_path) -> None:
    blocker = tmp_path / "gpu01"
    blocker.write_text("a file where the lock folder should be")
    said: list[str] = []
    held = hostlock.Held()
    hostlock.mark_nodes([_Host("gpu01")], _Transport(tmp_path), line("op"), 0, fold, said.append, held)
    assert held.keepers == {} and len(said) == 1
    assert said[0].startswith("provision: warning: host gpu01: no node lock (")
    assert list(hostlock.Reusing(_Transport(tmp_path), held).held.conns) == ["gpu01"]  # kept for the burn-in
    held.release()


def test_burnin_local_takes_this_machines_node_lock(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PROVISION_NODE_LOCK_DIR", str(tmp_path / "run"))
    first = hostlock.Held()
    hostlock.take_local(line("slurm-7"), fold, "gpu01", first)
    with pytest.raises(hostlock.HostsBusy, match=r"^gpu01 taken by run slurm-7 "):
        hostlock.take_local(line("op-2"), fold, "gpu01", hostlock.Held())
    first.release()
    assert not (tmp_path / "run" / "holder").exists()
    again = hostlock.Held()
    hostlock.take_local(line("op-2"), fold, "gpu01", again)
    again.release()


def test_two_installs_in_one_process_the_second_refused_before_touching_anything(tmp_path, monkeypatch, capsys):
    """Two jobs on the homelab's GPU node: while the first is in its install, the second (started from inside
    it) exits 5 naming it, makes no run folder and never calls Ansible; once the first has ended the node is
    free. The second is refused before it would install its signal handlers, so a thread can run it."""
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    playbooks, second = [], {}

    def job_two() -> None:
        second["status"] = cli.main(["install", "-i", HOMELAB, *VAULT, "--run-id", "r-second"])

    def playbook(request, *args, **kwargs):
        playbooks.append(list(request.limit))
        if len(playbooks) == 1:
            thread = threading.Thread(target=job_two)
            thread.start()
            thread.join(300)
        return PlaybookResult("site.yml", 0, "successful", {}, "ansible/artifacts/x")

    monkeypatch.setattr(ansible, "run_playbook", playbook)
    assert cli.main(["install", "-i", HOMELAB, *VAULT, "--run-id", "r-first"]) == ExitStatus.NODE_FAILED
    err = capsys.readouterr().err.strip().splitlines()
    assert second["status"] == ExitStatus.BUSY
    assert err[-1].startswith("provision: error: gpubox taken by run r-first (controller ")
    assert playbooks == [["gpubox"]] and not (tmp_path / "r-second").exists()
    assert _job.run(_job.JobOptions(("install",), inventory=(HOMELAB,), run_id="r-third",
                                    vault=inv.Vault(password_files=(VAULT[1],))),
                    progress=lambda *_: None) == ExitStatus.NODE_FAILED  # taken and installed (the fake: nothing)
    assert playbooks == [["gpubox"], ["gpubox"]]


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "", "x", "604801"])
def test_wait_takes_whole_seconds_only(value, capsys) -> None:
    assert cli.main(["install", "-i", HOMELAB, *VAULT, "--wait", value]) == ExitStatus.BAD_INPUT
    assert "--wait" in capsys.readouterr().err


def test_an_unreachable_node_is_tried_once_before_the_burnin_not_twice_in_a_row(tmp_path) -> None:
    """mark_nodes' failed connect is the burn-in's first attempt (Reusing raises it); its retries connect anew."""
    from provision.errors import CommandError

    class Unreachable:
        tries = 0

        def connect(self, host):
            self.tries += 1
            raise CommandError(f"host {host.name} (127.0.9.9:22): SSH failed: timed out")

    transport, held = Unreachable(), hostlock.Held()
    hostlock.mark_nodes([_Host("gpu01")], transport, line("op"), 0, fold, print, held)
    assert transport.tries == 1 and held.keepers == {} and held.conns == {}
    reusing = hostlock.Reusing(transport, held)
    with pytest.raises(CommandError, match="timed out"):
        reusing.connect(_Host("gpu01"))
    assert transport.tries == 1  # the burn-in's first attempt: the failure already met
    with pytest.raises(CommandError):
        reusing.connect(_Host("gpu01"))
    assert transport.tries == 2  # its retry connects anew
    held.release()


def test_a_node_that_rebooted_since_its_lock_was_taken_is_locked_again_over_a_new_connection(tmp_path) -> None:
    """`provision run`: the install reboots the node after mark_nodes locked it, which ends the keeper and the
    connection; the burn-in's connect takes the node lock again over a new connection, not the dead one."""

    class Rebooting(_Node):
        up = True

        def alive(self):
            return self.up

    class Transport(_Transport):
        def connect(self, host):
            self.nodes[host.name] = Rebooting(host, self.root)
            return self.nodes[host.name]

    transport, held, host = Transport(tmp_path), hostlock.Held(line=line("run-7")), _Host("gpu01")
    hostlock.mark_nodes([host], transport, held.line, 0, fold, print, held)
    old = transport.nodes["gpu01"]
    old.keeper().stdin.close()  # the reboot: sshd and the keeper end, the node's lock with them
    old.keeper().wait(timeout=60)
    old.up = False
    assert not (tmp_path / "gpu01" / "holder").exists()
    conn = hostlock.Reusing(transport, held).connect(host)
    assert conn is transport.nodes["gpu01"] and conn is not old and conn.alive()
    assert "run-7" in (tmp_path / "gpu01" / "holder").read_text()  # locked again for the burn-in
    held.release()
    assert not (tmp_path / "gpu01" / "holder").exists()


@pytest.fixture
def node_clock(tmp_path, monkeypatch):
    """The nodes' clock (nodelease.CLOCK, /proc/uptime's shape) as a file the test sets; keepers look at it
    every 0.05 s; the controller renews only when the test says (a round), never on its own."""
    clock = tmp_path / "uptime"
    monkeypatch.setattr(nodelease, "CLOCK", str(clock))
    monkeypatch.setattr(nodelease, "TICK_S", 0.05)
    monkeypatch.setattr(nodelease, "RENEW_S", 3600)

    def at(seconds: int) -> None:
        clock.write_text(f"{seconds}.75 123.00\n")

    at(1000)
    return at


def test_a_vanished_controllers_node_lock_ends_with_its_lease_and_the_next_run_says_whose_it_took(
        tmp_path, node_clock) -> None:
    """issue 36: a controller gone without closing its connection (the keeper's channel stays open: no end of file)
    keeps the node only until its lease ends; a renewed lease goes on past its first expiry; the next run takes the
    node and says whose lease it took over; the old controller, back, is told its lease was lost."""
    lease, host, said = nodelease.LEASE_S, _Host("gpu01"), []
    first, nodes = hostlock.Held(), _Transport(tmp_path / "nodes")
    hostlock.mark_nodes([host], nodes, line("nightly-1"), 0, fold, said.append, first)
    keeper = nodes.nodes["gpu01"].keeper()
    node_clock(1000 + lease - 1)  # the last second of the lease: still held
    time.sleep(0.3)  # a few of the keeper's ticks (not a timing check: an early end would show here)
    assert keeper.poll() is None
    first.renewer.round()  # renewed: it ends at 1000 + 2 x lease - 1 now
    node_clock(1000 + lease + 10)
    time.sleep(0.3)
    assert keeper.poll() is None and said == []
    node_clock(1000 + 2 * lease)  # no renewal came (the controller vanished): the keeper lets the lock go
    assert keeper.wait(timeout=30) == 0 and not keeper.stdin.closed
    assert not (tmp_path / "nodes" / "gpu01" / "holder").exists()
    second, told = hostlock.Held(), []
    hostlock.mark_nodes([host], _Transport(tmp_path / "nodes"), line("op-2"), 0, fold, told.append, second)
    assert list(second.keepers) == ["gpu01"] and "op-2" in (tmp_path / "nodes" / "gpu01" / "holder").read_text()
    assert len(told) == 1 and told[0].startswith("provision: warning: gpu01: took over the node lock of run "
                                                 "nightly-1 (controller ")
    assert told[0].endswith(f"its lease had expired (not renewed for {lease} s: its controller vanished or was cut "
                            "off)")
    assert sorted(p.name for p in (tmp_path / "nodes" / "gpu01").iterdir() if not p.name.startswith("lease.")) == [
        "holder", "lock"]  # the expired holder's line was said once and is gone
    first.renewer.round()  # the first controller, back: its node says the lease ended
    assert said == ["provision: warning: host gpu01: node lock lease lost (the node says it ended; it lasts "
                    f"{lease} s unrenewed); another run may take the node while this one measures it"]
    second.release(), first.release()
    assert not (tmp_path / "nodes" / "gpu01" / "holder").exists()


class _Leased:
    """A connection whose renewals end as ``outcomes`` says, one per round: an exit status, or None (it failed)."""

    def __init__(self, *outcomes, up=True):
        self.outcomes, self.up = list(outcomes), up

    def run(self, argv, timeout_s):
        outcome = self.outcomes.pop(0) if self.outcomes else 0
        if outcome is None:
            raise CommandError("host gpu: could not start sh: timed out")
        return CommandResult(argv, outcome, "", "", 0.0, False)

    def alive(self):
        return self.up


def test_the_controller_judges_its_leases_by_its_own_clock(monkeypatch) -> None:
    """The controller's side, its clock injected: a lease the node says ended is said lost at once; one whose
    renewals fail (a hung connection) is said lost once not renewed for LEASE_S, not before; a closed
    connection (the burn-in is done with the host, or it rebooted) is dropped without a word."""
    monkeypatch.setattr(nodelease, "RENEW_S", 3600)  # rounds only when the test says
    now, said = [0.0], []
    renewer = nodelease.Renewer(said.append, clock=lambda: now[0])
    conns = {"ok": _Leased(), "ended": _Leased(nodelease.LOST), "hung": _Leased(*[None] * 9),
             "closed": _Leased(None, up=False)}
    for name, conn in conns.items():
        renewer.add(name, conn, "/run/provision", "t" + name)
    lease = nodelease.LEASE_S
    for now[0] in (60, lease - 1):
        renewer.round()
    assert sorted(renewer.leases) == ["hung", "ok"] and len(said) == 1
    assert said[0].startswith("provision: warning: host ended: node lock lease lost (the node says it ended;")
    now[0] = lease
    renewer.round()
    assert sorted(renewer.leases) == ["ok"] and renewer.leases["ok"].renewed == lease
    assert said[1].startswith(f"provision: warning: host hung: node lock lease lost (not renewed for {lease} s;")
    renewer.close()
    assert renewer.leases == {} and renewer.stop.is_set()
