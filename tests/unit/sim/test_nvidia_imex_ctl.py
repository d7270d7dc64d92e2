"""The simulated ``nvidia-imex-ctl -N``: the domain from nodes_config.cfg and /etc/hosts, this node's daemon from its
pid file, the peers' faults from the model; printed in the formats the parser reads (text, ``-j`` JSON, ``-H``)."""
from __future__ import annotations

import os

import nvidia_imex_ctl
import pytest

from provision.parsers import parse_tool


@pytest.fixture
def domain(sim, tmp_path, monkeypatch):
    """An 18-tray domain 127.0.1.1-18 named node01-node18; this node is node01 (the fixture model's hostname)."""
    (tmp_path / "nodes_config.cfg").write_text("".join(f"127.0.1.{i}\n" for i in range(1, 19)))
    names = "".join(f"127.0.1.{i} node{i:02d}\n" for i in range(1, 19))
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n" + names)
    (tmp_path / "imex.pid").write_text(str(os.getpid()))  # a live process: the daemon runs
    monkeypatch.setenv("PROVISION_SIM_IMEX_NODES", str(tmp_path / "nodes_config.cfg"))
    monkeypatch.setenv("PROVISION_SIM_HOSTS", str(tmp_path / "hosts"))
    monkeypatch.setenv("PROVISION_SIM_IMEX_PID", str(tmp_path / "imex.pid"))
    return sim


def test_a_healthy_domain_in_json_with_hostnames(domain):
    status, out, _ = domain.run(nvidia_imex_ctl, ["-N", "-j", "-H"])
    parsed = parse_tool("nvidia-imex-ctl", out)
    assert status == 0 and parsed["domain_state"] == "UP" and len(parsed["nodes"]) == 18
    assert parsed["nodes"][0]["hostname"] == "node01" and parsed["nodes"][0]["version"] == "550.127.05"
    assert all(set(n["connections"].values()) == {"CONNECTED"} for n in parsed["nodes"])


def test_the_text_form_parses_complete(domain):
    status, out, _ = domain.run(nvidia_imex_ctl, ["-N"])
    parsed = parse_tool("nvidia-imex-ctl", out)
    assert status == 0 and parsed["complete"] and parsed["format"] == "text" and parsed["domain_state"] == "UP"
    assert out.startswith("Connectivity Table Legend:") and "Node #17  - 127.0.1.18" in out


def test_this_nodes_daemon_stopped_is_unavailable(domain, tmp_path):
    (tmp_path / "imex.pid").unlink()
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N", "-j", "-H"])[1])
    assert parsed["nodes"][0]["status"] == "UNAVAILABLE" and parsed["domain_state"] == "DEGRADED"
    assert all(n["status"] == "READY" for n in parsed["nodes"][1:])


def test_a_peer_down_and_a_pair_disconnected_from_the_models_faults(domain):
    domain.model["imex_faults"] = {"down": [11], "disconnected": [[2, 9, "D"]]}
    domain.write()
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N"])[1])
    assert parsed["nodes"][11]["status"] == "UNAVAILABLE"  # unreachable: its row is all I ("no connection status")
    assert set(parsed["nodes"][11]["connections"].values()) == {"I"}
    assert parsed["nodes"][2]["connections"][9] == "D" and parsed["nodes"][0]["connections"][11] == "I"
    assert parsed["domain_state"] == "DEGRADED"


def test_without_nodes_config_it_fails_as_dcgm_expects(domain, tmp_path):
    (tmp_path / "nodes_config.cfg").unlink()
    status, out, _ = domain.run(nvidia_imex_ctl, ["-N", "-j"])
    assert status == 1 and "Failed to read node configuration file" in out
