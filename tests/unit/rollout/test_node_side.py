"""What runs on the node (``provision.rollout.node_side``): Ansible's events cut down to what the controller reads,
and read back by ``provision.runner.ansible.host_events`` as a push run's (failed task, changed counts, pending
reboot); the package list's digest, independent of the order the package manager lists in; ``finish_image``
removing what the image build removed, files before their folders, and recording the image."""
import json
import subprocess

import pytest

from provision.rollout import node_side
from provision.runner.ansible import host_events

FACTS = {f"fact_{i}": "x" * 50 for i in range(200)}


def _ok(task="Install the driver", role="nvidia_driver", host="gpu01", **res):
    return {"event": "runner_on_ok", "uuid": "1", "stdout": "ok: [gpu01]", "counter": 7,
            "event_data": {"host": host, "role": role, "task": task, "task_path": "/x/main.yml:3",
                           "play": "all", "res": {"invocation": {"module_args": {"name": "x" * 500}},
                                                  "stdout": "y" * 5000, "stdout_lines": ["y"] * 100, **res}}}


def _failed(task, msg, role="nvidia_driver", host="gpu01", ignore_errors=None):
    event = _ok(task, role, host, changed=False, msg=msg, rc=2, stderr="E: boom")
    event["event"] = "runner_on_failed"
    if ignore_errors is not None:
        event["event_data"]["ignore_errors"] = ignore_errors
    return event


def test_an_ok_event_keeps_host_role_task_and_the_result_keys_read_later():
    slim = node_side._slim(_ok(changed=True, msg="installed", ansible_facts=FACTS))
    assert slim == {"event": "runner_on_ok", "event_data": {"host": "gpu01", "role": "nvidia_driver",
                                                            "task": "Install the driver",
                                                            "res": {"changed": True, "msg": "installed"}}}
    assert len(json.dumps(slim)) < 300


def test_an_ok_event_keeps_only_the_pending_reboot_of_its_facts():
    slim = node_side._slim(_ok(changed=False, ansible_facts={**FACTS, "nvidia_driver_reboot_pending": True}))
    assert slim["event_data"]["res"] == {"changed": False, "ansible_facts": {"nvidia_driver_reboot_pending": True}}
    slim = node_side._slim(_ok(ansible_facts={"nvidia_driver_reboot_pending": False}))
    assert slim["event_data"]["res"] == {"ansible_facts": {"nvidia_driver_reboot_pending": False}}


def test_a_failed_event_keeps_its_message_exit_status_and_ignore_errors():
    slim = node_side._slim(_failed("Build the module", "dkms failed", ignore_errors=True))
    assert slim["event_data"] == {"host": "gpu01", "role": "nvidia_driver", "task": "Build the module",
                                  "ignore_errors": True,
                                  "res": {"changed": False, "msg": "dkms failed", "stderr": "E: boom", "rc": 2}}


@pytest.mark.parametrize("kind", ["runner_on_start", "verbose", "playbook_on_start", "runner_item_on_ok", ""])
def test_events_the_controller_does_not_read_are_dropped(kind):
    assert node_side._slim({**_ok(), "event": kind}) is None


def test_the_stats_event_keeps_its_counts():
    stats = {"changed": {"gpu01": 3}, "failures": {}, "ok": {"gpu01": 40}, "dark": {}, "skipped": {"gpu01": 9},
             "processed": {"gpu01": 1}, "ignored": {}, "rescued": {}, "artifact_data": {"x": 1}}
    slim = node_side._slim({"event": "playbook_on_stats", "event_data": stats})
    assert slim == {"event": "playbook_on_stats", "event_data": {
        "changed": {"gpu01": 3}, "failures": {}, "ok": {"gpu01": 40}, "dark": {}, "res": {}}}


def _read_back(events):
    lines = []
    slim = [s for s in (node_side._slim(e) for e in events) if s is not None]
    return host_events(json.loads(json.dumps(slim)), lines.append), lines


def test_a_failed_task_fails_the_host_and_is_named_with_its_role():
    hosts, lines = _read_back([
        {"event": "playbook_on_task_start", "event_data": {"role": "nvidia_driver", "task": "Build the module"}},
        _ok(changed=True, ansible_facts=FACTS), _failed("Build the module", "dkms build failed")])
    entry = hosts["gpu01"]
    assert entry.status == "failed"
    assert entry.roles["nvidia_driver"]["failed"] == [{"task": "Build the module", "msg": "dkms build failed"}]
    assert entry.roles["nvidia_driver"]["tasks"] == 2
    assert len(lines) == 1
    assert "gpu01" in lines[0] and "nvidia_driver" in lines[0] and "Build the module" in lines[0]
    assert "dkms build failed" in lines[0]


def test_an_ignored_failure_does_not_fail_the_host():
    hosts, lines = _read_back([_failed("Probe for a GPU", "no GPU", ignore_errors=True), _ok()])
    assert hosts["gpu01"].status == "ok"
    assert hosts["gpu01"].roles["nvidia_driver"]["failed"] == []
    assert lines == []


def test_changed_tasks_are_counted_per_role_and_per_host():
    hosts, _ = _read_back([_ok(changed=True), _ok(changed=True), _ok(changed=False),
                           _ok(role="nccl", changed=True), _ok(role="nccl"), _ok(host="gpu02", changed=True)])
    entry = hosts["gpu01"]
    assert (entry.roles["nvidia_driver"]["changed"], entry.roles["nvidia_driver"]["tasks"]) == (2, 3)
    assert (entry.roles["nccl"]["changed"], entry.roles["nccl"]["tasks"]) == (1, 2)
    assert entry.changed == 3 and hosts["gpu02"].changed == 1
    assert entry.status == hosts["gpu02"].status == "ok"


def test_a_pending_reboot_is_read_from_the_slimmed_facts():
    hosts, lines = _read_back([_ok(changed=True, ansible_facts={**FACTS, "nvidia_driver_reboot_pending": True}),
                               _ok(host="gpu02", ansible_facts={"nvidia_driver_reboot_pending": False})])
    assert hosts["gpu01"].reboot_pending is True and hosts["gpu02"].reboot_pending is False
    assert len(lines) == 1 and "gpu01" in lines[0] and "reboot pending" in lines[0]


def _package_manager(monkeypatch, answers):
    """subprocess.run answering dpkg-query and rpm from ``answers`` (tool -> stdout, or an exception to raise)."""
    calls = []

    def run(argv, **kwargs):
        calls.append(argv[0])
        answer = answers.get(argv[0], FileNotFoundError(2, "No such file or directory"))
        if isinstance(answer, Exception):
            raise answer
        return subprocess.CompletedProcess(argv, 0, answer, "")
    monkeypatch.setattr(node_side.subprocess, "run", run)
    return calls


DPKG = "bash=5.2-1 ii \nlibc6=2.36-9 ii \nnvidia-driver-550=550.90.07-1 ii \n"


def test_the_package_digest_does_not_depend_on_the_listing_order(monkeypatch):
    _package_manager(monkeypatch, {"dpkg-query": DPKG})
    first = node_side.package_digest()
    _package_manager(monkeypatch, {"dpkg-query": "\n".join(reversed(DPKG.splitlines())) + "\n\n"})
    assert node_side.package_digest() == first and len(first) == 64
    _package_manager(monkeypatch, {"dpkg-query": DPKG.replace("550.90.07-1", "550.127.05-1")})
    assert node_side.package_digest() != first


def test_the_package_digest_falls_back_to_rpm_then_to_nothing(monkeypatch):
    calls = _package_manager(monkeypatch, {"rpm": "bash=0:5.1-6.el9.x86_64\n"})
    on_rpm = node_side.package_digest()
    assert calls == ["dpkg-query", "rpm"] and len(on_rpm) == 64
    _package_manager(monkeypatch, {"dpkg-query": "", "rpm": ""})
    assert node_side.package_digest() == ""
    _package_manager(monkeypatch, {})
    assert node_side.package_digest() == ""


def test_finish_image_removes_what_the_build_removed_and_records_the_image(monkeypatch, tmp_path):
    image_dir, mark = tmp_path / "opt/provision/image", tmp_path / "var/lib/provision/image.json"
    monkeypatch.setattr(node_side, "IMAGE_DIR", str(image_dir))
    monkeypatch.setattr(node_side, "IMAGE_MARK", str(mark))
    systemctl = []
    monkeypatch.setattr(node_side.subprocess, "run", lambda argv, **kw: systemctl.append(argv))
    root = tmp_path / "root"
    (root / "old/sub").mkdir(parents=True)
    (root / "old/sub/a.conf").write_text("a")
    (root / "old/b").write_text("b")
    (root / "old-x").write_text("c")
    (root / "filled").mkdir()
    (root / "filled/mine").write_text("the node's own")
    (root / "link").symlink_to(root / "filled")
    (root / "kept").write_text("not in the manifest")
    removed = sorted(str(root / p) for p in ("old", "old/sub", "old/sub/a.conf", "old/b", "old-x", "gone",
                                             "gone/too", "filled", "link"))
    image_dir.mkdir(parents=True)
    manifest = {"id": "abc123", "kind": "k1", "removed": removed, "paths": 10}
    (image_dir / "manifest.json").write_text(json.dumps(manifest))

    assert node_side.finish_image() == {"id": "abc123", "removed": 6}
    assert sorted(p.name for p in root.iterdir()) == ["filled", "kept"]  # a folder the node filled is left
    assert (root / "filled/mine").read_text() == "the node's own"
    assert json.loads(mark.read_text()) == {"id": "abc123", "kind": "k1"}
    assert systemctl == [["systemctl", "daemon-reload"]]
