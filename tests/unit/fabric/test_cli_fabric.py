"""``provision fabric --ibnetdiscover FILE ...``: text and JSON views, degraded cables, bad input; and the
live path's commands (one ``ibnetdiscover -C <dev> -P 1`` per HCA of the profile) with a stand-in transport."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision import cli, profiles
from provision.commands import fabric as fabric_command
from provision.engine.transport import CommandResult
from provision.errors import CommandError
from provision.sim.synth import fat_tree, world

from tests.unit.fabric._sim import run_tool

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
MANPAGE = SAMPLES / "ibnetdiscover_manpage_1xSDR_degraded_width.txt"
UFM = SAMPLES / "ibnetdiscover_nvidia_kb_ufm_lab_mixed_speeds_selfloops_smp_error.txt"
HOSTS = [f"node{i:02d}" for i in range(1, 9)]


@pytest.fixture()
def sim_dump(tmp_path) -> Path:
    w = world(fat_tree(HOSTS, leaves=2, spines=2, width_speed="4xNDR"))
    cable = next(c for c in w["planes"][0]["cables"] if c["b"].startswith("S-"))
    cable.update(width="2x", a_width_speed="2xNDR", b_width_speed="4xNDR")
    done = run_tool(w, tmp_path, "node01")
    path = tmp_path / "sim_rail0.txt"
    path.write_text(done.stdout)
    return path


def fabric(capsys, *args: str) -> tuple[int, str, str]:
    rc = cli.main(["fabric", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_text_report_of_three_files(capsys, sim_dump) -> None:
    rc, out, err = fabric(capsys, "--ibnetdiscover", str(MANPAGE), "--ibnetdiscover", str(UFM),
                          "--ibnetdiscover", str(sim_dump))
    assert rc == 0
    assert out.count("\nplane ") + out.startswith("plane ") == 3
    # issue 23: a long plane name (the dump's path) puts the counts on a line of their own
    assert f"plane {sim_dump}:\n  4 switches (2 leaves, 2 spines), 8 HCA ports" in out
    assert "    hosts: node01 mlx5_0 [1] 4xNDR, node02 mlx5_0 [2] 4xNDR" in out
    assert "  spine S-" in out and "    downlinks: [1]->S-" in out and "    oversubscription: 1.0" in out
    # issue 23: switches by the name their description gives, node ids beside them
    assert ("ISR9024 Voltaire[10] <-> SW-6IB4 Voltaire[1] 1xSDR (its two ends disagree);\n"
            "      S-005442ba00003080[10] <-> S-0008f10400410015[1]") in out
    assert "2xNDR (its two ends disagree)" in out
    assert "src/query_smp.c:195; umad" in err and "most common width and speed" in err


def test_json_is_the_fabric_view(capsys, sim_dump) -> None:
    rc, out, _err = fabric(capsys, "--ibnetdiscover", str(sim_dump), "--json")
    view = json.loads(out)
    assert rc == 0 and set(view) == {"expected_width_speed", "planes", "leaves", "spines", "degraded_links",
                                     "missing_uplinks"}  # issue 23: the leaves missing uplinks
    assert view["expected_width_speed"] == "4xNDR"
    assert [p["switches"] for p in view["planes"]] == [4] and len(view["leaves"]) == len(view["spines"]) == 2
    assert [d["width_speed"] for d in view["degraded_links"]] == ["2xNDR"]
    assert {h["host"] for leaf in view["leaves"] for h in leaf["hosts"]} == set(HOSTS)


def test_unmanaged_real_sample_has_no_spines(capsys) -> None:
    rc, out, _ = fabric(capsys, "--ibnetdiscover", str(UFM), "--json")
    view = json.loads(out)
    assert rc == 0 and len(view["leaves"]) == 2 and view["spines"] == []


@pytest.mark.parametrize("make,said", [
    (lambda d: d / "missing.txt", "cannot read: No such file or directory"),
    (lambda d: (d / "ibstat.txt").write_text((SAMPLES / "ibstat_h100_mixed_down_ports.txt").read_text())
     and d / "ibstat.txt", "not ibnetdiscover output"),
])
def test_bad_file_is_one_line_naming_it_exit_2(capsys, tmp_path, make, said) -> None:
    path = make(tmp_path)
    rc, out, err = fabric(capsys, "--ibnetdiscover", str(MANPAGE), "--ibnetdiscover", str(path))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"provision: error: {path}: ") and said in err


def test_nothing_to_read_is_bad_usage(capsys) -> None:
    rc, _, err = fabric(capsys)
    assert rc == 2 and "--ibnetdiscover FILE" in err


class _Host:
    name, profile = "node01", "h100-sxm5-80g-ndr"


class _Conn:
    def __init__(self, texts: dict[str, str], log: list):
        self.texts, self.log = texts, log

    def run(self, argv, timeout_s):
        self.log.append(argv)
        text = self.texts.get(argv[2])
        if text is None:
            return CommandResult(argv, 255, "ibnetdiscover: iberror: failed: discover failed\n", "", 0.1, False)
        return CommandResult(argv, 0, text, "", 0.1, False)

    def close(self):
        self.log.append("closed")


def test_live_runs_one_discovery_per_hca_of_the_profile(monkeypatch, tmp_path) -> None:
    fabric_8 = world(fat_tree(HOSTS, rails=8, leaves=2, spines=2))
    texts = {f"mlx5_{r}": run_tool(fabric_8, tmp_path, "node01", "-C", f"mlx5_{r}").stdout for r in range(8)}
    log: list = []
    monkeypatch.setattr(fabric_command, "SshTransport",
                        lambda: type("T", (), {"connect": lambda self, h: _Conn(texts, log)})())
    profile = profiles.load("h100-sxm5-80g-ndr")
    dumps, names = fabric_command.live_dumps(_Host(), profile)
    assert names == [f"mlx5_{r}" for r in range(8)] and len(dumps) == 8
    assert log[0] == ["ibnetdiscover", "-C", "mlx5_0", "-P", "1"] and log[-1] == "closed"
    texts.pop("mlx5_3")
    with pytest.raises(CommandError, match="host node01: ibnetdiscover -C mlx5_3 -P 1 exited 255: ibnetdiscover: "
                                           "iberror: failed: discover failed"):
        fabric_command.live_dumps(_Host(), profile)


def test_the_same_plane_twice_is_counted_once_with_a_warning(capsys, tmp_path) -> None:
    copy = tmp_path / "again.txt"
    copy.write_text(MANPAGE.read_text())
    rc, out, err = fabric(capsys, "--ibnetdiscover", str(MANPAGE), "--ibnetdiscover", str(MANPAGE),
                          "--ibnetdiscover", str(copy))
    assert rc == 0 and out.count("plane ") == 1 and "(2 leaves, 0 spines)" in out
    assert f"{copy}: the same plane as {MANPAGE} (they share switches): counted once" in err


@pytest.mark.parametrize("old,new,said", [
    ("4xSDR", "4xFOO", "has no width and speed ibnetdiscover could name ('4xFOO')"),
    ("4xSDR", "16xNDR", "has no width and speed ibnetdiscover could name ('16xNDR')"),
    ('[10]    "S-0008f10400410015"[1]         # "SW-6IB4 Voltaire" lid 3 4xSDR',
     '[10]    "S-00000000deadbeef"[1] # "ghost" lid 99 4xSDR', "is printed cabled to both"),
])
def test_a_dump_the_fabric_cannot_use_is_one_line_exit_2(capsys, tmp_path, old, new, said) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(MANPAGE.read_text().replace(old, new))
    rc, out, err = fabric(capsys, "--ibnetdiscover", str(path))
    assert rc == 2 and out == "" and err.count("\n") == 1 and f"{path}: " in err and said in err, err


def test_an_endless_file_is_refused_by_size_not_read_into_memory(capsys) -> None:
    rc, _, err = fabric(capsys, "--ibnetdiscover", "/dev/zero")
    assert rc == 2 and "/dev/zero: the text is 67108865 characters" in err


def test_an_incomplete_dump_warns_what_it_lacks(capsys, tmp_path) -> None:
    path = tmp_path / "cut.txt"
    text = MANPAGE.read_text()
    path.write_text(text[:text.index('[4]     "H-005442b100004900"') + 20])
    rc, _, err = fabric(capsys, "--ibnetdiscover", str(path))
    assert rc == 0 and "incomplete (3 nodes without their own block; 6 cables printed by one end only" in err
