"""The health_check role: its templates rendered with the role's own defaults and vars (health.json from a host's
variables less the BMC's credentials, the wrappers, the slurm.conf fragment with and without the prolog and epilog,
the systemd units), its argument spec matching its defaults, and its place in the provision playbook."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from provision import paths

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "health_check"
DEFAULTS = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
VARS = yaml.safe_load((ROLE / "vars/main.yml").read_text())
SPEC = yaml.safe_load((ROLE / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
HOSTVARS = {
    "ansible_host": "127.0.1.1", "ansible_user": "root",
    "provision_profile": "h100-sxm5-80g-ndr", "provision_rack": "r1",
    "provision_reference_overrides": {"nvbandwidth": {"h2d_gbps": 50}},
    "provision_bmc_address": "127.101.0.1", "provision_bmc_username": "admin",
    "provision_bmc_password_file": "/secret/bmc", "provision_bmc_password_env": "BMC_PW",
    "provision_bmc_ca_file": "/secret/ca.pem", "provision_ssh_proxy": "jump",
    "provision_known_hosts_file": "/controller/known_hosts",
    "provision_profile_data": {"gpu": {}}, "provision_stack": {"driver_version": "580"},
    "nvidia_driver_version": "580.105.08",
}


def _filters_of_ansible(env: jinja2.Environment) -> jinja2.Environment:
    """The few Ansible filters and tests the templates use, as Ansible defines them."""
    env.filters["to_nice_json"] = lambda v: json.dumps(v, indent=4, sort_keys=True, ensure_ascii=False)
    env.filters["quote"] = lambda v: shlex.quote(str(v))
    env.tests["match"] = lambda v, pattern: re.match(pattern, v) is not None
    return env


def render(name: str, **overrides) -> str:
    env = _filters_of_ansible(jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"),
                                                 keep_trailing_newline=True, undefined=jinja2.StrictUndefined))
    context = {**DEFAULTS, **VARS, "health_check_drain": "self", "inventory_hostname": "gpu001",
               "hostvars": {"gpu001": HOSTVARS}, **HOSTVARS, **overrides}
    return env.get_template(name).render(context)


def test_health_json_holds_the_hosts_provision_variables_but_no_credential():
    config = json.loads(render("health.json.j2"))
    assert config == {"host": "gpu001", "profile": "h100-sxm5-80g-ndr", "slurm_node": "gpu001",
                      "vars": {"provision_bmc_address": "127.101.0.1", "provision_rack": "r1",
                               "provision_reference_overrides": {"nvbandwidth": {"h2d_gbps": 50}}}}
    text = render("health.json.j2")
    assert "admin" not in text and "/secret" not in text and "BMC_PW" not in text and "jump" not in text
    assert "/controller" not in text


def test_health_json_names_the_slurm_node_where_the_host_has_one_and_keeps_what_the_site_includes():
    hostvars = {**HOSTVARS, "provision_slurm_node": "gpu-a-001"}
    config = json.loads(render("health.json.j2", hostvars={"gpu001": hostvars}, provision_slurm_node="gpu-a-001",
                               health_check_exclude_vars=[]))
    assert config["slurm_node"] == "gpu-a-001" and config["vars"]["provision_slurm_node"] == "gpu-a-001"
    assert config["vars"]["provision_stack"] == {"driver_version": "580"}  # not excluded by the site
    assert "provision_bmc_username" not in config["vars"]  # the credentials always are


def test_the_node_file_passes_the_health_commands_own_reader(tmp_path):
    node = pytest.importorskip("provision.health.node")
    path = tmp_path / "health.json"
    path.write_text(render("health.json.j2"))
    read = node.from_config(path)
    assert read.slurm_node == "gpu001" and read.host.name == "gpu001"


def test_wrapper_runs_the_health_command_with_absolute_paths_and_passes_its_arguments(tmp_path):
    text = render("provision-health.j2")
    assert text.startswith("#!/bin/sh\n")
    assert "\nexport PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n" in text
    assert text.rstrip().endswith(
        "exec /opt/provision/venv/bin/provision health --config /etc/provision/health.json --state-dir "
        "/var/lib/provision/health --drain self \"$@\"")
    optional = render("provision-health.j2", health_check_textfile_dir="/var/lib/node_exporter/textfile",
                      health_check_budget_s=50, health_check_drain="none")
    assert optional.rstrip().endswith("--drain none --textfile-dir /var/lib/node_exporter/textfile --budget 50 \"$@\"")
    script = tmp_path / "provision-health"
    script.write_text(text)
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0


def test_prolog_and_epilog_wrappers_exec_the_wrapper_in_their_mode():
    for mode in ("prolog", "epilog"):
        text = render("provision-health-mode.j2", __health_check_mode=mode)
        assert text.startswith("#!/bin/sh\n")
        assert text.rstrip().endswith(f"exec /usr/local/sbin/provision-health --mode {mode} \"$@\"")


def _settings(text: str) -> dict:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_slurm_fragment_sets_the_health_check_and_the_prolog_and_epilog_only_where_asked():
    assert _settings(render("provision-health.conf.j2")) == {
        "HealthCheckProgram": "/usr/local/sbin/provision-health", "HealthCheckInterval": "300",
        "HealthCheckNodeState": "ANY,CYCLE"}
    both = _settings(render("provision-health.conf.j2", health_check_prolog=True, health_check_epilog=True,
                            health_check_interval_s=600))
    assert both["Prolog"] == "/usr/local/sbin/provision-health-prolog"
    assert both["Epilog"] == "/usr/local/sbin/provision-health-epilog" and both["HealthCheckInterval"] == "600"
    assert "Epilog" not in _settings(render("provision-health.conf.j2", health_check_prolog=True))
    assert "Include /etc/slurm/provision-health.conf" in render("provision-health.conf.j2")


def test_systemd_units_run_the_wrapper_every_interval():
    service = render("provision-health.service.j2")
    assert "Type=oneshot\n" in service and "ExecStart=/usr/local/sbin/provision-health --mode periodic\n" in service
    timer = render("provision-health.timer.j2", health_check_interval_s=120)
    assert "OnUnitActiveSec=120\n" in timer and "OnBootSec=120\n" in timer and "WantedBy=timers.target" in timer


def test_every_default_is_in_the_argument_spec_with_its_value():
    assert set(DEFAULTS) == set(SPEC)
    assert all(name.startswith("health_check_") for name in SPEC)
    assert all(name.startswith("__health_check_") for name in VARS)
    for name, value in DEFAULTS.items():
        if isinstance(value, str) and "{{" in value:  # computed: the spec names no default
            assert "default" not in SPEC[name], name
        else:
            assert SPEC[name]["default"] == value, name
    assert SPEC["health_check_drain"]["choices"] == ["self", "none"]


def test_the_secrets_left_out_are_those_the_health_command_refuses():
    node = pytest.importorskip("provision.health.node")
    assert set(node.SECRET_VARS) <= set(VARS["__health_check_secret_vars"])
    assert str(node.CONFIG) == VARS["__health_check_config"]


def test_playbook_runs_it_last_only_where_enabled():
    roles = yaml.safe_load((ROOT / "playbooks/provision.yml").read_text())[0]["roles"]
    entry = roles[-1]
    assert entry == {"role": "health_check", "tags": ["health_check"],
                     "when": "health_check_enabled | default(false) | bool"}


def test_argument_spec_refuses_bad_input_before_any_task(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.9.1}\n")
    (tmp_path / "play.yml").write_text("""
- hosts: all
  connection: local
  gather_facts: false
  roles:
    - role: health_check
      vars: {health_check_enabled: true, health_check_drain: always, health_check_interval_s: often}
""")
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(ROOT / "roles"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_RETRY_FILES_ENABLED": "0"}
    extra = json.dumps({"ansible_python_interpreter": sys.executable})
    proc = subprocess.run([paths.tool("ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml"), "-e", extra],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 2
    assert "Validating arguments against arg spec" in proc.stdout
    assert "health_check_drain" in proc.stdout and "health_check_interval_s" in proc.stdout
    assert "Load OS-specific variables" not in proc.stdout
