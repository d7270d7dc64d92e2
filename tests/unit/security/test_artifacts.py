"""No secret in a run's artifacts: a real ansible-runner run against a node that refuses the
connection (a closed port on 127.0.0.1) writes its artifacts; none of them may hold the
controller's secrets, the host's password or a vault-encrypted value, and they are the owner's only."""
import os
import sys
import socket
import stat
import subprocess

from provision import paths
from provision.runner import ansible

from .conftest import PROFILE

ENV_SECRET = "AKIAplantedEnvSecret0123456789"
PASSWORD = "planted-ansible-password-4711"
VAULTED = "planted-vaulted-value-0815"
VAULT_PASSWORD = "planted-vault-password-2342"


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encrypt(value: str, password_file) -> str:
    proc = subprocess.run([paths.tool("ansible-vault"), "encrypt_string", "--vault-password-file", str(password_file),
                           "--name", "site_token", value], capture_output=True, text=True, check=True)
    return proc.stdout


def test_artifacts_hold_no_secret_and_are_owner_only(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:{ENV_SECRET}@proxy.example:3128")
    password_file = tmp_path / "vault-password.txt"
    password_file.write_text(VAULT_PASSWORD + "\n")
    inv = tmp_path / "inventory"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "group_vars" / "all.yml").write_text(encrypt(VAULTED, password_file))
    (inv / "hosts.yml").write_text(
        f"all:\n  hosts:\n    gpu01:\n      ansible_host: 127.0.0.1\n      ansible_port: {closed_port()}\n"
        f"      ansible_user: nobody\n      ansible_password: {PASSWORD}\n      provision_profile: {PROFILE}\n"
        f"      ansible_ssh_common_args: -o UserKnownHostsFile={tmp_path}/known_hosts -o ConnectTimeout=5\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = ansible.run_playbook(ansible.PlaybookRequest("site.yml", [inv], limit=["gpu01"],
                                                          vault_args=["--vault-password-file", str(password_file)]),
                                  run_dir / "ansible", progress=lambda *_: None)
    assert result.hosts["gpu01"].status in ("unreachable", "failed")  # it really tried, and wrote its events
    files = [os.path.join(root, f) for root, _, names in os.walk(run_dir / "ansible") for f in names]
    assert any(f.endswith("/command") for f in files) and any("/job_events/" in f for f in files)
    for path in files:
        text = open(path, encoding="utf-8", errors="replace").read()
        for secret in (ENV_SECRET, PASSWORD, VAULTED, VAULT_PASSWORD):
            assert secret not in text, f"{secret} in {path}"
    for root, dirs, names in os.walk(run_dir / "ansible"):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in names:
            assert stat.S_IMODE(os.lstat(os.path.join(root, name)).st_mode) == 0o600, name
    assert not (run_dir / "ansible" / "env").exists()  # ansible-runner's env/ files: not written


BMC_PASSWORD = "planted-bmc-password-8086"
FAKE_IPMITOOL = """#!/bin/sh
# Records its argv and whether it was given the password in its environment, then answers as ipmitool would.
printf '%s\\n' "$*" >> "$IPMITOOL_LOG"
[ "$IPMI_PASSWORD" = "{password}" ] && echo "env ok" >> "$IPMITOOL_LOG"
case "$*" in
  *"chassis status"*) cat {data}/chassis_status.txt ;;
  *"mc info"*) cat {data}/mc_info.txt ;;
  *"sel elist"*) cat {data}/sel_elist.txt ;;
  *"sensor"*) cat {data}/sensor.txt ;;
esac
"""


def test_bmc_commands_leave_the_bmc_password_nowhere(tmp_path, monkeypatch):
    """`provision bmc` over Redfish (the HTTPS stub) and IPMI (a recording ipmitool on PATH), a wrong password and
    a refused power action included: the password is in no output, no error line, no child's argv, no file
    written; it reaches ipmitool only in its environment and the BMC only in the session login's body."""
    from tests.unit.bmc import _stub

    password_file = tmp_path / "bmc-password"
    password_file.write_text(BMC_PASSWORD + "\n")
    password_file.chmod(0o600)
    server = _stub.Stub(tmp_path, BMC_PASSWORD)
    data = paths.ROOT / "tests/data/redfish_client/ipmitool"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ipmitool").write_text(FAKE_IPMITOOL.format(password=BMC_PASSWORD, data=data))
    (bin_dir / "ipmitool").chmod(0o755)
    log = tmp_path / "ipmitool.log"
    inv = tmp_path / "hosts.yml"
    common = (f"      provision_bmc_username: admin\n      provision_bmc_password_file: {password_file}\n")
    inv.write_text("all:\n  hosts:\n    rf01:\n      ansible_host: 127.0.1.5\n"
                   f"      provision_bmc_address: 127.0.0.1:{server.port}\n      provision_bmc_ca_file: {server.ca}\n"
                   f"{common}    ipmi01:\n      ansible_host: 127.0.1.6\n      provision_bmc_address: 127.0.0.1\n"
                   f"      provision_bmc_protocol: ipmi\n{common}")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "IPMITOOL_LOG": str(log)}
    outputs = []
    try:
        for argv in (["status"], ["log"], ["sensors"], ["inventory"], ["status", "--json"], ["log", "--json"],
                     ["power", "cycle"]):
            proc = subprocess.run([sys.executable, "-m", "provision", "bmc", *argv, "-i", str(inv)],
                                  capture_output=True, text=True, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                                  timeout=120)
            outputs.append(proc.stdout + proc.stderr)
        wrong = tmp_path / "wrong"
        wrong.write_text("not-the-password\n")
        wrong.chmod(0o600)
        inv.write_text(inv.read_text().replace(str(password_file), str(wrong)))
        proc = subprocess.run([sys.executable, "-m", "provision", "bmc", "status", "-i", str(inv), "--limit", "rf01"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        outputs.append(proc.stdout + proc.stderr)
        assert proc.returncode == 8 and "login refused (HTTP 401)" in proc.stderr
    finally:
        server.close()
    assert "power_state" in outputs[4] and "HOST" in outputs[0]
    for text in outputs:
        assert BMC_PASSWORD not in text
    recorded = log.read_text()
    assert "env ok" in recorded and "-E" in recorded and BMC_PASSWORD not in recorded
    for method, path, body in server.requests:
        assert BMC_PASSWORD not in path and (BMC_PASSWORD not in body or path.endswith("/Sessions"))
    holders = {str(password_file), str(bin_dir / "ipmitool")}  # the password's file, and the fake's own comparison
    for root, _, names in os.walk(tmp_path):
        for name in names:
            full = os.path.join(root, name)
            if full not in holders:
                assert BMC_PASSWORD not in open(full, encoding="utf-8", errors="replace").read(), full
