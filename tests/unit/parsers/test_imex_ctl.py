"""``nvidia-imex-ctl -N`` (text and ``-j`` JSON) and the IMEX channel listing, on the real-format captures of
tests/data/imex/ (SOURCES.md there names each one's origin) and cut or foreign text."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import parse_tool

DATA = Path(__file__).resolve().parents[2] / "data" / "imex"


def read(name: str) -> dict:
    return parse_tool("nvidia-imex-ctl", (DATA / name).read_text(), name)


def test_the_published_18_tray_text_reads_every_node_its_version_and_matrix():
    out = read("aws_p6e_gb200_18_nodes_up.txt")
    assert (out["format"], out["complete"], out["domain_state"]) == ("text", True, "UP")
    assert [n["index"] for n in out["nodes"]] == list(range(18))
    first, last = out["nodes"][0], out["nodes"][17]
    assert (first["host"], first["status"], first["version"]) == ("172.31.48.81", "READY", "570.172")
    assert last["host"] == "172.31.56.47" and last["hostname"] is None
    assert all(set(n["connections"]) == set(range(18)) and set(n["connections"].values()) == {"C"}
               for n in out["nodes"])


def test_a_version_mismatch_cell_is_kept_as_printed():
    out = read("aws_p6e_gb200_version_mismatch.txt")
    assert out["domain_state"] == "DEGRADED"
    assert out["nodes"][0]["connections"][4] == "!V!" and out["nodes"][4]["connections"][0] == "!V!"
    assert out["nodes"][4]["version"] == "570.148"


def test_a_node_line_without_the_version_column_reads():
    out = read("dra_driver_one_node_up.txt")
    assert out["nodes"] == [{"index": 0, "host": "10.136.206.48", "hostname": None, "status": "READY",
                             "version": None, "connections": {0: "C"}}]
    assert out["complete"] and out["domain_state"] == "UP"


def test_the_json_form_reads_nodes_by_index_with_their_connections():
    out = read("dcgm_spec_sample_degraded.txt")
    assert (out["format"], out["domain_state"]) == ("json", "DEGRADED")
    assert [n["index"] for n in out["nodes"]] == [1, 3]
    three = out["nodes"][1]
    assert (three["host"], three["version"], three["hostname"]) == ("10.76.186.255", "580.30", None)
    assert three["connections"] == {1: "CONNECTED", 6: "CONNECTED"}


def test_a_json_node_that_did_not_answer_has_no_connections():
    out = read("dcgm_two_nodes_one_unavailable.txt")
    assert [(n["status"], n["connections"], n["host"]) for n in out["nodes"]] == [("READY", {}, None),
                                                                                  ("UNAVAILABLE", {}, None)]


def test_the_simulated_json_names_hosts_with_h():
    out = read("sim_gb200_healthy.txt")
    assert out["nodes"][6]["hostname"] == "node07" and out["nodes"][6]["host"] == "127.0.1.7"
    assert out["complete"] and len(out["nodes"]) == 18


@pytest.mark.parametrize("name", ["aws_p6e_gb200_18_nodes_up.txt", "sim_gb200_healthy_text.txt"])
def test_text_cut_before_the_domain_state_is_incomplete(name):
    text = (DATA / name).read_text()
    cut = text[: text.index("Domain State")]
    out = parse_tool("nvidia-imex-ctl", cut, name)
    assert out["complete"] is False and out["domain_state"] is None
    half = parse_tool("nvidia-imex-ctl", (DATA / "sim_gb200_truncated.txt").read_text())
    assert half["complete"] is False and half["nodes"]


def test_json_cut_short_is_incomplete_not_healthy():
    text = (DATA / "sim_gb200_healthy.txt").read_text()
    out = parse_tool("nvidia-imex-ctl", text[: len(text) // 2])
    assert out == {"tool": "nvidia-imex-ctl", "complete": False, "format": "json", "domain_state": None, "nodes": []}


@pytest.mark.parametrize("text", ["Failed to read node configuration file /etc/nvidia-imex/nodes_config.cfg\n",
                                  '{"status": "UP"}', '{"nodes": {"0": {"connections": [1]}}}',
                                  "Node #0 - READY\n"])
def test_what_is_not_the_domain_status_is_refused(text):
    with pytest.raises(ParseError):
        parse_tool("nvidia-imex-ctl", text)


def test_the_channel_listing_reads_the_folder_and_its_channels():
    assert parse_tool("imex-channels", (DATA / "channel0.channels.txt").read_text()) == {
        "tool": "imex-channels", "complete": True, "folder": True, "channels": [0]}
    assert parse_tool("imex-channels", "/dev\n/dev/nvidia-caps-imex-channels\n")["channels"] == []
    none = parse_tool("imex-channels", (DATA / "none.channels.txt").read_text())
    assert none["folder"] is False and none["channels"] == []
    two = parse_tool("imex-channels", "/dev\n/dev/nvidia-caps-imex-channels/channel7\n"
                                      "/dev/nvidia-caps-imex-channels/channel0\n")
    assert two["channels"] == [0, 7] and two["folder"] is True


@pytest.mark.parametrize("text", ["", "/dev/nvidia-caps-imex-channels/channel0\n", "/dev\n/dev/nvidia0\n"])
def test_a_listing_without_its_start_or_with_other_devices_is_refused(text):
    with pytest.raises(ParseError):
        parse_tool("imex-channels", text)


def test_only_a_profile_with_an_imex_nvlink_domain_runs_the_check():
    from provision import profiles
    from provision.checks import registry

    assert registry()["imex"].needs == ("imex",)
    assert profiles.load("gb200-nvl72").has("imex")
    for name in ("b200-hgx", "h100-sxm5-80g-ndr"):
        assert not profiles.load(name).has("imex"), name
