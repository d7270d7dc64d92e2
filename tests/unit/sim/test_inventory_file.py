"""The hosts.yml `provision sim up` writes lints as the project's own YAML: `make provision` then
`make lint` (yamllint -s . reads every *.yml in the checkout, inventory/sim/hosts.yml included)."""
from __future__ import annotations

import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

from provision import paths
from provision.sim import rack
from provision.sim.rack import SimNode

NODES = [SimNode(f"node{i:02d}", f"127.0.1.{10 + i}", 0) for i in range(1, 5)]
PLAN = ["debian12", "rocky9", "ubuntu2204", "ubuntu2404"]


def written(tmp_path, monkeypatch, extra_args: str = "") -> str:
    site = yaml.safe_load(rack.SITE_VARS.read_text())
    site["ansible_ssh_common_args"] += extra_args
    (tmp_path / "site.yml").write_text(yaml.safe_dump(site, sort_keys=False))
    monkeypatch.setattr(rack, "SITE_VARS", tmp_path / "site.yml")
    (tmp_path / "inv").mkdir()
    rack._write_inventory(tmp_path / "inv", NODES, PLAN, "h100-sxm5-80g-ndr", "http://127.0.0.1:40000")
    return (tmp_path / "inv" / "hosts.yml").read_text()


def problems(text: str) -> list[str]:
    config = YamlLintConfig(file=str(paths.ROOT / ".yamllint"))
    return [f"{p.line}:{p.column} {p.desc} ({p.rule})" for p in linter.run(text, config)]


def test_the_written_inventory_lints_with_the_projects_yamllint_config(tmp_path, monkeypatch):
    text = written(tmp_path, monkeypatch)
    assert problems(text) == []
    assert "framework_venv_envs:\n      - name: numpy\n" in text  # a list indented under its key


def test_a_long_value_is_folded_under_the_line_limit_and_reads_back_the_same(tmp_path, monkeypatch):
    extra = " -o ProxyJump=root@bastion.example.org:2222" * 6  # a site's longer SSH options
    text = written(tmp_path, monkeypatch, extra)
    assert problems(text) == []
    assert max(len(line) for line in text.splitlines()) <= 160
    data = yaml.safe_load(text)["all"]
    assert data["vars"]["ansible_ssh_common_args"].endswith(extra)
    assert data["children"]["gpu_nodes"]["hosts"]["node02"] == {
        "ansible_host": "127.0.1.12", "provision_sim_os": "rocky9", "provision_os": "rhel9"}


def test_the_yamllint_config_finds_the_indentation_pyyaml_writes_by_default():
    """The check above can fail: PyYAML's own layout (lists flush with their key) is refused."""
    assert any("(indentation)" in p for p in problems(yaml.safe_dump({"a": {"b": [1, 2]}}, explicit_start=True)))
