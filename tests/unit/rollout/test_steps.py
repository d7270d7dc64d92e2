"""One node's steps (``provision.rollout.steps.Node``) over a stand-in SSH connection: the bytes sent counted, a
failed or timed-out command raised as StepError naming the step and the node's own words, ``sudo -n`` for a user
other than root, the bundle and Ansible sent only to a node that lacks them, the roles' events read from the
node's output."""
import json

import pytest

from provision.errors import CommandError
from provision.rollout import bundle, steps
from provision.rollout.steps import Node, StepError
from tests.unit.rollout.fakes import Conn, host, result


def test_feed_sends_the_data_and_counts_its_bytes():
    conn = Conn(lambda argv, data: result(argv, stdout="done\n"))
    node = Node(host("gpu01"), conn)
    assert node.feed("copy", ["cat"], b"12345") == "done\n"
    node.feed("copy", ["cat"], b"678")
    assert node.sent_bytes == 8
    assert conn.fed == [(["cat"], b"12345"), (["cat"], b"678")]


def test_a_failed_command_names_the_step_its_exit_status_and_the_node_stderr():
    conn = Conn(lambda argv, data: result(argv, rc=2, stdout="partial", stderr="tar: /opt: Cannot open:\n  No space"))
    with pytest.raises(StepError) as caught:
        Node(host("gpu01"), conn).feed("copy the install bundle", ["tar", "-x"], b"x")
    assert caught.value.task == "copy the install bundle"
    assert str(caught.value) == "exit 2: tar: /opt: Cannot open: No space"


def test_a_failed_command_without_stderr_is_named_with_its_stdout():
    conn = Conn(lambda argv, data: result(argv, rc=1, stdout="Traceback: boom"))
    with pytest.raises(StepError, match="exit 1: Traceback: boom"):
        Node(host("gpu01"), conn).feed("probe the node", ["python3"], b"")


def test_a_timed_out_command_says_so():
    conn = Conn(lambda argv, data: result(argv, rc=124, stderr="Terminated", timed_out=True))
    with pytest.raises(StepError, match="timed out") as caught:
        Node(host("gpu01"), conn).feed("unpack the image", ["tar"], b"")
    assert caught.value.task == "unpack the image"


def test_a_connection_failure_while_sending_is_the_step_error():
    class Broken(Conn):
        def feed(self, argv, data, timeout_s):
            raise CommandError("host gpu01: sending 3 bytes to sh failed: the connection was closed")
    with pytest.raises(StepError, match="connection was closed") as caught:
        Node(host("gpu01"), Broken()).feed("copy the node's inventory", ["sh"], b"abc")
    assert caught.value.task == "copy the node's inventory"


def test_commands_go_through_sudo_unless_the_user_is_root():
    conn = Conn()
    Node(host("gpu01", user="admin"), conn).feed("copy", ["tar", "-x"], b"")
    Node(host("gpu02", user="root"), conn).feed("copy", ["tar", "-x"], b"")
    assert [argv for argv, _ in conn.fed] == [["sudo", "-n", "tar", "-x"], ["tar", "-x"]]


def test_the_bundle_goes_only_to_a_node_without_it():
    conn = Conn()
    node = Node(host("gpu01"), conn, probe={"bundle": "d1"})
    assert node.ship_bundle(b"tarball", "d1") is False
    assert conn.fed == [] and node.sent_bytes == 0
    assert node.ship_bundle(b"tarball", "d2") is True
    assert conn.fed[0][1] == b"tarball" and bundle.BUNDLE_DIR in conn.fed[0][0][-1]
    assert node.probe["bundle"] == "d2" and node.sent_bytes == 7
    assert node.ship_bundle(b"tarball", "d2") is False and len(conn.fed) == 1


def test_ansible_goes_only_to_a_node_without_that_wheel_set():
    conn = Conn()
    node = Node(host("gpu01"), conn, probe={"wheels": "w1", "python_path": "/usr/bin/python3.11"})
    assert node.bootstrap(b"wheels", "w1") is False
    assert conn.fed == []
    assert node.bootstrap(b"wheels", "w2") is True
    argv, data = conn.fed[0]
    assert data == b"wheels" and argv[:2] == ["sh", "-c"]
    assert "echo w2 > " + steps.WHEELS_MARK in argv[2] and "--no-index" in argv[2]
    assert "/usr/bin/python3.11 -m venv" in argv[2]  # the node's Python 3.11+ the probe found
    assert node.probe["wheels"] == "w2"


def test_a_node_without_python_3_11_is_told_what_to_install():
    node = Node(host("gpu01"), Conn(), probe={"python": "3.9", "python_path": ""})
    with pytest.raises(StepError) as caught:
        node.bootstrap(b"wheels", "w1")
    assert caught.value.task == "install Ansible on the node"
    assert "Python 3.11 or later" in str(caught.value) and "3.9" in str(caught.value)
    assert "--method push" in str(caught.value)


def test_the_probe_is_the_last_json_line_and_a_missing_one_is_named():
    conn = Conn(lambda argv, data: result(argv, stdout='warning: x\n{"python": "3.11", "bundle": ""}\n'))
    node = Node(host("gpu01"), conn)
    assert node.do_probe() == {"python": "3.11", "bundle": ""} == node.probe
    argv, data = conn.fed[0]
    assert argv[1:3] == ["-", "probe"] and data == bundle.NODE_SIDE.read_bytes()
    conn.answer = lambda argv, data: result(argv, stdout="")
    with pytest.raises(StepError, match="printed no result") as caught:
        node.do_probe()
    assert caught.value.task == "probe the node"


def test_run_roles_reads_the_events_and_the_end_line():
    events = [{"event": "runner_on_ok", "event_data": {"host": "gpu01", "res": {"changed": True}}}]
    out = "".join(json.dumps(e) + "\n" for e in events) + "noise\n" + json.dumps(
        {"event": "provision_end", "status": "successful", "rc": 0}) + "\n"
    conn = Conn(lambda argv, data: result(argv, stdout=out))
    got, end = Node(host("gpu01", user="admin"), conn).run_roles("run1", "site.yml", None, lambda: False,
                                                                  {"nvidia_driver_reboot": False})
    assert got == events and end == {"event": "provision_end", "status": "successful", "rc": 0}
    argv = conn.fed[0][0]
    assert argv[:2] == ["sudo", "-n"] and argv[4] == "run"
    assert json.loads(argv[5]) == {"run_dir": f"{steps.STATE_DIR}/runner", "ident": "run1", "playbook": "site.yml",
                                   "inventory": f"{steps.STATE_DIR}/inventory.yml", "host": "gpu01", "tags": "",
                                   "extra": {"nvidia_driver_reboot": False}, "interpreter": "/usr/bin/python3"}


def test_run_roles_without_an_end_line_is_a_step_error():
    conn = Conn(lambda argv, data: result(argv, rc=1, stderr="ModuleNotFoundError: No module named 'ansible_runner'"))
    with pytest.raises(StepError, match="exit 1: ModuleNotFoundError") as caught:
        Node(host("gpu01"), conn).run_roles("run1", "site.yml", None, lambda: False)
    assert caught.value.task == "run the roles on the node"
    conn.answer = lambda argv, data: result(argv, rc=0, stderr="killed")
    with pytest.raises(StepError, match="ended without a result: killed"):
        Node(host("gpu01"), conn).run_roles("run1", "site.yml", None, lambda: False)


def test_capture_returns_the_tar_and_names_a_failure():
    conn = Conn(lambda argv, data: result(argv, stdout="TARBYTES"))
    assert Node(host("gpu01"), conn).capture("key1", "kind1", ["/etc/ssh"]) == b"TARBYTES"
    assert conn.fed[0][0][-5:] == ["capture", steps.BUILD_DIR, "key1", "kind1", "/etc/ssh"]
    conn.answer = lambda argv, data: result(argv, rc=2, stderr="tar: write error")
    with pytest.raises(StepError, match="exit 2: tar: write error") as caught:
        Node(host("gpu01"), conn).capture("key1", "kind1", [])
    assert caught.value.task == "capture the image"
