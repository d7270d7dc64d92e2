"""No secret in a run's artifacts: a real ansible-runner run against a node that refuses the
connection (a closed port on 127.0.0.1) writes its artifacts; none of them may hold the
controller's secrets, the host's password or a vault-encrypted value, and they are the owner's only."""
import os
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
