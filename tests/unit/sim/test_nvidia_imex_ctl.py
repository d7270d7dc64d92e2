"""The simulated ``nvidia-imex-ctl -N``: the domain from nodes_config.cfg and /etc/hosts, this node's daemon from its
pid file, each peer's from whether its daemon accepts a TCP connection at the peer's address and IMEX's port;
printed in the formats the parser reads (text, ``-j`` JSON, ``-H``). The peers are listener stand-ins on unused
loopback addresses (127.0.9.221-238), and the simulated daemon itself listens where its peers look."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import imexdomain
import nvidia_imex_ctl
import pytest

from provision.parsers import parse_tool
from tests.unit.sim.conftest import TOOLS

ADDRESSES = [f"127.0.9.{221 + i}" for i in range(18)]  # node01 (this node) .. node18


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((ADDRESSES[0], 0))
        return probe.getsockname()[1]


@pytest.fixture
def domain(sim, tmp_path, monkeypatch):
    """An 18-tray domain named node01-node18 at ADDRESSES, IMEX's port in config.cfg; this node is node01 (the
    fixture model's hostname), its daemon running; every peer's daemon a listening socket (``domain.peers``)."""
    port = _free_port()
    (tmp_path / "config.cfg").write_text(f"# nvidia-imex config\nSERVER_PORT={port}\nBIND_INTERFACE_IP=\n")
    (tmp_path / "nodes_config.cfg").write_text("".join(f"{a}\n" for a in ADDRESSES))
    names = "".join(f"{a} node{i + 1:02d}\n" for i, a in enumerate(ADDRESSES))
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n" + names)
    (tmp_path / "imex.pid").write_text(str(os.getpid()))  # a live process: the daemon runs
    for key, name in (("CONFIG", "config.cfg"), ("NODES", "nodes_config.cfg"), ("PID", "imex.pid")):
        monkeypatch.setenv(f"PROVISION_SIM_IMEX_{key}", str(tmp_path / name))
    monkeypatch.setenv("PROVISION_SIM_HOSTS", str(tmp_path / "hosts"))
    sim.port, sim.peers = port, {}
    for address in ADDRESSES[1:]:
        listener = socket.create_server((address, port), backlog=64)
        sim.peers[address] = listener
    yield sim
    for listener in sim.peers.values():
        listener.close()


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
    assert out.startswith("Connectivity Table Legend:") and f"Node #17  - {ADDRESSES[17]}" in out


def test_this_nodes_daemon_stopped_is_unavailable(domain, tmp_path):
    (tmp_path / "imex.pid").unlink()
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N", "-j", "-H"])[1])
    assert parsed["nodes"][0]["status"] == "UNAVAILABLE" and parsed["domain_state"] == "DEGRADED"
    assert all(n["status"] == "READY" for n in parsed["nodes"][1:])


def test_a_peer_whose_daemon_stopped_is_unavailable(domain):
    domain.peers.pop(ADDRESSES[11]).close()  # node12's daemon gone: its port refuses
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N"])[1])
    assert [n["index"] for n in parsed["nodes"] if n["status"] != "READY"] == [11]
    assert parsed["nodes"][11]["status"] == "UNAVAILABLE"  # unreachable: its row is all I ("no connection status")
    assert set(parsed["nodes"][11]["connections"].values()) == {"I"}
    assert parsed["nodes"][0]["connections"][11] == "I" and parsed["nodes"][0]["connections"][10] == "C"
    assert parsed["domain_state"] == "DEGRADED"


def test_an_address_nothing_listens_on_is_unavailable(domain, tmp_path):
    (tmp_path / "nodes_config.cfg").write_text("".join(f"{a}\n" for a in ADDRESSES[:2]) + "127.0.9.239\n")
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N", "-j"])[1])
    assert [n["status"] for n in parsed["nodes"]] == ["READY", "READY", "UNAVAILABLE"]


def test_a_pair_disconnected_from_the_models_faults(domain):
    domain.model["imex_faults"] = {"disconnected": [[2, 9, "D"]]}
    domain.write()
    parsed = parse_tool("nvidia-imex-ctl", domain.run(nvidia_imex_ctl, ["-N"])[1])
    assert parsed["nodes"][2]["connections"][9] == "D" and parsed["domain_state"] == "DEGRADED"
    assert all(n["status"] == "READY" for n in parsed["nodes"])


def test_without_nodes_config_it_fails_as_dcgm_expects(domain, tmp_path):
    (tmp_path / "nodes_config.cfg").unlink()
    status, out, _ = domain.run(nvidia_imex_ctl, ["-N", "-j"])
    assert status == 1 and "Failed to read node configuration file" in out


def test_the_simulated_daemon_listens_on_its_own_address_until_stopped(domain, tmp_path):
    """daemon.py as the nvidia-imex service runs it: bound to node01's address at config.cfg's port."""
    own = ADDRESSES[0]
    assert not imexdomain.answers(own, domain.port)
    env = {**os.environ, "PROVISION_SIM_RUN_DIR": str(tmp_path / "run")}
    proc = subprocess.Popen([sys.executable, str(TOOLS / "daemon.py"), "nvidia-imex"], env=env)
    try:
        deadline = time.monotonic() + 10
        while not imexdomain.answers(own, domain.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert imexdomain.answers(own, domain.port)
        assert (tmp_path / "run/nvidia-imex/nvidia-imex.pid").read_text().strip() == str(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    assert not imexdomain.answers(own, domain.port) and not (tmp_path / "run/nvidia-imex/nvidia-imex.pid").exists()
