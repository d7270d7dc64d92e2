"""The simulator is fenced off: the framework loads it only through ``provision.embedded``, and a
rack's state lives outside its inventory folder."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from provision import embedded, paths
from provision.sim import rack, state


def test_importing_the_framework_loads_no_simulator_code():
    code = ("import importlib, provision.cli, provision.embedded, sys; "
            "[importlib.import_module(m) for m in provision.cli.COMMANDS.values()]; "
            "print([m for m in sys.modules if m.startswith('provision.sim')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ensure_running_ignores_any_other_inventory(tmp_path):
    code = (f"import provision.embedded as e, sys; e.ensure_running(__import__('pathlib').Path({str(tmp_path)!r})); "
            "print([m for m in sys.modules if m.startswith('provision.sim')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_state_folder_is_outside_the_inventory_and_one_per_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(state.ROOT_ENV, str(tmp_path / "racks"))
    first, second = tmp_path / "site-a" / "rack", tmp_path / "site-b" / "rack"
    first.mkdir(parents=True)
    (tmp_path / "link").symlink_to(first)
    assert rack.state_dir(first).parent == tmp_path / "racks"
    assert rack.state_dir(first).name.startswith("rack-")
    assert rack.state_dir(first) != rack.state_dir(second)
    assert rack.state_dir(tmp_path / "link") == rack.state_dir(first)
    monkeypatch.chdir(tmp_path / "site-a")
    assert rack.state_dir(first.relative_to(tmp_path / "site-a")) == rack.state_dir(first)


def test_the_default_state_root_is_under_var_lib(monkeypatch):
    monkeypatch.delenv(state.ROOT_ENV, raising=False)
    assert rack.state_dir(embedded.SIM_INVENTORY).parent == state.DEFAULT_ROOT


def test_hosts_yml_points_into_the_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(state.ROOT_ENV, str(tmp_path / "racks"))
    inv = tmp_path / "inv"
    inv.mkdir()
    rack._write_inventory(inv, [rack.SimNode("node01", "127.0.9.10", 1)], ["debian12"], "h100-sxm5-80g-ndr",
                          "http://127.0.0.1:1/")
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())["all"]["vars"]
    sdir = rack.state_dir(inv)
    assert hosts["ansible_ssh_private_key_file"] == str(sdir / "id_ed25519")
    assert hosts["provision_known_hosts_file"] == str(sdir / "known_hosts")


def test_down_clears_the_state_folder_and_an_old_one_inside_the_inventory(tmp_path, monkeypatch):
    monkeypatch.setenv(state.ROOT_ENV, str(tmp_path / "racks"))
    inv = tmp_path / "inv"
    for sdir in (rack.state_dir(inv), state.legacy_folder(inv)):
        (sdir / "nodes/node01/upper").mkdir(parents=True)
        (sdir / "rack.json").write_text(json.dumps({"nodes": []}))
    (inv / "hosts.yml").write_text("---\n")
    (inv / "group_vars").mkdir()
    assert rack.down(inv, log=lambda *_: None) == 0
    assert not rack.state_dir(inv).exists() and not state.legacy_folder(inv).exists()
    assert [p.name for p in inv.iterdir()] == ["group_vars"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["provision", "install", "burnin"])
def test_make_builds_the_simulated_base_for_the_embedded_default_only(target, tmp_path):
    def planned(inventory: str) -> str:
        return subprocess.run(["make", "-n", "-C", str(paths.ROOT), target, f"INVENTORY={inventory}"],
                              capture_output=True, text=True, check=True).stdout

    assert "sim base" not in planned(str(tmp_path)) and "debootstrap" not in planned(str(tmp_path))
    assert "sim base" in planned("sim") and "sim base" in planned(str(embedded.SIM_INVENTORY))
