"""Make the simulated ibnetdiscover captures in tests/data/fabric/ from a rack's fabric.

The fabric is the one ``provision sim up`` builds for eight h100-sxm5-80g-ndr nodes
(``provision.sim.rack.fabric_world``), healthy or with one cable edited the way ``sim fault``
edits it; the capture is the simulated ibnetdiscover's output for rail 0 as node01 runs it
(never a hand-written result). Re-run after changing the simulated tool or the fabric builder:
    .venv/bin/python tests/data/tools/capture_fabric.py
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from provision import profiles  # noqa: E402
from provision.sim import rack  # noqa: E402

TOOL = ROOT / "provision/sim/tools/ibnetdiscover.py"
HOSTS = [f"node{i:02d}" for i in range(1, 9)]


def uplink(world: dict, index: int) -> dict:
    """Uplink ``index`` (port order) of node01's leaf on rail 0."""
    plane = world["planes"][0]
    ca = next(c for c in plane["cas"] if c["host"] == "node01")
    own = next(c for c in plane["cables"] if ca["id"] in (c["a"], c["b"]))
    leaf = own["b"] if own["a"] == ca["id"] else own["a"]
    switches = {s["id"] for s in plane["switches"]}
    ups = sorted((c for c in plane["cables"] if leaf in (c["a"], c["b"]) and c["a"] != c["b"]
                  and {c["a"], c["b"]} <= switches), key=lambda c: c["a_port"] if c["a"] == leaf else c["b_port"])
    return ups[index]


def capture(world: dict) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fabric.yaml"
        path.write_text(yaml.safe_dump(world))
        env = {**os.environ, "PROVISION_SIM_FABRIC": str(path), "PROVISION_SIM_HOSTNAME": "node01"}
        return subprocess.run([sys.executable, str(TOOL), "-C", "mlx5_0", "-P", "1"], env=env, check=True,
                              capture_output=True, text=True).stdout


def main() -> None:
    healthy = rack.fabric_world(profiles.load("h100-sxm5-80g-ndr").data, HOSTS, {})
    assert healthy is not None
    cases = {"healthy": healthy}
    degraded = copy.deepcopy(healthy)
    uplink(degraded, 1)["width"] = "1x"
    cases["uplink_1x"] = degraded
    dead = copy.deepcopy(healthy)
    uplink(dead, 2)["state"] = "down"
    cases["uplink_dead"] = dead
    for name, world in cases.items():
        out = ROOT / f"tests/data/fabric/sim_h100_{name}.txt"
        out.write_text(capture(world))
        print(out.relative_to(ROOT))
    text = (ROOT / "tests/data/fabric/sim_h100_healthy.txt").read_text()
    (ROOT / "tests/data/fabric/sim_h100_truncated.txt").write_text(text[: len(text) // 2])


if __name__ == "__main__":
    main()
