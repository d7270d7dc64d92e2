"""`provision inventory` on inventories in the shapes real clusters use (tests/data/inventories/)."""
import json
import subprocess
import sys

import pytest

from provision import paths

DATA = paths.ROOT / "tests" / "data" / "inventories"
PASSWORD = DATA / "homelab-vault-password.txt"


def listing(*args, env=None):
    proc = subprocess.run([sys.executable, "-m", "provision", "inventory", "--json", *args],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return {h["name"]: h for h in json.loads(proc.stdout)["hosts"]}


def test_deepops_ini_all_group():
    hosts = listing("-i", str(DATA / "deepops" / "inventory"))
    assert list(hosts) == ["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02"]
    assert hosts["gpu01"] == {"name": "gpu01", "address": "127.20.2.1", "port": 22, "user": "ubuntu",
                              "profile": "h100-sxm5-80g-ndr",
                              "groups": ["k8s-cluster", "kube-node", "nfs-clients", "slurm-cluster", "slurm-node"]}
    assert hosts["login01"]["profile"] is None and hosts["login01"]["groups"] == [
        "nfs-server", "slurm-cluster", "slurm-master"]
    assert {n for n, h in hosts.items() if h["profile"] is None} == {"mgmt01", "mgmt02", "mgmt03", "login01"}


def test_kubespray_folder_with_group_vars_folders():
    hosts = listing("-i", str(DATA / "kubespray"))
    assert sorted(n for n, h in hosts.items() if h["profile"] == "h200-sxm-141g-ndr") == ["node4", "node5", "node6"]
    assert hosts["node1"]["profile"] is None and "kube_control_plane" in hosts["node1"]["groups"]
    assert hosts["bastion"] == {"name": "bastion", "address": "127.22.100.2", "port": 22, "user": "some_user",
                                "profile": None, "groups": ["bastion"]}
    assert hosts["node4"]["user"] == "ubuntu"  # group_vars/all/all.yml


def test_mixed_fleet_ranges_templated_addresses_and_cpu_nodes():
    hosts = listing("-i", str(DATA / "mixed-fleet" / "hosts"))
    a100 = [f"gpu-a100-{i:02d}" for i in range(1, 5)]
    h100 = [f"gpu-h100-{i:02d}" for i in range(1, 9)]
    assert all(hosts[n]["profile"] == "a100-sxm4-80g-hdr" for n in a100)
    assert all(hosts[n]["profile"] == "h100-sxm5-80g-ndr" for n in h100)
    assert [hosts[n]["address"] for n in a100 + h100] == [f"127.21.2.{10 + i}" for i in range(12)]
    cpu = hosts["cpu-03.cluster.example"]
    assert cpu["address"] == "cpu-03.cluster.example" and cpu["profile"] is None  # no ansible_host: the name
    assert hosts["mgmt01"]["groups"] == ["ungrouped"]


def test_layered_slurm_appliance_merges_and_templates():
    hosts = listing("-i", str(DATA / "slurm-appliance" / "common" / "inventory"),
                    "-i", str(DATA / "slurm-appliance" / "site" / "inventory"))
    assert {n for n, h in hosts.items() if h["profile"]} == {"site-gpu-0", "site-gpu-1"}
    assert hosts["site-gpu-1"]["address"] == "127.0.10.21"  # regex_replace of ipmi_ip 127.0.8.21
    assert all(h["user"] == "slurm-admin" for h in hosts.values())  # the site layer wins over common's rocky
    assert hosts["site-control"]["groups"] == ["cluster", "control", "node_exporter", "openhpc"]  # common's groups


def test_layer_order_decides_which_value_wins():
    hosts = listing("-i", str(DATA / "slurm-appliance" / "site" / "inventory"),
                    "-i", str(DATA / "slurm-appliance" / "common" / "inventory"))
    assert hosts["site-login-0"]["user"] == "rocky"


@pytest.mark.parametrize("how", ["--vault-password-file", "--vault-id", "env"])
def test_homelab_vault(how):
    import os

    env = None
    args = ["-i", str(DATA / "homelab")]
    if how == "env":
        env = dict(os.environ, ANSIBLE_VAULT_PASSWORD_FILE=str(PASSWORD))
    else:
        args += [how, str(PASSWORD) if how == "--vault-password-file" else f"default@{PASSWORD}"]
    hosts = listing(*args, env=env)
    assert hosts["gpubox"] == {"name": "gpubox", "address": "127.0.9.40", "port": 2222, "user": "homelab",
                               "profile": "rtx4090-pcie", "groups": ["k3s_agent", "k3s_cluster"]}
    assert [n for n, h in hosts.items() if h["profile"] is None] == ["pve01", "nas01", "k3s-01", "k3s-02"]


def test_limit_takes_groups_and_names():
    hosts = listing("-i", str(DATA / "mixed-fleet" / "hosts"), "--limit", "a100,login01")
    assert sorted(hosts) == ["gpu-a100-01", "gpu-a100-02", "gpu-a100-03", "gpu-a100-04", "login01"]


def test_table_marks_non_gpu_nodes():
    proc = subprocess.run([sys.executable, "-m", "provision", "inventory", "-i", str(DATA / "deepops" / "inventory")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["HOST", "ADDRESS", "PORT", "USER", "PROFILE", "GROUPS"]
    assert lines[4].split()[:5] == ["login01", "127.20.1.1", "22", "ubuntu", "-"]
    assert "GPU nodes: 2 (h100-sxm5-80g-ndr: 2)" in lines[-1]


def test_simulated_rack_shape_keeps_strict_host_keys(tmp_path):
    from provision import inventory

    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars:\n    provision_profile: h100-sxm5-80g-ndr\n    ansible_user: root\n"
        "    provision_known_hosts_file: /rack/.sim/known_hosts\n"
        "    ansible_ssh_common_args: >-\n      -o UserKnownHostsFile={{ provision_known_hosts_file }}\n"
        "      -o StrictHostKeyChecking=yes\n"
        "  children:\n    gpu_nodes:\n      hosts:\n        node01: {ansible_host: 127.0.1.10}\n")
    host = inventory.load(tmp_path).host("node01")
    assert (host.address, host.port, host.user, host.profile) == ("127.0.1.10", 22, "root", "h100-sxm5-80g-ndr")
    assert host.known_hosts_file == "/rack/.sim/known_hosts" and host.groups == ("gpu_nodes",)
