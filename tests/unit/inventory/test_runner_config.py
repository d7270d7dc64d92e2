"""What reaches ansible-runner: host key checking on, every -i, vault options; and the install
phase targets only GPU nodes. Nothing here runs a playbook."""
import os

from provision import inventory, paths
from provision.commands import _job
from provision.runner import ansible
from provision.runner.ansible import PlaybookResult

DATA = paths.ROOT / "tests" / "data" / "inventories"
LAYERS = [DATA / "slurm-appliance" / "common" / "inventory", DATA / "slurm-appliance" / "site" / "inventory"]


def test_runner_config_checks_host_keys_and_takes_every_inventory(tmp_path, monkeypatch):
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    request = ansible.PlaybookRequest("site.yml", LAYERS, limit=["site-gpu-0"],
                                      vault_args=["--vault-password-file", "/secrets/pw"])
    kwargs = ansible.runner_kwargs(request, tmp_path)
    assert kwargs["envvars"]["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    runner = ansible.prepare(kwargs)  # ansible-runner's own config, prepared as for a run
    assert runner.config.env["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    command = runner.config.command
    assert [command[i + 1] for i, a in enumerate(command) if a == "-i"] == [str(p) for p in LAYERS]
    assert command[command.index("--vault-password-file") + 1] == "/secrets/pw"
    assert command[command.index("--limit") + 1] == "site-gpu-0"


def test_user_environment_cannot_turn_host_key_checking_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "False")
    runner = ansible.prepare(ansible.runner_kwargs(ansible.PlaybookRequest("site.yml", LAYERS[0]), tmp_path))
    assert runner.config.env["ANSIBLE_HOST_KEY_CHECKING"] == "True"


def test_project_config_keeps_strict_ssh_args():
    text = (paths.ROOT / "ansible.cfg").read_text()
    assert "host_key_checking = True" in text and "StrictHostKeyChecking=yes" in text


def test_install_targets_only_gpu_nodes(tmp_path, monkeypatch):
    calls = []

    def fake_run_playbook(request, artifacts_dir, **_):
        calls.append((request.playbook, list(request.inventory), request.limit, request.vault_args))
        return PlaybookResult(request.playbook, 0, "successful", {}, "ansible/artifacts/x")

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    monkeypatch.setattr(ansible, "run_playbook", fake_run_playbook)
    vault = inventory.Vault(password_files=(str(DATA / "homelab-vault-password.txt"),))
    status = _job.run(_job.JobOptions(("install",), inventory=(str(DATA / "homelab"),), vault=vault),
                      progress=lambda *_: None)
    assert calls == [("site.yml", [DATA / "homelab"], ["gpubox"],
                      ["--vault-password-file", str(DATA / "homelab-vault-password.txt")])]
    assert status == 1  # the fake run installed nothing: gpubox never ran
    assert os.listdir(tmp_path)


def test_forks_reach_ansible_playbook_and_default_to_every_host(tmp_path, monkeypatch):
    request = ansible.PlaybookRequest("site.yml", LAYERS[0], forks=700)
    command = ansible.prepare(ansible.runner_kwargs(request, tmp_path)).config.command
    assert command[command.index("--forks") + 1] == "700"
    calls = []

    def fake_run_playbook(request, artifacts_dir, **_):
        calls.append(request.forks)
        return PlaybookResult(request.playbook, 0, "successful", {}, "ansible/artifacts/x")

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    monkeypatch.setattr(ansible, "run_playbook", fake_run_playbook)
    vault = inventory.Vault(password_files=(str(DATA / "homelab-vault-password.txt"),))
    for forks in (None, 1, 50):  # homelab has one GPU node: never more forks than hosts
        _job.run(_job.JobOptions(("install",), inventory=(str(DATA / "homelab"),), vault=vault, forks=forks),
                 progress=lambda *_: None)
    assert calls == [1, 1, 1]


def test_a_temp_folder_too_long_for_a_socket_moves_the_control_sockets_to_tmp(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(ansible.tempfile, "tempdir", str(deep))
    folder = ansible.control_path_dir(tmp_path / "run")
    try:
        assert folder.startswith("/tmp/provision-cp-")
        assert len(folder) + len("/0123456789.0123456789abcdef") <= 107
    finally:
        os.rmdir(folder)
    ansible.close_masters(str(tmp_path / "no-such-folder"))  # nothing to close: no error
