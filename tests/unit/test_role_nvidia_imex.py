"""The nvidia_imex role: its node list rendered from an inventory by real Ansible (one domain per
provision_nvlink_domain, the rack as fallback, a host of no domain stopped with the reason), its argument spec
refusing bad input before any task, and its place in the provision playbook and the holds."""
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from provision import paths, profiles
from provision.profiles import install_facts

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "nvidia_imex"

INVENTORY = {"all": {"children": {"gpu_nodes": {"hosts": {
    "tray01": {"ansible_host": "127.0.9.1", "provision_nvlink_domain": "nvl000"},
    "tray02": {"ansible_host": "127.0.9.2", "provision_nvlink_domain": "nvl000"},
    "tray19": {"ansible_host": "127.0.9.31", "provision_nvlink_domain": "nvl001"},
    "rackb1": {"ansible_host": "127.0.9.32", "provision_rack": "b"},
    "rackb2": {"provision_rack": "b"},  # no ansible_host: the name is its address
    "lonely": {"ansible_host": "127.0.9.33"},
}}}}}

PLAY = """
- hosts: all
  connection: local
  gather_facts: false
  vars:
    nvidia_imex_version: "580.105.08"
  tasks:
    - name: Find the domain
      ansible.builtin.include_role:
        name: nvidia_imex
        tasks_from: domain
        public: true
    - name: Render the node list
      ansible.builtin.template:
        src: "{{ role_dir }}/templates/nodes_config.cfg.j2"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.cfg"
        mode: "0644"
"""


def _playbook(tmp_path: Path, play: str, inventory: dict, extra: dict | None = None) -> subprocess.CompletedProcess:
    playbook = paths.tool("ansible-playbook")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(play)
    # The role's dependency (nvidia_repo) is not under test: a stub of that name comes first on the roles path.
    stub = tmp_path / "stub_roles/nvidia_repo/tasks"
    stub.mkdir(parents=True, exist_ok=True)
    (stub / "main.yml").write_text("---\n[]\n")
    extra_vars = {"role_dir": str(ROLE), "out_dir": str(tmp_path), "ansible_python_interpreter": sys.executable,
                  **(extra or {})}
    env = {**os.environ, "ANSIBLE_ROLES_PATH": f"{tmp_path / 'stub_roles'}:{ROOT / 'roles'}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_RETRY_FILES_ENABLED": "0"}
    return subprocess.run([playbook, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", json.dumps(extra_vars)], capture_output=True, text=True, env=env, timeout=300,
                          check=False)


def test_node_list_is_every_tray_of_the_hosts_domain_and_a_host_without_one_stops(tmp_path):
    proc = _playbook(tmp_path, PLAY, INVENTORY)
    assert proc.returncode == 2, proc.stdout[-3000:]  # "lonely" fails, the others go on
    assert (tmp_path / "tray01.cfg").read_text() == "127.0.9.1\n127.0.9.2\n"
    assert (tmp_path / "tray02.cfg").read_text() == "127.0.9.1\n127.0.9.2\n"
    assert (tmp_path / "tray19.cfg").read_text() == "127.0.9.31\n"
    assert (tmp_path / "rackb1.cfg").read_text() == "127.0.9.32\nrackb2\n"  # provision_rack as the fallback
    assert not (tmp_path / "lonely.cfg").exists()
    assert ("lonely: an IMEX platform host with no NVLink domain: set the host var provision_nvlink_domain "
            "(or provision_rack)") in proc.stdout


def test_a_domain_larger_than_an_nvl72_rack_stops(tmp_path):
    hosts = {f"t{i:02d}": {"ansible_host": f"127.0.9.{i}", "provision_nvlink_domain": "big"} for i in range(19)}
    proc = _playbook(tmp_path, PLAY, {"all": {"hosts": hosts}})
    assert proc.returncode == 2
    assert "its NVLink domain lists 19 nodes, more than 18 (nvidia_imex_max_nodes)" in proc.stdout
    assert not list(tmp_path.glob("*.cfg"))


def test_given_addresses_win_over_the_inventory(tmp_path):
    proc = _playbook(tmp_path, PLAY, {"all": {"hosts": {"a": {"ansible_host": "127.0.9.1"}}}},
                     {"nvidia_imex_nodes": ["127.0.9.1", "127.0.9.2"]})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "a.cfg").read_text() == "127.0.9.1\n127.0.9.2\n"


def test_argument_spec_refuses_bad_input_before_any_task(tmp_path):
    play = """
- hosts: all
  connection: local
  gather_facts: false
  roles:
    - role: nvidia_imex
      vars: {nvidia_imex_version: "580.105.08", nvidia_imex_enabled: true, nvidia_imex_max_nodes: many}
"""
    proc = _playbook(tmp_path, play, {"all": {"hosts": {"a": {"ansible_host": "127.0.9.1"}}}})
    assert proc.returncode == 2
    assert "Validating arguments against arg spec" in proc.stdout
    assert "nvidia_imex_max_nodes" in proc.stdout and "int" in proc.stdout
    assert "Load OS-specific variables" not in proc.stdout


def test_every_default_is_in_the_argument_spec_and_the_version_is_required():
    spec = yaml.safe_load((ROLE / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    assert set(defaults) | {"nvidia_imex_version"} == set(spec)
    assert spec["nvidia_imex_version"]["required"] is True and "nvidia_imex_version" not in defaults
    assert all(name.startswith("nvidia_imex_") for name in spec)
    for name, value in defaults.items():
        assert spec[name]["default"] == value, name


def test_playbook_runs_it_after_the_driver_and_before_the_holds_which_take_its_pin():
    roles = yaml.safe_load((ROOT / "playbooks/provision.yml").read_text())[0]["roles"]
    names = [r["role"] for r in roles]
    assert names.index("nvidia_driver") < names.index("nvidia_imex") < names.index("stack_hold")
    assert roles[names.index("nvidia_imex")]["tags"] == ["imex"]
    assert "nvidia_imex_holds:" in (ROLE / "tasks/imex.yml").read_text()  # stack_hold holds every <role>_holds
    group_vars = yaml.safe_load((ROOT / "playbooks/group_vars/all.yml").read_text())
    assert group_vars["nvidia_imex_enabled"] == "{{ provision_stack_switches.imex }}"
    assert group_vars["nvidia_imex_version"] == "{{ provision_stack.driver_version }}"


def test_imex_only_on_imex_trays_and_nvlsm_only_on_nvlink5_nvswitch_boards():
    """The roles' switches (install_facts.switches, which playbooks/group_vars/all.yml hands them) follow the profile:
    IMEX where the NVLink domain runs it (GB200), NVLSM where an NVSwitch board has NVLink 5 (HGX B200), neither on
    an HGX H100 (Fabric Manager alone) nor on a PCIe board."""
    seen = {}
    for name in profiles.names():
        data = profiles.load(name).data
        switches = install_facts.switches(data)
        assert switches["imex"] == profiles.load(name).has("imex"), name
        nvlink = (data["gpu"].get("nvlink") or {}).get("version", 0)
        assert switches["nvlsm"] == (bool(data["gpu"].get("nvswitch")) and int(nvlink) >= 5), name
        seen[name] = (switches["imex"], switches["nvlsm"])
    assert seen["gb200-nvl72"] == (True, False) and seen["b200-hgx"] == (False, True)
    assert seen["h100-sxm5-80g-ndr"] == (False, False)
