"""``install --method local|image`` on the controller (``provision.rollout.methods``): the image key that groups
nodes by kind, and ``install_local`` over stand-in SSH connections: a node it cannot reach is "unreachable" with the
step "connect", a step that fails on a node is that node's failed task, a failed role is named as push names it, a
node that succeeds gets only what it lacks, with an inventory free of the controller's secrets."""
import json

import pytest

from provision.errors import CommandError
from provision.rollout import bundle, methods
from provision.rollout.methods import Rollout, image_key, kind_key
from tests.unit.rollout.fakes import Conn, host, result

PROBE = {"os": "ubuntu22.04", "machine": "x86_64", "kernel": "5.15.0-105-generic"}


def test_the_image_key_is_one_per_kind_of_node():
    one = host("gpu01", profile="h100", nccl_version="2.21.5", ansible_host="127.0.9.1", provision_nvlink_domain="A")
    two = host("gpu02", profile="h100", nccl_version="2.21.5", ansible_host="127.0.9.2", provision_nvlink_domain="B")
    key = image_key(one, PROBE, "digest1")
    assert key == image_key(two, dict(PROBE, python="3.10", bundle="old"), "digest1")
    assert key is not None and len(key) == 16
    # a node that holds an image of its kind takes that image; one of another kind (an older bundle) none
    kind = kind_key(one, PROBE, "digest1")
    assert image_key(one, dict(PROBE, image="img1", image_kind=kind, packages="after"), "digest1") == "img1"
    assert image_key(one, dict(PROBE, image="img1", image_kind="older"), "digest1") is None
    others = {image_key(one, dict(PROBE, packages="another OS image"), "digest1"),
              image_key(one, PROBE, "digest1", tags="driver"),
              image_key(one, dict(PROBE, os="rocky9.4"), "digest1"),
              image_key(one, dict(PROBE, kernel="6.8.0-40-generic"), "digest1"),
              image_key(one, dict(PROBE, machine="aarch64"), "digest1"),
              image_key(host("gpu03", profile="gb200", nccl_version="2.21.5"), PROBE, "digest1"),
              image_key(one, PROBE, "digest2"),
              image_key(host("gpu04", profile="h100", nccl_version="2.23.4"), PROBE, "digest1")}
    assert len(others) == 8 and key not in others


RUN_FAILED = [
    {"event": "playbook_on_task_start", "event_data": {"role": "nvidia_driver", "task": "Build the module",
                                                       "res": {}}},
    {"event": "runner_on_ok", "event_data": {"host": "gpu03", "role": "nvidia_driver", "task": "Add the repo",
                                             "res": {"changed": True}}},
    {"event": "runner_on_failed", "event_data": {"host": "gpu03", "role": "nvidia_driver", "task": "Build the module",
                                                 "res": {"changed": False, "msg": "dkms build failed", "rc": 2}}},
]
RUN_OK = [{"event": "runner_on_ok", "event_data": {"host": "gpu04", "role": "nccl", "task": "Install NCCL",
                                                   "res": {"changed": True}}}]


def _output(events, status, rc):
    return "".join(json.dumps(e) + "\n" for e in events) + json.dumps(
        {"event": "provision_end", "status": status, "rc": rc}) + "\n"


RUNS = {  # host -> what its node_side.py run prints
    "gpu02": result([], rc=1, stderr="/opt/provision/ansible/bin/python: No such file or directory"),
    "gpu03": result([], rc=0, stdout=_output(RUN_FAILED, "failed", 2)),
    "gpu04": result([], rc=0, stdout=_output(RUN_OK, "successful", 0)),
    "gpu05": result([], rc=0, stdout=_output([], "failed", 4)),
}


class Transport:
    """SshTransport's stand-in: gpu01 refuses the connection; every other node answers from ``RUNS``."""

    def __init__(self):
        self.conns = {}

    def connect(self, node):
        if node.name == "gpu01":
            raise CommandError("host gpu01: 127.0.9.1:22: connection refused")

        def answer(argv, data):
            return RUNS[node.name] if "run" in argv else result(argv)
        wheels = "" if node.name == "gpu04" else "wd"
        conn = Conn(answer, probe={"python": "3.11", "python_path": "/usr/bin/python3", "machine": "x86_64",
                                   "bundle": "", "wheels": wheels})
        self.conns[node.name] = conn
        return conn


@pytest.fixture
def transport(monkeypatch, tmp_path):
    made = []

    def make():
        made.append(Transport())
        return made[-1]
    monkeypatch.setattr(methods, "SshTransport", make)
    monkeypatch.setattr(bundle, "wheelhouse", lambda cache, python, machine: (b"wheels", "wd"))
    monkeypatch.setenv("PROVISION_CACHE_DIR", str(tmp_path / "cache"))
    return made


def _rollout(tmp_path, lines, cancel=lambda: False):
    return Rollout("run1", "site.yml", None, 4, cancel, lines.append, tmp_path / "ansible")


SECRETS = {"provision_bmc_password_file": "/site/bmc.pass", "ansible_ssh_private_key_file": "/site/id_ed25519"}


def test_install_local_names_each_node_failure_as_push_does(transport, tmp_path):
    hosts = [host(f"gpu0{i}", **SECRETS) for i in range(1, 6)]
    lines = []
    out = methods.install_local(hosts, _rollout(tmp_path, lines))
    assert list(out.hosts) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]

    unreachable = out.hosts["gpu01"]
    assert unreachable.status == "unreachable"
    assert unreachable.roles["play"]["failed"] == [{"task": "connect",
                                                    "msg": "host gpu01: 127.0.9.1:22: connection refused"}]
    assert out.sent_bytes["gpu01"] == 0

    step = out.hosts["gpu02"]
    assert step.status == "failed"
    [failed] = step.roles["play"]["failed"]
    assert failed["task"] == "run the roles on the node"
    assert failed["msg"].startswith("exit 1: ") and "No such file or directory" in failed["msg"]

    role = out.hosts["gpu03"]
    assert role.status == "failed" and role.changed == 1
    assert role.roles["nvidia_driver"]["failed"] == [{"task": "Build the module", "msg": "dkms build failed"}]
    assert (tmp_path / "ansible/gpu03.events.jsonl").read_text().count("\n") == len(RUN_FAILED) + 1

    assert out.hosts["gpu04"].status == "ok" and out.hosts["gpu04"].changed == 1

    ended = out.hosts["gpu05"]  # no failed task read, yet ansible-runner says the playbook failed
    assert ended.status == "failed"
    assert ended.roles["play"]["failed"][0]["task"] == "ansible-playbook"
    assert "rc 4" in ended.roles["play"]["failed"][0]["msg"]

    assert any("gpu01" in line and "UNREACHABLE 'connect'" in line for line in lines)
    assert any("gpu02" in line and "FAILED 'run the roles on the node'" in line for line in lines)
    assert any("gpu03" in line and "Build the module" in line for line in lines)
    assert all(conn.closed for conn in transport[0].conns.values())


def test_install_local_sends_only_what_a_node_lacks_and_no_secret(transport, tmp_path):
    hosts = [host("gpu03", **SECRETS), host("gpu04", **SECRETS)]
    out = methods.install_local(hosts, _rollout(tmp_path, []))
    data, _ = bundle.build()
    probe = len(bundle.NODE_SIDE.read_bytes())  # the first probe feeds node_side.py on standard input
    # neither names a domain or rack: the IMEX role would group them together, so each inventory lists the other
    inventories = [bundle.host_inventory(h, bundle.domain_peers(h, hosts)) for h in hosts]
    assert b"gpu03" in inventories[1] and b"gpu04" in inventories[0]
    assert out.sent_bytes["gpu04"] == probe + len(b"wheels") + len(data) + len(inventories[1])  # Ansible, bundle, ...
    assert out.sent_bytes["gpu03"] == probe + len(data) + len(inventories[0])  # it had the wheels
    fed = b"".join(d for _, d in transport[0].conns["gpu04"].fed)
    assert b"/site/bmc.pass" not in fed and b"id_ed25519" not in fed
    runs = [argv for argv, _ in transport[0].conns["gpu04"].fed if "run" in argv]
    assert len(runs) == 1 and json.loads(runs[0][-1])["extra"] == {"nvidia_driver_reboot": False}  # reboots: here


def test_install_local_interrupted_before_a_node_runs_connects_to_none(transport, tmp_path):
    out = methods.install_local([host("gpu02"), host("gpu03")], _rollout(tmp_path, [], cancel=lambda: True))
    assert {h.status for h in out.hosts.values()} == {"failed"}
    assert out.hosts["gpu02"].roles["play"]["failed"] == [{"task": "-", "msg": "interrupted before it ran"}]
    assert transport[0].conns == {} and sum(out.sent_bytes.values()) == 0


def test_a_node_without_python_3_11_is_named_before_any_wheel_is_fetched(transport, tmp_path, monkeypatch):
    fetched = []
    monkeypatch.setattr(bundle, "wheelhouse", lambda cache, python, machine: fetched.append(python) or (b"w", "wd"))
    old = host("gpu09")
    monkeypatch.setattr(methods.Node, "do_probe", lambda self: self.probe.update(
        {"python": "3.9", "python_path": "", "machine": "x86_64", "bundle": "", "wheels": ""}) or self.probe)
    out = methods.install_local([old], _rollout(tmp_path, []))
    [failed] = out.hosts["gpu09"].roles["play"]["failed"]
    assert out.hosts["gpu09"].status == "failed" and failed["task"] == "install Ansible on the node"
    assert "Python 3.11 or later" in failed["msg"] and "3.9" in failed["msg"]
    assert fetched == []  # pip was never asked for wheels of a Python ansible-core cannot run on
