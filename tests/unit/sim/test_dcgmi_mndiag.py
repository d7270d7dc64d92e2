"""The simulated ``dcgmi mndiag`` and ``mnubergemm``: each tray's rank reports its GPUs from its own hardware model
and faults (never from a test's expectation), and dcgmi prints the response in the shapes the parser reads; the
refusals of dcgmi 4.6 (over 72 hosts, an unsupported SKU, a DCGM before 4.3)."""
from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
from pathlib import Path

import dcgmi
import dcgmi_mndiag
import mnubergemm
import pytest
import yaml

from provision.parsers import parse_tool
from provision.sim import faults, hwmodel

ROOT = Path(__file__).resolve().parents[3]
GB200 = yaml.safe_load((ROOT / "provision/profiles/data/gb200-nvl72.yaml").read_text())
DRIVER = "580.105.08"


def tray(index: int) -> dict:
    return hwmodel.build(copy.deepcopy(GB200), f"node{index + 1:02d}", index)


def lines_of(models: list[dict], imex_down: tuple[str, ...] = ()) -> list[str]:
    out: list[str] = []
    for rank, model in enumerate(models):
        imex = "daemon_down" if model["hostname"] in imex_down else None
        out += mnubergemm.rank_lines(model, model["hostname"], rank, imex, DRIVER)
    return out


def test_a_healthy_tray_names_its_four_gpus_and_no_error():
    lines = mnubergemm.rank_lines(tray(6), "node07", 0, None, DRIVER)
    assert [ln.split(" L: ")[1].split()[0] for ln in lines if ln.startswith("MNUB [I]")] == ["0", "1", "2", "3"]
    assert not [ln for ln in lines if ln.startswith("MNUB [E]")]
    assert lines[-1] == f"PROVISION-SIM-NODE node07 driver={DRIVER}"


@pytest.mark.parametrize("kind, value, text", [
    ("fabric_in_progress", None, mnubergemm.FABRIC), ("fabric_limited", None, mnubergemm.FABRIC),
    ("nvlink_down", "5", mnubergemm.FABRIC), ("gpu_lost", None, mnubergemm.LOST)])
def test_a_fault_of_one_gpu_fails_that_gpu_only(kind, value, text):
    model = tray(8)
    faults.KINDS[kind].apply(model, "2", value)
    errors = [ln for ln in mnubergemm.rank_lines(model, "node09", 2, None, DRIVER) if ln.startswith("MNUB [E]")]
    assert errors == [f"MNUB [E] G: 10 node09 L: 2  T:N {text}"]


def test_the_response_fails_the_faulty_tray_and_names_it_in_both_forms():
    models = [tray(i) for i in range(6, 10)]
    faults.KINDS["fabric_in_progress"].apply(models[2], "2", None)
    resp = dcgmi_mndiag.response(lines_of(models, imex_down=("node10",)), [m["hostname"] for m in models], "4.5.2")
    as_json = parse_tool("dcgmi-mndiag", dcgmi_mndiag.render_json(resp))
    as_text = parse_tool("dcgmi-mndiag", dcgmi_mndiag.render_text(resp))
    for out in (as_json, as_text):
        assert (out["status"], out["hosts_found"], out["hosts_with_errors"], out["total_gpus"]) == ("Fail", 4, 2, 16)
        failing = {(h["hostname"], g["gpu"]): g["errors"] for h in out["hosts"] for g in h["gpus"] if g["errors"]}
        assert failing == {("node09", 2): [mnubergemm.FABRIC],
                           **{("node10", g): [mnubergemm.IMEX_DOWN] for g in range(4)}}
    assert [h["status"] for h in as_json["hosts"]] == [h["status"] for h in as_text["hosts"]] == [
        "Pass", "Pass", "Fail", "Fail"]


def test_dcgmi_mndiag_runs_mpirun_over_the_host_list_and_prints_json(sim, monkeypatch, tmp_path):
    models = [tray(i) for i in range(6, 8)]
    sim.write(models[0])
    (tmp_path / "dcgm.json").write_text(json.dumps({"version": "4.5.2"}))
    monkeypatch.setenv("PROVISION_SIM_DCGM", str(tmp_path / "dcgm.json"))
    seen = {}

    def mpirun(argv, **kwargs):  # the ranks' output as a real mpirun forwards it
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, "\n".join(lines_of(models)) + "\n", "")
    monkeypatch.setattr(dcgmi_mndiag.subprocess, "run", mpirun)
    status, out, _ = sim.run(dcgmi, ["mndiag", "--hostList", "127.0.1.7;127.0.1.8", "-r", "mnubergemm",
                                     "-p", "mnubergemm.time_to_run=60", "-j"])
    assert status == 0 and seen["argv"][:6] == ["mpirun", "--allow-run-as-root", "-np", "2", "--host",
                                                "127.0.1.7:1,127.0.1.8:1"]
    parsed = parse_tool("dcgmi-mndiag", out)
    assert (parsed["format"], parsed["status"], parsed["dcgm_version"]) == ("json", "Pass", "4.5.2")
    assert [(h["hostname"], len(h["gpus"])) for h in parsed["hosts"]] == [("node07", 4), ("node08", 4)]


def test_an_mpirun_that_fails_is_the_tests_mpi_error(sim, monkeypatch, tmp_path):
    sim.write(tray(6))
    (tmp_path / "dcgm.json").write_text(json.dumps({"version": "4.5.2"}))
    monkeypatch.setenv("PROVISION_SIM_DCGM", str(tmp_path / "dcgm.json"))
    monkeypatch.setattr(dcgmi_mndiag.subprocess, "run",
                        lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", "ssh: connect refused"))
    status, out, _ = sim.run(dcgmi, ["mndiag", "--hostList", "node07;node08"])
    parsed = parse_tool("dcgmi-mndiag", out)
    assert status == 0 and parsed["status"] == "Fail" and parsed["hosts"] == []
    assert parsed["global_errors"][0]["message"].startswith("MPI exited with code: 1; Check logs:")


def test_the_refusals_of_dcgmi(sim, monkeypatch, tmp_path):
    facts = tmp_path / "dcgm.json"
    monkeypatch.setenv("PROVISION_SIM_DCGM", str(facts))
    facts.write_text(json.dumps({"version": "4.5.2"}))
    sim.write(tray(6))
    status, _, err = sim.run(dcgmi, ["mndiag", "--hostList", ";".join(f"h{i}" for i in range(73))])
    assert status == 254 and "exceeds the maximum allowed 72" in err
    sim.write(hwmodel.build(copy.deepcopy(yaml.safe_load((ROOT / "provision/profiles/data/b200-hgx.yaml")
                                                         .read_text())), "node01", 0))
    status, out, _ = sim.run(dcgmi, ["mndiag", "--hostList", "node01;node02", "-j"])
    parsed = parse_tool("dcgmi-mndiag", out)
    assert status == 250 and "(Feature not supported) -6" in parsed["runtime_error"] and parsed["status"] is None
    facts.write_text(json.dumps({"version": "3.3.6"}))
    status, out, err = sim.run(dcgmi, ["mndiag", "--hostList", "node01;node02"])
    assert status == 255 and "unknown command 'mndiag'" in err and out == ""


@pytest.fixture
def imex(sim, tmp_path, monkeypatch):
    """node07 in an IMEX domain with node08 (127.0.9.251, .252: unused elsewhere): its daemon running, channel 0
    present, node08's daemon a listener stand-in (``sim.peer``) at config.cfg's port."""
    addresses = ["127.0.9.251", "127.0.9.252"]
    sim.write(tray(6))
    with socket.socket() as probe:
        probe.bind((addresses[0], 0))
        port = probe.getsockname()[1]
    (tmp_path / "config.cfg").write_text(f"SERVER_PORT={port}\n")
    (tmp_path / "nodes_config.cfg").write_text("".join(f"{a}\n" for a in addresses))
    (tmp_path / "hosts").write_text(f"{addresses[0]} node07\n{addresses[1]} node08\n")
    (tmp_path / "imex.pid").write_text(str(os.getpid()))
    (tmp_path / "channels").mkdir()
    (tmp_path / "channels/channel0").write_text("")
    for key, name in (("CONFIG", "config.cfg"), ("NODES", "nodes_config.cfg"), ("PID", "imex.pid"),
                      ("CHANNELS", "channels")):
        monkeypatch.setenv(f"PROVISION_SIM_IMEX_{key}", str(tmp_path / name))
    monkeypatch.setenv("PROVISION_SIM_HOSTS", str(tmp_path / "hosts"))
    sim.peer = socket.create_server((addresses[1], port))
    yield sim
    sim.peer.close()


def _errors(sim) -> set[str]:
    status, out, _ = sim.run(mnubergemm, ["--hosts", "127.0.9.251,127.0.9.252"])
    assert status == 0
    return {ln.split("T:N ", 1)[1] for ln in out.splitlines() if ln.startswith("MNUB [E]")}


def test_a_rank_with_imex_up_everywhere_reports_no_error(imex):
    assert _errors(imex) == set()


def test_a_rank_whose_own_daemon_stopped_reports_imex_down(imex, tmp_path):
    (tmp_path / "imex.pid").unlink()
    assert _errors(imex) == {mnubergemm.IMEX_DOWN}


def test_a_rank_whose_peer_daemon_stopped_reports_nccl_cuda_error(imex):
    imex.peer.close()
    assert _errors(imex) == {mnubergemm.FABRIC}


def test_a_rank_without_channel0_reports_nccl_system_error(imex, tmp_path):
    (tmp_path / "channels/channel0").unlink()
    assert _errors(imex) == {mnubergemm.NO_CHANNEL}


def test_a_tray_of_a_domain_with_no_imex_at_all_reports_imex_down(imex, tmp_path):
    """A GB200 tray (its GPUs in an NVLink domain's cluster) where the IMEX role never ran: no nodes_config.cfg and no
    daemon. mndiag supports its SKU, so its ranks run and fail on IMEX, never pass."""
    (tmp_path / "imex.pid").unlink()
    (tmp_path / "nodes_config.cfg").unlink()
    assert _errors(imex) == {mnubergemm.IMEX_DOWN}
