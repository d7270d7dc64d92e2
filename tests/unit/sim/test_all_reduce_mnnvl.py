"""Simulated all_reduce_perf over multi-node NVLink (NCCL_MNNVL_ENABLE=1 exported by mpirun): GB200 trays' figure
from their hardware models, lowered by NVLink or fabric faults, and NCCL's failure where MNNVL cannot span the job
(trays of two cliques, a fabric not trained, IMEX down on a tray or a peer, channel 0 missing).

What a run gives is judged as the nvlink_domain check judges it (the profile's reference row, its gate), never
against the simulator's own figures: a healthy domain passes, a degraded one fails NVLINK_DOMAIN_SLOW."""
from __future__ import annotations

import copy
import os
import socket
from pathlib import Path

import all_reduce_perf
import pytest
import yaml

from provision import parsers, profiles
from provision.checks import registry
from provision.checks.base import judge_outputs
from provision.engine.jobs import target
from provision.inventory import NVLINK_DOMAIN_VAR, Host
from provision.sim import faults, hwmodel, rack

GB200 = yaml.safe_load((Path(__file__).resolve().parents[3] / "provision/profiles/data/gb200-nvl72.yaml").read_text())
ARGS = ["-b", "512M", "-e", "8G", "-f", "2", "-g", "4"]
ADDRESSES = [f"127.0.9.{241 + i}" for i in range(3)]  # tray00 (this rank's node), tray01, tray02: unused elsewhere


class Done:
    def Test(self):
        return True


class Comm:
    """MPI_COMM_WORLD as rank ``rank`` of the job over ``models`` sees it: every rank's values are what that
    rank's own code would give (its host, its error, its cliques, its report); the other ranks' IMEX is healthy."""

    def __init__(self, rank, models):
        self.rank, self.models = rank, models

    def Get_rank(self):
        return self.rank

    def Ibarrier(self):
        return Done()

    def allgather(self, value):
        if isinstance(value, str):  # the ranks' hostnames
            return [m["hostname"] for m in self.models]
        if isinstance(value, list):  # the ranks' cliques
            return [all_reduce_perf.cliques(m["gpus"]) for m in self.models]
        args = all_reduce_perf.parser().parse_args(ARGS)
        out = []
        for i, m in enumerate(self.models):
            gpus, error = all_reduce_perf.node_gpus(args, m, m["hostname"])
            problem = all_reduce_perf.mnnvl_problem(gpus) if error is None else ""
            out.append(value if i == self.rank else error or ((3, problem) if problem else None))
        return out

    def gather(self, value, root=0):
        if self.rank != root:
            return None
        return [{"model": m, "gpus": m["gpus"], "error": None,
                 "devices": all_reduce_perf.device_lines(m["gpus"], m["hostname"], i * 4)}
                for i, m in enumerate(self.models)]


def trays(n=2, first=0):
    return [hwmodel.build(copy.deepcopy(GB200), f"tray{first + i:02d}", first + i) for i in range(n)]


@pytest.fixture
def mnnvl(sim, monkeypatch, tmp_path):
    """MNNVL forced on, in an IMEX domain of ADDRESSES (tray00-tray02): this node's daemon running (a live pid),
    channel 0 present, every tray's daemon a listener stand-in at config.cfg's port (``sim.peers``: a rank other
    than 0 runs as another tray, whose peer tray00 is)."""
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "1")
    with socket.socket() as probe:
        probe.bind((ADDRESSES[0], 0))
        port = probe.getsockname()[1]
    (tmp_path / "config.cfg").write_text(f"SERVER_PORT={port}\n")
    (tmp_path / "nodes_config.cfg").write_text("".join(f"{a}\n" for a in ADDRESSES))
    (tmp_path / "hosts").write_text("".join(f"{a} tray{i:02d}\n" for i, a in enumerate(ADDRESSES)))
    (tmp_path / "imex.pid").write_text(str(os.getpid()))
    (tmp_path / "channels").mkdir()
    (tmp_path / "channels/channel0").write_text("")  # the device node's stand-in: only its existence is read
    for key, name in (("CONFIG", "config.cfg"), ("NODES", "nodes_config.cfg"), ("PID", "imex.pid"),
                      ("CHANNELS", "channels")):
        monkeypatch.setenv(f"PROVISION_SIM_IMEX_{key}", str(tmp_path / name))
    monkeypatch.setenv("PROVISION_SIM_HOSTS", str(tmp_path / "hosts"))
    sim.peers = {a: socket.create_server((a, port), backlog=16) for a in ADDRESSES}
    yield sim
    for listener in sim.peers.values():
        listener.close()


def run(sim, models, rank=0):
    sim.write(models[rank])
    args = all_reduce_perf.parser().parse_args(ARGS)
    sim.capsys.readouterr()
    status = all_reduce_perf.run_rank(args, Comm(rank, models))
    return status, sim.capsys.readouterr().out


def busbw(out):
    return parsers.parse_tool("nccl-tests", out)["busbw_at_max_size_GBps"]["out_of_place"]


def failed(models, out):
    """The nvlink_domain check's failing findings for this output of a job over ``models``' trays."""
    check = registry()["nvlink_domain"]
    hosts = tuple(Host(m["hostname"], m["hostname"], 22, "root", None, None, "gb200-nvl72",
                       vars={NVLINK_DOMAIN_VAR: "nvl72-a"}) for m in models)
    group = target(check, hosts)
    [step] = check.steps(profiles.load("gb200-nvl72"), group)
    return [f for f in judge_outputs(check, profiles.load("gb200-nvl72"), group, {step.key: out}) if not f.ok]


def test_a_healthy_domain_passes_the_domain_check(mnnvl):
    models = trays()
    status, out = run(mnnvl, models)
    assert status == 0 and parsers.parse_tool("nccl-tests", out)["nranks"] == 8
    assert failed(models, out) == []
    assert run(mnnvl, models, rank=1) == (0, "")  # only rank 0 prints


@pytest.mark.parametrize("kind, device, value", [
    ("fabric_limited", "1", None),  # one switch tray's links of 9 lost: 16 of 18 left
    ("nvlink_down", "0", "4"),  # then link 5 too (below): 16 of 18
])
def test_a_fault_on_one_tray_fails_the_whole_domain_slow(mnnvl, kind, device, value):
    """16/18 of a healthy rack's 834.57 GB/s (the reference row) is 741.8 GB/s, 6% under the gate at 792.8: the
    run fails on every draw of the +-2% noise."""
    models = trays(3)
    faults.KINDS[kind].apply(models[2], device, value)
    if kind == "nvlink_down":
        faults.KINDS[kind].apply(models[2], device, "5")
    status, out = run(mnnvl, models)
    assert status == 0
    assert [(f.fault, f.metric) for f in failed(models, out)] == [("NVLINK_DOMAIN_SLOW", "busbw_GBps")]


def test_mnnvl_forced_fails_every_rank_where_it_cannot_span_the_job(mnnvl):
    split = trays(1) + trays(1, first=18)  # trays of two NVLink domains (nvlink_domain.nodes 18)
    status, out = run(mnnvl, split)
    assert status == 3 and "Test NCCL failure" in out and "MNNVL ranks span 2 NVLink cliques" in out
    assert [f.fault for f in failed(split, out)] == ["NVLINK_DOMAIN_MNNVL_FAILED"]
    assert run(mnnvl, split, rank=1) == (3, "")
    untrained = trays(2)
    faults.KINDS["fabric_in_progress"].apply(untrained[1], "2", None)
    assert run(mnnvl, untrained, rank=1)[0] == 3
    status, out = run(mnnvl, untrained, rank=0)
    assert status == 3 and out == ""  # tray01's own rank reports it


def test_this_trays_imex_daemon_stopped_fails_its_rank_with_ncclmnnvlcheck(mnnvl, tmp_path):
    (tmp_path / "imex.pid").unlink()
    models = trays()
    status, out = run(mnnvl, models)
    assert status == 3 and "'unhandled system error (run with NCCL_DEBUG=INFO for details) / MNNVL (cliqueSize 8) " \
        "is available but not working on this system. Check the IMEX configuration (nvidia-imex-ctl -N)." in out
    assert [f.fault for f in failed(models, out)] == ["NVLINK_DOMAIN_IMEX_FAILED"]


def test_a_peers_imex_daemon_stopped_fails_the_import_from_it(mnnvl):
    mnnvl.peers.pop(ADDRESSES[1]).close()  # tray01's daemon gone: its port refuses
    models = trays()
    status, out = run(mnnvl, models)
    assert status == 3 and "unhandled cuda error (run with NCCL_DEBUG=INFO for details) / Cuda failure 800 " \
        "'operation not permitted'" in out
    assert [f.fault for f in failed(models, out)] == ["NVLINK_DOMAIN_IMEX_FAILED"]
    assert run(mnnvl, [trays(1)[0]] + trays(1, first=2))[0] == 0  # a job without tray01 does not need it


def test_channel0_missing_fails_the_fabric_allocation(mnnvl, tmp_path):
    (tmp_path / "channels/channel0").unlink()
    status, out = run(mnnvl, trays())
    assert status == 3 and "Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels)" in out


def test_without_mnnvl_the_job_takes_the_hcas(sim, monkeypatch, tmp_path):
    """Over 4 x NDR 400 Gb/s per tray (InfiniBand's line rate, 4 x 50 GB/s) the ring cannot reach NVLink5's figure:
    the domain check fails it slow."""
    monkeypatch.delenv("NCCL_MNNVL_ENABLE", raising=False)
    models = trays()
    for m in models:  # figures.yaml has no intra-tray figure for GB200: give the trays one far above the HCAs' ring
        m["performance"]["nccl_allreduce_busbw_GBps"] = 900.0
    world = rack.fabric_world(GB200, [m["hostname"] for m in models], {})
    (tmp_path / "fabric.yaml").write_text(yaml.safe_dump(world))
    monkeypatch.setenv("PROVISION_SIM_FABRIC", str(tmp_path / "fabric.yaml"))
    sim.write(models[0])

    class Plain(Comm):
        def allgather(self, value):
            return [value if i == self.rank else None for i in range(len(self.models))]

    args = all_reduce_perf.parser().parse_args(ARGS)
    sim.capsys.readouterr()
    assert all_reduce_perf.run_rank(args, Plain(0, models)) == 0
    out = sim.capsys.readouterr().out
    assert 0 < busbw(out) <= 4 * 400 / 8
    assert [f.fault for f in failed(models, out)] == ["NVLINK_DOMAIN_SLOW"]
