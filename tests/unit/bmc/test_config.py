"""BmcConfig from the inventory's variables, and the preflight's one line per bad variable (file, host, field)."""
from __future__ import annotations

import os

import pytest

from provision import inventory
from provision.bmc import config
from provision.bmc.config import VarProblem, from_vars
from provision.errors import BmcError
from tests.unit.bmc.conftest import PASSWORD


def base(password_file, **more):
    return {"provision_bmc_address": "127.100.1.5", "provision_bmc_username": "admin",
            "provision_bmc_password_file": password_file, **more}


@pytest.mark.parametrize("address,hostname,port,url", [
    ("127.100.1.5", "127.100.1.5", 443, "https://127.100.1.5"),
    ("127.100.1.5:8443", "127.100.1.5", 8443, "https://127.100.1.5:8443"),
    ("https://bmc-07.example:8443/", "bmc-07.example", 8443, "https://bmc-07.example:8443"),
    ("[fd00::5]:443", "fd00::5", 443, "https://[fd00::5]"),
])
def test_addresses(password_file, address, hostname, port, url):
    cfg = from_vars("node01", base(password_file, provision_bmc_address=address))
    assert (cfg.hostname, cfg.port, cfg.base_url, cfg.protocol) == (hostname, port, url, "redfish")


def test_ipmi_port_and_defaults(password_file):
    cfg = from_vars("node01", base(password_file, provision_bmc_protocol="ipmi"))
    assert (cfg.port, cfg.boot_id_path, cfg.ca_file, cfg.system, cfg.insecure) == \
        (623, "/proc/sys/kernel/random/boot_id", None, None, False)


def test_no_address_no_config():
    assert from_vars("node01", {"provision_profile": "x"}) is None


def test_password_read_now_and_never_kept(password_file):
    cfg = from_vars("node01", base(password_file))
    assert cfg.password() == PASSWORD
    assert PASSWORD not in repr(cfg) and PASSWORD not in str(vars(cfg))


def test_password_from_the_environment(monkeypatch, password_file):
    variables = base(password_file, provision_bmc_password_env="RACK7_BMC_PASSWORD")
    del variables["provision_bmc_password_file"]
    cfg = from_vars("node01", variables)
    monkeypatch.delenv("RACK7_BMC_PASSWORD", raising=False)
    with pytest.raises(BmcError, match=r"^node01: BMC 127.100.1.5: environment variable RACK7_BMC_PASSWORD "):
        cfg.password()
    monkeypatch.setenv("RACK7_BMC_PASSWORD", PASSWORD)
    assert cfg.password() == PASSWORD


@pytest.mark.parametrize("change,field,words", [
    ({"provision_bmc_protocol": "snmp"}, "provision_bmc_protocol", "must be one of redfish, ipmi, got 'snmp'"),
    ({"provision_bmc_address": "http://127.100.1.5"}, "provision_bmc_address", "send the BMC password in clear"),
    ({"provision_bmc_address": "https://admin:pw@127.100.1.5"}, "provision_bmc_address", "must be HOST"),
    ({"provision_bmc_address": "127.100.1.5:99999"}, "provision_bmc_address", "must be HOST"),
    ({"provision_bmc_username": ""}, "provision_bmc_username", "is required with provision_bmc_address"),
    ({"provision_bmc_password_env": "X"}, "provision_bmc_password_env", "not both"),
    ({"provision_bmc_password_file": None}, "provision_bmc_password_file", "needs provision_bmc_password_file"),
    ({"provision_bmc_password_file": "relative/pw"}, "provision_bmc_password_file", "must be an absolute path"),
    ({"provision_bmc_password_file": "/nonexistent/pw"}, "provision_bmc_password_file", "No such file"),
    ({"provision_bmc_ca_file": "/nonexistent/ca.pem"}, "provision_bmc_ca_file", "No such file"),
    ({"provision_bmc_system": "../x"}, "provision_bmc_system", "must be a Redfish ComputerSystem Id"),
    ({"provision_boot_id_path": "boot_id"}, "provision_boot_id_path", "must be an absolute path"),
])
def test_bad_variables(password_file, change, field, words):
    with pytest.raises(VarProblem) as caught:
        from_vars("node01", {k: v for k, v in {**base(password_file), **change}.items() if v is not None})
    assert caught.value.field == field and words in caught.value.text


def test_a_password_file_others_can_read_is_refused(password_file):
    os.chmod(password_file, 0o644)
    with pytest.raises(VarProblem, match=r"readable by group or others \(mode 0644\); chmod 600 it"):
        from_vars("node01", base(password_file))


def test_the_account_without_an_address_is_no_bmc(password_file):
    """group_vars may give every host the BMC account; a host without an address (a controller) has no BMC."""
    assert from_vars("node01", {"provision_bmc_username": "admin", "provision_bmc_password_file": "x"}) is None


def test_preflight_names_file_host_and_field(tmp_path, password_file):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    node01:\n      ansible_host: 127.0.9.5\n"
                     "      provision_bmc_address: 127.100.1.5\n      provision_bmc_protocol: snmp\n"
                     f"      provision_bmc_username: admin\n      provision_bmc_password_file: {password_file}\n")
    found = inventory.read(hosts)
    assert [str(p) for p in found.problems] == [
        f"{hosts}:6: host node01: field 'provision_bmc_protocol' must be one of redfish, ipmi, got 'snmp'"]


def test_of_a_host(tmp_path, password_file):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  vars:\n    provision_bmc_username: admin\n"
                     f"    provision_bmc_password_file: {password_file}\n"
                     "  hosts:\n    node01:\n      provision_bmc_address: \"{{ '127.100.1.5' }}\"\n    other:\n")
    found = inventory.load(hosts)
    cfg = config.of(found.host("node01"), insecure=True)
    assert cfg is not None and cfg.hostname == "127.100.1.5" and cfg.insecure
    assert config.of(found.host("other")) is None


def test_a_node_reading_the_inventory_for_itself_does_not_look_for_the_controllers_files(tmp_path):
    """burnin --local reads the site's inventory on the node, which reaches no BMC and holds none of its files."""
    from provision.inventory import bmcvars
    from provision.inventory import local

    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    node01:\n      ansible_host: 127.0.9.5\n"
                     "      provision_profile: h100-sxm5-80g-ndr\n      provision_bmc_address: 127.100.1.5\n"
                     "      provision_bmc_username: admin\n      provision_bmc_password_file: /nonexistent/pw\n"
                     "      provision_bmc_ca_file: /nonexistent/ca.pem\n")
    with pytest.raises(VarProblem, match="No such file"):  # on the controller: named before anything connects
        from_vars("node01", {"provision_bmc_address": "127.100.1.5", "provision_bmc_username": "admin",
                             "provision_bmc_password_file": "/nonexistent/pw"})
    label, host = local.this_host("node01", None, (hosts,), inventory.Vault())
    assert host.name == "node01" and host.has_bmc
    with bmcvars.shapes_only():
        assert from_vars("node01", host.vars).password_file == "/nonexistent/pw"
