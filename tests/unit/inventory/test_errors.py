"""Bad inventories: one line naming file, host and field; exit status 2; never a traceback."""
import subprocess
import sys

import pytest

from provision import inventory, paths
from provision.errors import InventoryError

DATA = paths.ROOT / "tests" / "data" / "inventories"


def provision(*args):
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True)


def error_lines(proc):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("provision: error: ")]
    assert lines and len(lines) == len(proc.stderr.strip().splitlines())
    return lines


@pytest.mark.parametrize("hosts,group_vars,expected", [
    ("[gpu]\nnode[1:2]\n", "provision_profile: h999\n", "gpu.yml:1: hosts node1, node2: field 'provision_profile': "),
    ("[gpu]\nnode1 ansible_port=ssh\n", "provision_profile: h100-sxm5-80g-ndr\n",
     "hosts:2: host node1: field 'ansible_port' is not a port number (1-65535): 'ssh'"),
    ("[gpu]\nnode1\n",
     "provision_profile: h100-sxm5-80g-ndr\nansible_host: \"{{ bmc_ip | regex_replace('a', 'b') }}\"\n",
     "gpu.yml:2: host node1: field 'ansible_host' cannot be templated: "),
    ("[gpu]\nnode1\n", "provision_profile: h100-sxm5-80g-ndr\nansible_ssh_common_args: -o StrictHostKeyChecking=no\n",
     "gpu.yml:2: host node1: field 'ansible_ssh_common_args' turns host key checking off (StrictHostKeyChecking=no)"),
    ("[gpu]\nnode1 ansible_host_key_checking=false\n", "provision_profile: h100-sxm5-80g-ndr\n",
     "hosts:2: host node1: field 'ansible_host_key_checking' turns host key checking off"),
    # A site fact (site.schema.json) is checked as the inventory loads, once, with its file and line.
    ("[gpu]\nnode1\n", "provision_profile: h100-sxm5-80g-ndr\nprovision_storage: {bond: bond0}\n",
     "gpu.yml:2: host node1: provision_storage: missing key "),
    ("[gpu]\nnode1\n", "provision_profile: h100-sxm5-80g-ndr\nprovision_regression: {as: maybe}\n",
     "gpu.yml:2: host node1: provision_regression.as: "),
    # the firmware manifest (issue 33): its own file and line, not another site fact's
    ("[gpu]\nnode1\n", "provision_profile: h100-sxm5-80g-ndr\nprovision_firmware: {vbois: 96.00.74.00.01}\n",
     "gpu.yml:2: host node1: provision_firmware.vbois: unknown key (known: bios, bios_fw, bmc, "),
    ("[gpu]\nnode1\n", "provision_profile: h100-sxm5-80g-ndr\nprovision_firmware: {bmc: 24.09}\n",
     "gpu.yml:2: host node1: provision_firmware.bmc: 24.09 is a number to YAML: quote the version"),
    ("[gpu]\nnode1\n", "provision_profile: gb200-nvl72\nprovision_nvlink_domain: [rack1]\n",
     "gpu.yml:2: host node1: field 'provision_nvlink_domain' must be an NVLink domain name"),
])
def test_bad_field_names_file_host_and_field(tmp_path, hosts, group_vars, expected):
    (tmp_path / "hosts").write_text(hosts)
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu.yml").write_text(group_vars)
    for command in (["inventory", "-i", str(tmp_path / "hosts")], ["burnin", "-i", str(tmp_path / "hosts")]):
        lines = error_lines(provision(*command))
        assert len(lines) == 1 and expected in lines[0] and str(tmp_path) in lines[0], lines


def test_a_site_fact_is_named_once_and_a_templated_one_is_templated(tmp_path):
    (tmp_path / "hosts").write_text("[gpu]\nnode1\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu.yml").write_text(
        "provision_profile: h100-sxm5-80g-ndr\nbond_name: bond7\nprovision_storage: {bond: \"{{ bond_name }}\"}\n")
    [line] = error_lines(provision("plan", "-i", str(tmp_path / "hosts")))[-1:]
    assert line.count("host node1") == 1 and "gpu.yml:3: host node1: provision_storage: missing key" in line, line
    (tmp_path / "group_vars" / "gpu.yml").write_text(
        "provision_profile: h100-sxm5-80g-ndr\nbond_name: bond7\nprovision_storage: {bond: \"{{ bond_name }}\", "
        "mode: 802.3ad, slaves: 2, slave_speed_Mbps: 25000, checkpoint_path: /scratch}\n")
    [host] = inventory.load(tmp_path / "hosts").hosts
    assert host.vars["provision_storage"]["bond"] == "bond7"
    (tmp_path / "group_vars" / "gpu.yml").write_text(  # the firmware manifest is templated as every site fact
        "provision_profile: h100-sxm5-80g-ndr\nsite_vbios: 96.00.74.00.01\n"
        "provision_firmware: {vbios: \"{{ site_vbios }}\"}\n")
    [host] = inventory.load(tmp_path / "hosts").hosts
    assert host.vars["provision_firmware"] == {"vbios": "96.00.74.00.01"}


def test_vault_without_password_names_the_vault_file():
    lines = error_lines(provision("inventory", "-i", str(DATA / "homelab")))
    assert lines == [f"provision: error: {DATA}/homelab/group_vars/all/vault.yml: hosts pve01, nas01, k3s-01 "
                     "(and 2 more): cannot decrypt it: Attempting to decrypt but no vault secrets found "
                     "(give --vault-password-file or --vault-id)"]
    install = error_lines(provision("install", "-i", str(DATA / "homelab")))
    assert "vault.yml: hosts pve01, nas01, k3s-01 (and 2 more): cannot decrypt it" in install[0]


def test_wrong_vault_password(tmp_path):
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not-the-password\n")
    line = error_lines(provision("inventory", "-i", str(DATA / "homelab"), "--vault-password-file", str(wrong)))[0]
    assert "group_vars/all/vault.yml" in line and "cannot decrypt it" in line
    missing = error_lines(provision("inventory", "-i", str(DATA / "homelab"), "--vault-id", "lab@/nonexistent"))[0]
    assert missing.startswith("provision: error: --vault-id lab@/nonexistent: ")


def test_a_host_without_profile_is_not_an_error_but_a_job_needs_one(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    login01: {ansible_host: 127.0.9.1}\n")
    assert provision("inventory", "-i", str(tmp_path)).returncode == 0
    line = error_lines(provision("burnin", "-i", str(tmp_path)))[0]
    assert "no GPU node to run on: no host has provision_profile" in line


def test_unparseable_and_empty_sources(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n   - gpu01: [\n")
    line = error_lines(provision("inventory", "-i", str(tmp_path)))[0]
    assert f"{tmp_path}/hosts.yml:4:1: Ansible could not read it as an inventory: YAML parsing failed" in line
    empty = tmp_path / "empty"
    (empty / "group_vars").mkdir(parents=True)
    assert "inventory has no hosts" in error_lines(provision("inventory", "-i", str(empty)))[0]


def test_load_raises_the_first_problem_read_collects_them(tmp_path):
    (tmp_path / "hosts").write_text("[gpu]\nnode1 ansible_port=0\nnode2 provision_profile=nope\n[login]\nlogin01\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu.yml").write_text("provision_profile: h100-sxm5-80g-ndr\n")
    found = inventory.read(tmp_path / "hosts")
    assert [h.name for h in found.hosts] == ["login01"] and found.hosts[0].profile is None
    assert [(p.host, p.field) for p in found.problems] == [("node1", "ansible_port"), ("node2", "provision_profile")]
    with pytest.raises(InventoryError, match="host node1: field 'ansible_port' is not a port number"):
        inventory.load(tmp_path / "hosts")
    with pytest.raises(InventoryError, match="--limit names hosts not in the inventory: gpu09"):
        inventory.load(tmp_path / "hosts", limit=["login01", "gpu09"])
