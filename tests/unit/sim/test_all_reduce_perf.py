"""Simulated nccl-tests all_reduce_perf."""
from __future__ import annotations

import copy

import all_reduce_perf
import fabricsim
import yaml

from provision import parsers
from provision.sim import hwmodel, rack

ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"]


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line and not line.startswith("#")]


def test_healthy_run(sim):
    status, out, _ = sim.run(all_reduce_perf, ARGS)
    assert status == 0
    assert out.startswith("# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor)")
    ranks = [line for line in out.splitlines() if line.startswith("#  Rank")]
    assert len(ranks) == 8 and "[0x19] NVIDIA H100 80GB HBM3" in ranks[0] and " on     node01 " in ranks[0]
    rows = _rows(out)
    assert len(rows) == 31 and rows[0][:5] == ["8", "2", "float", "sum", "-1"]
    assert rows[-1][0] == "8589934592" and rows[-1][8] == "0"
    busbw = float(rows[-1][7])
    assert abs(busbw - 482.0) <= 482.0 * 0.03
    assert float(rows[0][7]) < 1.0 < float(rows[20][7]) < busbw * 1.05
    algbw, t_us = float(rows[-1][6]), float(rows[-1][5])
    assert abs(algbw - busbw * 8 / 14) < 0.02 * algbw
    assert abs(8589934592 / (algbw * 1e3) - t_us) / t_us < 0.01
    assert "# Out of bounds values : 0 OK" in out and "# Avg bus bandwidth    : " in out


def test_inactive_links_and_slow_pair_lower_busbw(sim):
    for link in sim.model["gpus"][6]["nvlink"]["links"][:9]:
        link["active"] = False
    sim.write()
    _, out, _ = sim.run(all_reduce_perf, ARGS)
    assert abs(float(_rows(out)[-1][7]) - 241.0) <= 241.0 * 0.03
    sim.model = all_reduce_perf.simhw.load()
    for link in sim.model["gpus"][6]["nvlink"]["links"]:
        link["active"] = True
    sim.model["faults"]["slow_gpu_pair"] = {"gpus": [2, 3], "factor": 0.5}
    sim.write()
    _, out, _ = sim.run(all_reduce_perf, ARGS)
    assert abs(float(_rows(out)[-1][7]) - 241.0) <= 241.0 * 0.03
    _, out, _ = sim.run(all_reduce_perf, ["-b", "8G", "-e", "8G", "-g", "2"])
    assert abs(float(_rows(out)[-1][7]) - 482.0) <= 482.0 * 0.03


def test_too_many_gpus_and_no_validation(sim):
    sim.model["gpus"][7]["fallen_off_bus"] = True
    sim.write()
    status, out, _ = sim.run(all_reduce_perf, ARGS)
    assert status != 0 and "Test CUDA failure" in out and "invalid device ordinal" in out
    status, out, _ = sim.run(all_reduce_perf, ["-b", "1M", "-e", "4M", "-f", "2", "-g", "7", "-c", "0"])
    rows = _rows(out)
    assert status == 0 and len(rows) == 3 and all(r[8] == "N/A" and r[12] == "N/A" for r in rows)
    assert "nGpus 7" in out and "validation: 0" in out


# Multi-node (mpirun) runs: the job's figure from every node's model and the rack's fabric.
NAMES = ["node01", "node02", "node03", "node04"]


def _job(profile):
    """Four nodes' models (rank order) and the rack's fabric, as `sim up` makes them."""
    models = [hwmodel.build(copy.deepcopy(profile), name, i) for i, name in enumerate(NAMES)]
    return models, rack.fabric_world(profile, NAMES, {})


def _busbw(models, world) -> float:
    return all_reduce_perf.job_peak_busbw(models, [m["gpus"] for m in models], world)


def _ring_cables(world) -> set[tuple]:
    """(plane, a, a_port) of every cable a ring hop over NAMES crosses."""
    used: set[tuple] = set()
    for plane in fabricsim.planes(world):
        device = next(d for host, d in plane.cas)
        for i, name in enumerate(NAMES):
            hop = plane.route((name, device), (NAMES[(i + 1) % len(NAMES)], device))
            used.update((plane.name, c["a"], c["a_port"]) for c in hop)
    return used


def _switch_cables(world):
    for plane in fabricsim.planes(world):
        for cable in plane.cables:
            if cable["a"] in plane.switches and cable["b"] in plane.switches:
                yield plane.name, cable


def test_job_busbw_is_the_fabric_ring_when_nvlink_is_faster(profile):
    models, world = _job(profile)
    healthy = _busbw(models, world)
    assert healthy == fabricsim.ring_net_busbw_GBps(world, models)
    assert 0 < healthy < all_reduce_perf.peak_busbw(models[0], models[0]["gpus"])


def test_degraded_cable_lowers_busbw_only_on_the_ring_route(profile):
    models, world = _job(profile)
    healthy, used = _busbw(models, world), _ring_cables(world)
    off = [c for plane, c in _switch_cables(world) if (plane, c["a"], c["a_port"]) not in used]
    on = [c for plane, c in _switch_cables(world) if (plane, c["a"], c["a_port"]) in used]
    assert off and on
    off[0]["width"] = "1x"
    assert _busbw(models, world) == healthy
    on[0]["width"] = "1x"  # a quarter of the rate on one rail (fabricsim decides what that costs the ring)
    assert _busbw(models, world) < healthy * 0.99


def test_slow_node_and_slow_hca_lower_busbw(profile):
    models, world = _job(profile)
    healthy = _busbw(models, world)
    models[2]["faults"]["slow_node"] = 0.7
    assert abs(_busbw(models, world) - healthy * 0.7) < 0.01
    models[2]["faults"] = {"slow_hca": {"mlx5_3": 0.5}}
    assert _busbw(models, world) < healthy * 0.99


def test_slow_nvlink_on_one_node_caps_the_job(profile):
    models, world = _job(profile)
    for link in models[1]["gpus"][6]["nvlink"]["links"][:12]:
        link["active"] = False
    assert _busbw(models, world) == all_reduce_perf.peak_busbw(models[1], models[1]["gpus"])


class FakeComm:
    """mpi4py's interface for one rank, the other ranks' contributions given up front."""

    class Done:
        @staticmethod
        def Test() -> bool:
            return True

    def __init__(self, rank: int, errors: list, reports: list) -> None:
        self.rank, self.errors, self.reports = rank, errors, reports

    def Get_rank(self) -> int:
        return self.rank

    def Ibarrier(self):
        return self.Done()

    def allgather(self, value):
        return self.errors[:self.rank] + [value] + self.errors[self.rank + 1:]

    def gather(self, value, root=0):
        return self.reports[:self.rank] + [value] + self.reports[self.rank + 1:] if self.rank == root else None


def _reports(models, ngpus=8):
    return [{"model": m, "gpus": m["gpus"][:ngpus], "error": None,
             "devices": all_reduce_perf.device_lines(m["gpus"][:ngpus], m["hostname"], i * ngpus)}
            for i, m in enumerate(models)]


def test_rank0_prints_the_whole_job(sim, profile, tmp_path, monkeypatch):
    models, world = _job(profile)
    (tmp_path / "fabric.yaml").write_text(yaml.safe_dump(world))
    monkeypatch.setenv("PROVISION_SIM_FABRIC", str(tmp_path / "fabric.yaml"))
    args = all_reduce_perf.parser().parse_args(ARGS)
    sim.capsys.readouterr()
    assert all_reduce_perf.run_rank(args, FakeComm(0, [None] * 4, _reports(models))) == 0
    result = parsers.parse_tool("nccl-tests", sim.capsys.readouterr().out)
    assert result["nranks"] == 32 and result["complete"]
    assert [d["host"] for d in result["devices"]] == [n for n in NAMES for _ in range(8)]
    assert [d["device"] for d in result["devices"][8:16]] == list(range(8))
    expected = _busbw(models, world)
    assert abs(result["busbw_at_max_size_GBps"]["out_of_place"] - expected) <= expected * 0.03
    assert all_reduce_perf.run_rank(args, FakeComm(1, [None] * 4, _reports(models))) == 0
    assert sim.capsys.readouterr().out == ""


def test_every_rank_fails_when_one_node_fails(sim, profile):
    args = all_reduce_perf.parser().parse_args(ARGS)
    models, _ = _job(profile)
    errors = [None, None, (2, all_reduce_perf.fail_text("node03", "no CUDA-capable device is detected")), None]
    sim.capsys.readouterr()
    assert all_reduce_perf.run_rank(args, FakeComm(0, errors, _reports(models))) == 2
    assert sim.capsys.readouterr().out == ""  # node03 prints its own failure
    sim.driver.unlink()
    assert all_reduce_perf.run_rank(args, FakeComm(0, [None] * 4, _reports(models))) == 2
    assert "node01: Test CUDA failure" in sim.capsys.readouterr().out


def test_second_rank_of_a_node_drives_the_next_gpus(sim):
    args = all_reduce_perf.parser().parse_args(["-g", "4"])
    gpus, error = all_reduce_perf.node_gpus(args, sim.model, "node01", local_rank=1)
    assert error is None and [g["index"] for g in gpus] == [4, 5, 6, 7]
    _, error = all_reduce_perf.node_gpus(args, sim.model, "node01", local_rank=2)
    assert error is not None and "invalid device ordinal" in error[1]
