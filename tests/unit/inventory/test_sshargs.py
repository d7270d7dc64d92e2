"""Host.ssh_options: what Ansible's ssh connection passes to ssh for the host, templated, in Ansible's order."""
import yaml

from provision import inventory


def _read(tmp_path, host_vars: dict):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"vars": {"kh": "/site/known_hosts",
                                                                         "provision_profile": "h100-sxm5-80g-ndr"},
                                                                "hosts": {"n1": host_vars}}}))
    return inventory.read(tmp_path / "hosts.yml")


def test_options_templated_in_ansibles_order(tmp_path):
    found = _read(tmp_path, {"ansible_port": 2222, "ansible_user": "ops", "ansible_ssh_private_key_file": "/k",
                             "ansible_ssh_common_args": "-o UserKnownHostsFile={{ kh }} -J 'bast ion'",
                             "ansible_ssh_extra_args": "-F /cfg"})
    options = found.hosts[0].ssh_options
    ours = options[options.index("Port=2222") - 1:]  # after ansible.cfg's ssh_args
    assert ours == ("-o", "Port=2222", "-o", 'IdentityFile="/k"', "-o", 'User="ops"',
                    "-o", "UserKnownHostsFile=/site/known_hosts", "-J", "bast ion", "-F", "/cfg")


def test_unsplittable_ssh_args_are_a_problem_naming_the_field(tmp_path):
    found = _read(tmp_path, {"ansible_ssh_extra_args": "-o 'ProxyCommand=nc %h"})
    assert not found.hosts and found.problems[0].field == "ansible_ssh_extra_args"
    assert "cannot be split into ssh arguments" in found.problems[0].text


def test_the_unsplittable_one_is_named(tmp_path):
    found = _read(tmp_path, {"ansible_ssh_common_args": "-F /cfg", "ansible_ssh_extra_args": "-o 'User=x"})
    assert found.problems[0].field == "ansible_ssh_extra_args"


def test_hosts_that_are_not_gpu_nodes_get_none(tmp_path):
    """The burn-in never connects to them: nothing is templated for them."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"login": {"ansible_port": 2222}}}}))
    assert inventory.load(tmp_path / "hosts.yml").hosts[0].ssh_options == ()
