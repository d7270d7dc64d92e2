"""Simulated ibstat, ibstatus and ibv_devinfo."""
from __future__ import annotations

import ibstat
import ibstatus
import ibv_devinfo


def _degrade(sim):
    sim.model["hcas"][2]["rate_Gbps"] = 200
    sim.model["hcas"][5].update(state="Down", physical_state="Disabled")
    sim.write()


def test_ibstat(sim):
    _degrade(sim)
    status, out, _ = sim.run(ibstat, [])
    blocks = {b.split("'")[0]: b for b in ("CA '" + out).split("CA '")[2:]}
    assert status == 0 and len(blocks) == 8
    assert "\t\tRate: 200\n" in blocks["mlx5_2"] and "\t\tRate: 400\n" in blocks["mlx5_0"]
    assert "\t\tState: Down\n\t\tPhysical state: Disabled\n" in blocks["mlx5_5"]
    assert "\tFirmware version: 28.39.1002\n" in blocks["mlx5_0"]
    assert "\t\tLink layer: InfiniBand" in blocks["mlx5_0"]
    status, out, _ = sim.run(ibstat, ["mlx5_2"])
    assert out.startswith("CA 'mlx5_2'") and out.count("CA '") == 1
    status, _, err = sim.run(ibstat, ["mlx5_9"])
    assert status != 0 and "mlx5_9" in err


def test_ibstatus(sim):
    _degrade(sim)
    _, out, _ = sim.run(ibstatus, [])
    blocks = out.split("\n\n")
    assert "Infiniband device 'mlx5_2' port 1 status:" in blocks[2]
    assert "\trate:\t\t 200 Gb/sec (4X HDR)" in blocks[2]
    assert "\tstate:\t\t 1: DOWN" in blocks[5] and "\tphys state:\t 3: Disabled" in blocks[5]
    assert "\tstate:\t\t 4: ACTIVE" in blocks[0]


def test_ibv_devinfo(sim):
    _degrade(sim)
    _, out, _ = sim.run(ibv_devinfo, ["-v"])
    blocks = [b for b in out.split("\n\n") if b]
    assert len(blocks) == 8
    assert blocks[5].startswith("hca_id:\tmlx5_5") and "PORT_DOWN (1)" in blocks[5]
    assert "active_speed:\t\t50.0 Gbps" in blocks[2] and "active_width:\t\t4X (2)" in blocks[2]
    _, out, _ = sim.run(ibv_devinfo, ["-d", "mlx5_0"])
    assert out.count("hca_id:") == 1 and "fw_ver:\t\t\t\t28.39.1002" in out
