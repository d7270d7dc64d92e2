"""What the install phase says when SSH's strict host key checking refuses a host."""
from provision.runner.ansible import _msg

# ansible's unreachable message for a changed key: OpenSSH's banner, then its explanation (OpenSSH 9.2).
CHANGED = ("Failed to connect to the host via ssh: @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n"
           "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n"
           "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n"
           "IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\r\n"
           "Someone could be eavesdropping on you right now (man-in-the-middle attack)!\r\n"
           "Offending ED25519 key in /site/known_hosts:3\r\n  remove with:\r\n"
           "  ssh-keygen -f \"/site/known_hosts\" -R \"10.0.0.3\"\r\n"
           "Host key for 10.0.0.3 has changed and you have requested strict checking.\r\n"
           "Host key verification failed.")


def test_a_changed_host_key_is_named_with_the_file_and_line():
    msg = _msg({"msg": CHANGED})
    assert msg.startswith("SSH host key check refused the host:")
    assert "Host key for 10.0.0.3 has changed" in msg and "/site/known_hosts:3" in msg
    assert "@@@" not in msg


def test_an_unknown_host_key_is_named():
    msg = _msg({"msg": "Failed to connect to the host via ssh: No ED25519 host key is known for 10.0.0.9 and you "
                       "have requested strict checking.\r\nHost key verification failed."})
    assert "No ED25519 host key is known for 10.0.0.9" in msg


def test_other_messages_are_kept_on_one_line():
    assert _msg({"msg": "E: Unable to locate\n package   foo"}) == "E: Unable to locate package foo"


def test_ansible_runner_events_become_progress_events_and_failures_still_print():
    from provision.runner.ansible import _event_handler
    from provision.results.events import PlaybookEnded, TaskResult, TaskStarted

    seen, lines, hosts = [], [], {}
    handle = _event_handler(hosts, lines.append, seen.append, 2)
    for event in (
            {"event": "playbook_on_task_start", "event_data": {"role": "cudnn", "task": "Install cuDNN"}},
            {"event": "runner_on_ok", "event_data": {"role": "cudnn", "host": "n1", "res": {"changed": True}}},
            {"event": "runner_on_failed", "event_data": {"role": "cudnn", "host": "n2", "task": "Install cuDNN",
                                                         "res": {"msg": "no package"}}},
            {"event": "runner_on_failed", "event_data": {"role": "cudnn", "host": "n1", "ignore_errors": True,
                                                         "res": {"msg": "tolerated"}}},
            {"event": "playbook_on_stats", "event_data": {}}):
        assert handle(event) is True
    assert seen == [TaskStarted("cudnn", "Install cuDNN", 2), TaskResult("cudnn", "n1", "ok", True),
                    TaskResult("cudnn", "n2", "failed", False), TaskResult("cudnn", "n1", "ok", False),
                    PlaybookEnded()]
    assert lines == ["  install n2           cudnn: FAILED 'Install cuDNN': no package"]  # no line per role
    assert hosts["n2"].status == "failed" and hosts["n1"].status == "ok"
