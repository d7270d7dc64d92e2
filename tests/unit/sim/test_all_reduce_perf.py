"""Simulated nccl-tests all_reduce_perf."""
from __future__ import annotations

import all_reduce_perf

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
