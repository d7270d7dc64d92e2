"""Issue 21 causes 7 and 16: an empty option value is refused by name (exit 2), and every bad argument
is exit 2 with one cut, readable line, never an internal error."""
from __future__ import annotations

import pytest

from provision import cli

INVENTORY = "all:\n  vars: {provision_profile: h100-sxm5-80g-ndr}\n  hosts:\n    gpu01: {ansible_host: 127.0.0.1}\n"


def error_line(capsys, *argv: str) -> str:
    try:
        rc = cli.main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("provision: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("argv,named", [
    (["run", "-i", "INV", "--limit", ""], "--limit ''"),
    (["install", "-i", "INV", "--limit", "  "], "--limit '  '"),
    (["run", "-i", "INV", "--limit", " , "], "--limit ' , ': name at least one host or group"),
    (["burnin", "-i", "INV", "--checks", ""], "--checks ''"),
    (["run", "-i", "INV", "--tags", ""], "--tags ''"),
    (["burnin", "-i", "INV", "--history", ""], "--history ''"),
    (["run", "-i", ""], "-i '': not an inventory"),
    (["inventory", "-i", "INV", "--limit", ""], "--limit ''"),
    (["history", "--host", ""], "--host ''"),
    (["fabric", "--ibnetdiscover", ""], "--ibnetdiscover ''"),
    (["evaluate", ""], "run_dir ''"),
    (["merge", "a", ""], "RUN_DIR ''"),
])
def test_an_empty_value_is_refused_by_name_before_anything_runs(tmp_path, capsys, monkeypatch, argv, named):
    monkeypatch.setattr("provision.paths.RUNS", tmp_path / "runs")
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    line = error_line(capsys, *[str(tmp_path) if a == "INV" else a for a in argv])
    assert named in line
    assert not (tmp_path / "runs").exists()  # no run was made


def test_a_100000_character_path_is_cut_in_the_message(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("provision.paths.RUNS", tmp_path)
    for argv in (["report", "/tmp/" + "a/" * 50_000], ["evaluate", "b" * 100_000],
                 ["fabric", "--ibnetdiscover", "/tmp/" + "d" * 100_000], ["history", "import", "c" * 100_000]):
        line = error_line(capsys, *argv)
        assert len(line) < 1000, (argv[0], len(line))
        assert "characters]" in line


def test_plan_gpus_of_401_digits_is_bad_input(capsys):
    line = error_line(capsys, "plan", "--gpus", "9" * 401, "--profile", "h100-sxm5-80g-ndr")
    assert "--gpus: at least 1 and at most 100,000,000, got 999999999999... (401 digits)" in line
    line = error_line(capsys, "plan", "--gpus", "9" * 5000, "--profile", "h100-sxm5-80g-ndr")  # past int()'s limit
    assert "--gpus" in line and len(line) < 1000
    line = error_line(capsys, "plan", "--gpus", "8", "--profile", "h100-sxm5-80g-ndr", "--switch-radix", "9" * 400)
    assert "--switch-radix" in line
    assert "--pue: at most 10" in error_line(capsys, "plan", "--gpus", "8", "--profile", "h100-sxm5-80g-ndr",
                                             "--pue", "1e308")


def test_a_usage_error_echoing_a_long_value_is_one_cut_line(capsys):
    line = error_line(capsys, "run", "-i", "x", "--scope", "\x1b[2J" + "z" * 100_000)
    assert "invalid choice" in line and len(line) < 2100 and "\\x1b[2J" in line
