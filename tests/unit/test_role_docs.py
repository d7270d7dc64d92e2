"""Each role's README carries its variables as generated from its meta/argument_specs.yml (the roles'
documented interface), and is current: regenerating it gives the same text."""
import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("role_docs", ROOT / "tools" / "role_docs.py")
assert _spec and _spec.loader
role_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(role_docs)


def test_every_role_readme_is_current():
    stale = role_docs.stale()
    assert not stale, f"role READMEs not current: {', '.join(map(str, stale))} (run: {role_docs.COMMAND})"


def test_every_role_has_a_generated_section_naming_each_variable():
    specs = sorted((ROOT / "roles").glob("*/meta/argument_specs.yml"))
    assert len(specs) == len([d for d in (ROOT / "roles").iterdir() if d.is_dir()])
    for path in specs:
        readme = (path.parent.parent / "README.md").read_text()
        options = role_docs.yaml.safe_load(path.read_text())["argument_specs"]["main"]["options"]
        assert readme.count(role_docs.BEGIN) == 1 and readme.count(role_docs.END) == 1, path
        assert all(f"| `{name}` |" in readme for name in options), path


def test_regenerating_keeps_the_hand_text_and_follows_the_spec(tmp_path):
    role = tmp_path / "roles" / "nccl"
    shutil.copytree(ROOT / "roles" / "nccl" / "meta", role / "meta")
    (role / "README.md").write_text("# nccl\n\nHand-written: why this role exists.\n")
    assert role_docs.stale(tmp_path / "roles", write=True) == [role / "README.md"]
    first = (role / "README.md").read_text()
    assert first.startswith("# nccl\n\nHand-written: why this role exists.\n\n" + role_docs.BEGIN)
    assert "| `nccl_dev` | bool | `true` |  | Also install libnccl-dev. |" in first
    assert "| `nccl_version` | str | required |" in first
    assert role_docs.stale(tmp_path / "roles") == []  # a second run changes nothing
    spec = role / "meta" / "argument_specs.yml"
    spec.write_text(spec.read_text().replace("default: true", "default: false"))
    assert role_docs.main(["--check", str(tmp_path / "roles")]) == 1 and (role / "README.md").read_text() == first
    role_docs.stale(tmp_path / "roles", write=True)
    assert "| `nccl_dev` | bool | `false` |" in (role / "README.md").read_text()
    assert (role / "README.md").read_text().startswith("# nccl\n\nHand-written: why this role exists.\n\n")
