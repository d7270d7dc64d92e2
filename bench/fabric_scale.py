"""Bench: the fabric model from one large ``ibnetdiscover`` dump, at 1,500, 3,000 and 6,000 switches.

Prints figures, never passes or fails. Issue 21 cause 5: the model scanned every cable for every
switch (3,000 switches 38 s, 6,000 160 s); it is now indexed by switch (``provision.fabric.model.Plane``).

The dump: one plane, two thirds of its switches leaves with ``--hosts-per-leaf`` HCAs (default 8) and as
many uplinks, one third spines, leaf i's uplink j cabled to spine (i x uplinks + j) mod spines, so every
spine takes the same number of leaf cables; NDR everywhere, one leaf-spine cable at 2x (a degraded one).
Two layers of 6,000 switches is no real design (past 2,048 hosts a fat-tree of 64-port switches needs a
third level); it is the size and cable count of one, which is what the model's cost depends on. The text
is the simulated ibnetdiscover's (``provision/sim/tools/ibnetdiscover.py``, rdma-core's format).

Stages timed, each wall and CPU seconds (CPU: what the work costs on a shared machine):
  parse   ``parse_tool("ibnetdiscover", text)``
  model   ``discover.plane_from_ibnetdiscover``: the plane with roles, per-switch index, D-mod-k order
  check   the ``fabric`` check's ``judge`` (builds the plane again, judges every cable and every leaf's uplinks)
  view    ``Fabric.to_dict``: what ``provision fabric`` prints (every leaf's hosts and uplinks, every spine's
          downlinks, the degraded cables)
  routes  ``Plane.route`` for 10,000 host pairs (the cluster procedure's pair routing)

    .venv/bin/python bench/fabric_scale.py [--switches 1500 3000 6000] [--hosts-per-leaf 8] [--save DIR]

``--save DIR`` writes each dump as DIR/fabric_<switches>.txt, for timing the command as an operator runs
it: ``time provision fabric --ibnetdiscover DIR/fabric_6000.txt --json > /dev/null``.
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from provision.checks import fabric as fabric_check  # noqa: E402
from provision.checks.base import Context  # noqa: E402
from provision.fabric.discover import plane_from_ibnetdiscover  # noqa: E402
from provision.fabric.model import Fabric  # noqa: E402
from provision.sim.synth import _guid, node_id  # noqa: E402
from provision.parsers import parse_tool  # noqa: E402

TOOL = ROOT / "provision" / "sim" / "tools" / "ibnetdiscover.py"
NDR_RADIX = 64
PAIRS = 10_000


def _tool():
    spec = importlib.util.spec_from_file_location("sim_ibnetdiscover", TOOL)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def world_plane(switches: int, per_leaf: int) -> dict:
    """One plane of the simulated fabric's world dict (``provision.sim.synth.world``'s shape)."""
    leaves, spines = switches * 2 // 3, switches - switches * 2 // 3
    leaf_ids = [node_id("S", _guid("bench", "leaf", i)) for i in range(leaves)]
    spine_ids = [node_id("S", _guid("bench", "spine", i)) for i in range(spines)]
    lid = iter(range(1, 0xC000))
    sws = [{"id": g, "description": "Quantum-2 Mellanox Technologies", "lid": next(lid), "ports": NDR_RADIX,
            "guid": "0x" + g[2:]} for g in leaf_ids + spine_ids]
    cas, cables, spine_next = [], [], [1] * spines
    for i, leaf in enumerate(leaf_ids):
        for p in range(per_leaf):
            host = f"node{i * per_leaf + p:06d}"
            guid = _guid("bench", host)
            ca = node_id("H", guid)
            cas.append({"id": ca, "description": f"{host} mlx5_0", "host": host, "device": "mlx5_0", "port": 1,
                        "lid": next(lid), "guid": guid})
            cables.append({"a": leaf, "a_port": p + 1, "b": ca, "b_port": 1, "width": "4x", "speed": "NDR"})
        for j in range(per_leaf):
            s = (i * per_leaf + j) % spines
            cables.append({"a": leaf, "a_port": per_leaf + 1 + j, "b": spine_ids[s], "b_port": spine_next[s],
                           "width": "4x", "speed": "NDR"})
            spine_next[s] += 1
    cables[per_leaf]["width"] = "2x"  # the first leaf's first uplink trained at half width
    return {"name": "bench", "switches": sws, "cas": cas, "cables": cables}


def timed(what: str, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(f"  {what:<7} {time.perf_counter() - wall:7.2f} s wall {time.process_time() - cpu:7.2f} s CPU", flush=True)
    return out


def run(switches: int, per_leaf: int, save: Path | None) -> None:
    plane_dict = world_plane(switches, per_leaf)
    text = _tool().render(plane_dict, plane_dict["cas"][0], when="bench")
    cables = len(plane_dict["cables"])
    print(f"{switches} switches, {len(plane_dict['cas'])} HCAs, {cables} cables, dump {len(text) / 2**20:.1f} MiB",
          flush=True)
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"fabric_{switches}.txt").write_text(text)
    parsed = timed("parse", lambda: parse_tool("ibnetdiscover", text))
    plane = timed("model", lambda: plane_from_ibnetdiscover(parsed, "mlx5_0", None))
    context = Context({"mlx5_0": parsed}, {"hca": {"rate_Gbps": 400}}, None)
    findings = timed("check", lambda: fabric_check.judge(context))
    view = timed("view", lambda: Fabric([plane]).to_dict("4xNDR"))
    hosts = [h.host for h in plane.hcas if h.host]
    rng = random.Random(0)
    pairs = [(rng.choice(hosts), rng.choice(hosts)) for _ in range(PAIRS)]
    timed("routes", lambda: [plane.route(a, b) for a, b in pairs])
    failed = sum(not f.ok for f in findings)
    print(f"  {len(plane.leaves())} leaves, {len(plane.spines())} spines, {len(findings)} findings ({failed} failed), "
          f"{len(view['degraded_links'])} degraded cable(s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switches", type=int, nargs="+", default=[1500, 3000, 6000])
    ap.add_argument("--hosts-per-leaf", type=int, default=8, help="HCAs per leaf, and uplinks per leaf")
    ap.add_argument("--save", type=Path, help="write each dump to this folder")
    args = ap.parse_args()
    for n in args.switches:
        run(n, args.hosts_per_leaf, args.save)


if __name__ == "__main__":
    main()
