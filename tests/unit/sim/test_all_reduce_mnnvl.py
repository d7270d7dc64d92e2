"""Simulated all_reduce_perf over multi-node NVLink (NCCL_MNNVL_ENABLE=1 exported by mpirun): GB200 trays' figure
from their hardware models, lowered by NVLink or fabric faults, and NCCL's failure where MNNVL cannot span the job."""
from __future__ import annotations

import copy
from pathlib import Path

import all_reduce_perf
import pytest
import yaml

from provision import parsers
from provision.sim import faults, hwmodel, rack

GB200 = yaml.safe_load((Path(__file__).resolve().parents[3] / "provision/profiles/data/gb200-nvl72.yaml").read_text())
FIGURES = yaml.safe_load((Path(hwmodel.__file__).with_name("figures.yaml")).read_text())
HEALTHY = FIGURES["gb200-nvl72"]["nccl_mnnvl_busbw_GBps"]
ARGS = ["-b", "512M", "-e", "8G", "-f", "2", "-g", "4"]


class Done:
    def Test(self):
        return True


class Comm:
    """MPI_COMM_WORLD as rank ``rank`` of the job over ``models`` sees it: every rank's values are what that
    rank's own code would give (its error, its cliques, its report)."""

    def __init__(self, rank, models):
        self.rank, self.models = rank, models

    def Get_rank(self):
        return self.rank

    def Ibarrier(self):
        return Done()

    def allgather(self, value):
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
def mnnvl(sim, monkeypatch):
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "1")
    return sim


def run(sim, models, rank=0):
    sim.write(models[rank])
    args = all_reduce_perf.parser().parse_args(ARGS)
    sim.capsys.readouterr()
    status = all_reduce_perf.run_rank(args, Comm(rank, models))
    return status, sim.capsys.readouterr().out


def busbw(out):
    return parsers.parse_tool("nccl-tests", out)["busbw_at_max_size_GBps"]["out_of_place"]


def test_a_healthy_domain_runs_at_the_models_nvlink_figure(mnnvl):
    status, out = run(mnnvl, trays())
    assert status == 0 and parsers.parse_tool("nccl-tests", out)["nranks"] == 8
    assert abs(busbw(out) - HEALTHY) <= HEALTHY * 0.03
    assert run(mnnvl, trays(), rank=1) == (0, "")  # only rank 0 prints


def test_a_fault_on_one_tray_lowers_the_whole_domain(mnnvl):
    models = trays(3)
    faults.KINDS["fabric_limited"].apply(models[2], "1", None)  # one switch tray's links: 16 of 18 left
    _, out = run(mnnvl, models)
    assert abs(busbw(out) - HEALTHY * 16 / 18) <= HEALTHY * 0.03
    models = trays(3)
    faults.KINDS["nvlink_down"].apply(models[1], "0", "5")  # 17 of 18 links
    _, out = run(mnnvl, models)
    assert abs(busbw(out) - HEALTHY * 17 / 18) <= HEALTHY * 0.03


def test_mnnvl_forced_fails_every_rank_where_it_cannot_span_the_job(mnnvl):
    split = trays(1) + trays(1, first=18)  # trays of two NVLink domains (nvlink_domain.nodes 18)
    status, out = run(mnnvl, split)
    assert status == 3 and "Test NCCL failure" in out and "MNNVL ranks span 2 NVLink cliques" in out
    assert run(mnnvl, split, rank=1) == (3, "")
    untrained = trays(2)
    faults.KINDS["fabric_in_progress"].apply(untrained[1], "2", None)
    assert run(mnnvl, untrained, rank=1)[0] == 3
    status, out = run(mnnvl, untrained, rank=0)
    assert status == 3 and out == ""  # tray01's own rank reports it


def test_without_mnnvl_the_job_takes_the_hcas(sim, monkeypatch, tmp_path):
    monkeypatch.delenv("NCCL_MNNVL_ENABLE", raising=False)
    models = trays()
    for m in models:  # figures.yaml has no intra-tray figure for GB200: give the trays one, above the HCAs' ring
        m["performance"]["nccl_allreduce_busbw_GBps"] = HEALTHY
    world = rack.fabric_world(GB200, [m["hostname"] for m in models], {})
    (tmp_path / "fabric.yaml").write_text(yaml.safe_dump(world))
    monkeypatch.setenv("PROVISION_SIM_FABRIC", str(tmp_path / "fabric.yaml"))
    expected = all_reduce_perf.job_peak_busbw(models, [m["gpus"] for m in models], world)
    assert 0 < expected < HEALTHY / 2  # 4 x NDR 400 per tray, not NVLink
    sim.write(models[0])

    class Plain(Comm):
        def allgather(self, value):
            return [value if i == self.rank else None for i in range(len(self.models))]

    args = all_reduce_perf.parser().parse_args(ARGS)
    sim.capsys.readouterr()
    assert all_reduce_perf.run_rank(args, Plain(0, models)) == 0
    assert abs(busbw(sim.capsys.readouterr().out) - expected) <= expected * 0.03
