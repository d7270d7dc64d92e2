"""Host keys are always checked: inventories that would turn checking off, connect locally or
with paramiko are refused naming the host and the variable; the user's environment cannot turn
it off for ansible-runner."""
import json

import pytest

from provision.runner import ansible

from .conftest import PROFILE, one_error, provision


def gpu_node(extra: str) -> str:
    return f"all:\n  hosts:\n    gpu01:\n      ansible_host: 127.0.9.1\n      provision_profile: {PROFILE}\n{extra}"


@pytest.mark.parametrize("extra,field,why", [
    ("      ansible_ssh_args: -o StrictHostKeyChecking=no\n", "ansible_ssh_args", "StrictHostKeyChecking=no"),
    ("      ansible_ssh_common_args: -o UserKnownHostsFile=/dev/null\n", "ansible_ssh_common_args",
     "UserKnownHostsFile=/dev/null"),
    ("      ansible_ssh_extra_args: -oStrictHostKeyChecking=accept-new\n", "ansible_ssh_extra_args",
     "StrictHostKeyChecking=accept-new"),
    ("      ansible_ssh_common_args: '-o \"StrictHostKeyChecking off\"'\n", "ansible_ssh_common_args",
     "StrictHostKeyChecking off"),
    ("      ansible_sftp_extra_args: -o UserKnownHostsFile=none\n", "ansible_sftp_extra_args",
     "UserKnownHostsFile=none"),
    ("      ansible_host_key_checking: false\n", "ansible_host_key_checking", "turns host key checking off"),
    ("      ansible_paramiko_host_key_checking: 'no'\n", "ansible_paramiko_host_key_checking",
     "turns host key checking off"),
    ("      ansible_connection: local\n", "ansible_connection", "on this machine"),
    ("      ansible_connection: paramiko\n", "ansible_connection", "paramiko's host key policy"),
    ("      ansible_connection: ansible.builtin.paramiko_ssh\n", "ansible_connection", "paramiko's host key policy"),
    ("      ansible_connection: community.docker.docker\n", "ansible_connection", "OpenSSH only"),
], ids=["ssh_args", "common_args-devnull", "extra_args-accept-new", "quoted-off", "sftp-none",
        "host_key_checking", "paramiko_host_key_checking", "local", "paramiko", "paramiko_ssh", "docker"])
def test_an_inventory_that_would_skip_host_keys_is_refused(read_inventory, extra, field, why):
    found = read_inventory(gpu_node(extra))
    assert [(p.host, p.field) for p in found.problems] == [("gpu01", field)]
    assert why in str(found.problems[0]) and "hosts.yml" in found.problems[0].file


def test_templated_ssh_args_are_judged_after_templating(read_inventory):
    found = read_inventory(gpu_node("      kh: /dev/null\n"
                                    "      ansible_ssh_common_args: -o UserKnownHostsFile={{ kh }}\n"))
    assert [p.field for p in found.problems] == ["ansible_ssh_common_args"]


def test_strict_ssh_and_a_site_known_hosts_file_are_accepted(read_inventory):
    found = read_inventory(gpu_node("      ansible_connection: ssh\n      ansible_ssh_common_args: >-\n"
                                    "        -o UserKnownHostsFile=/site/known_hosts -o StrictHostKeyChecking=yes\n"))
    assert not found.problems and found.hosts[0].profile == PROFILE


def test_a_host_that_is_not_a_gpu_node_may_connect_as_it_likes(read_inventory):
    found = read_inventory("all:\n  hosts:\n    login01: {ansible_connection: local}\n")
    assert not found.problems  # never installed nor burned in


@pytest.mark.parametrize("command", ["inventory", "run"])
def test_the_commands_exit_2_with_one_line_naming_host_and_variable(tmp_path, command):
    (tmp_path / "hosts.yml").write_text(gpu_node("      ansible_connection: local\n"))
    line = one_error(provision(command, "-i", str(tmp_path)))
    assert f"{tmp_path}/hosts.yml" in line and "host gpu01" in line and "'ansible_connection'" in line


def test_the_user_environment_cannot_weaken_ssh_for_ansible_runner(tmp_path, monkeypatch):
    for name, value in [("ANSIBLE_HOST_KEY_CHECKING", "False"), ("ANSIBLE_SSH_HOST_KEY_CHECKING", "False"),
                        ("ANSIBLE_PARAMIKO_HOST_KEY_CHECKING", "False"), ("ANSIBLE_TRANSPORT", "paramiko"),
                        ("ANSIBLE_SSH_ARGS", "-o StrictHostKeyChecking=no"), ("ANSIBLE_CALLBACK_PLUGINS", "/tmp/cb")]:
        monkeypatch.setenv(name, value)
    env = ansible.prepare(ansible.runner_kwargs(ansible.PlaybookRequest("site.yml", tmp_path), tmp_path)).config.env
    assert {k: env[k] for k in ansible.HOST_KEY_ENV} == ansible.HOST_KEY_ENV
    assert "ANSIBLE_TRANSPORT" not in env and "ANSIBLE_SSH_ARGS" not in env
    assert "/tmp/cb" not in env["ANSIBLE_CALLBACK_PLUGINS"]


@pytest.mark.parametrize("args", ["-o \"'StrictHostKeyChecking'=no\"", "-o Strict\"\"HostKeyChecking=no",
                                  "-o StrictHostKeyChecking=n''o"])
def test_ssh_args_are_judged_as_the_words_ssh_gets(read_inventory, args):
    """Quotes the shell removes do not hide a setting from the check (found by a breaker)."""
    found = read_inventory(gpu_node(f"      ansible_ssh_args: {json.dumps(args)}\n"))
    assert [p.field for p in found.problems] == ["ansible_ssh_args"]
    assert "StrictHostKeyChecking=no" in str(found.problems[0])


def test_an_ssh_config_named_by_F_that_turns_checking_off_is_refused(read_inventory, tmp_path):
    """Judged by OpenSSH itself (ssh -G for the host): a block that applies to it, not any line of the file."""
    weak = tmp_path / "weak.cfg"
    weak.write_text("# StrictHostKeyChecking no (a comment)\nHost *\n  StrictHostKeyChecking no\n")
    plain_args = "      ansible_ssh_args: -o ControlMaster=no\n"  # the project's passes StrictHostKeyChecking=yes
    common = "      ansible_ssh_common_args: -F "
    found = read_inventory(gpu_node(f"{plain_args}{common}{weak}\n"))
    assert [p.field for p in found.problems] == ["ansible_ssh_common_args"]
    assert f"in {weak} line 3 (StrictHostKeyChecking no)" in str(found.problems[0])
    (tmp_path / "strict.cfg").write_text("Host *\n  StrictHostKeyChecking yes\n")
    assert not read_inventory(gpu_node(f"{plain_args}{common}{tmp_path / 'strict.cfg'}\n")).problems
    (tmp_path / "other.cfg").write_text("Host bastion01\n  StrictHostKeyChecking no\n")  # another host's block
    assert not read_inventory(gpu_node(f"{plain_args}{common}{tmp_path / 'other.cfg'}\n")).problems
    # the project's ansible.cfg passes StrictHostKeyChecking=yes first, and OpenSSH keeps the first value
    assert not read_inventory(gpu_node(f"      ansible_ssh_common_args: -F {weak}\n")).problems


def test_an_included_or_matched_setting_is_found_by_ssh_G(read_inventory, tmp_path):
    """What a text scan of the -F file could not see: an Include, a Match block, a known hosts file of none."""
    (tmp_path / "inc.cfg").write_text("Match host 127.0.9.*\n  UserKnownHostsFile none\n")
    (tmp_path / "main.cfg").write_text(f"Include {tmp_path / 'inc.cfg'}\n")
    found = read_inventory(gpu_node(f"      ansible_ssh_common_args: -F {tmp_path / 'main.cfg'}\n"))
    assert [p.field for p in found.problems] == ["ansible_ssh_common_args"]
    assert "ssh -G 127.0.9.1" in str(found.problems[0]) and "UserKnownHostsFile none" in str(found.problems[0])
