"""Bad input gets one line naming file, host and field, and exit status 2; never a traceback."""
import subprocess
import sys

import pytest

PROFILE = "provision_profile: h100-sxm5-80g-ndr"


def provision(*args):
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True)


def one_line_error(proc):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("provision: error: ")
    return lines[0]


def test_missing_inventory():
    line = one_line_error(provision("run", "-i", "inventory/does-not-exist"))
    assert "inventory/does-not-exist: no such inventory" in line


@pytest.mark.parametrize("hosts,expected", [
    (f"all:\n  vars: {{{PROFILE}}}\n  hosts:\n    gpu01: {{ansible_host: 10.0.0.1}}\n    gpu02: {{ansible_user: root}}\n",
     "hosts.yml: host gpu02: missing field 'ansible_host'"),
    ("all:\n  hosts:\n    gpu01: {ansible_host: 10.0.0.1}\n", "host gpu01: missing field 'provision_profile'"),
    ("all:\n  hosts:\n    gpu01: {ansible_host: 10.0.0.1, provision_profile: h999}\n",
     "host gpu01: field 'provision_profile'"),
    (f"all:\n  vars: {{{PROFILE}}}\n  hosts:\n    gpu01: {{ansible_host: 10.0.0.1, ansible_port: ssh}}\n",
     "host gpu01: field 'ansible_port' is not a port number"),
    ("all:\n  hosts:\n   - gpu01: [\n", "ansible-inventory could not read it"),
    ("all:\n  hosts: {}\n", "inventory has no hosts"),
])
def test_bad_inventory(tmp_path, hosts, expected):
    (tmp_path / "hosts.yml").write_text(hosts)
    line = one_line_error(provision("run", "-i", str(tmp_path)))
    assert expected in line and str(tmp_path) in line


def test_parse_refuses_text_that_is_not_the_tool(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\nthis is not nvidia-smi\n")
    line = one_line_error(provision("parse", "nvidia-smi-qx", str(path)))
    assert "notes.txt" in line


def test_unknown_check_is_refused():
    line = one_line_error(provision("burnin", "-i", "sim", "--checks", "gpu_health,nope"))
    assert "--checks: unknown check nope (known: gpu_health," in line
