"""Make the simulated captures of the link checks (pcie_link, nvlink, topology, nvbandwidth).

Same approach as capture_sim.py (whose ``run`` this reuses): each capture is a simulated
tool's output for an H100 node, healthy or with one fault set in its hardware model, never a
hand-written result. ``sim_h100_truncated*`` is the first half of the healthy text. pcie_link
runs one lspci per vendor, so its captures carry the step key: ``<name>.gpu.txt``/``.hca.txt``.
Re-run after changing a simulated tool:
    .venv/bin/python tests/data/tools/capture_links.py
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_sim import DATA, degrade as degrade_sim, run

from provision import profiles
from provision.sim import hwmodel

# check -> fault kinds; each check's own steps give the argv, so the captures match what burn-in runs
CAPTURES = {
    "pcie_link": ["healthy", "gpu_x8", "hca_gen4"],
    "nvlink": ["healthy", "nvlink_down"],
    "topology": ["healthy", "nvlink_down", "nic_far"],
    "nvbandwidth": ["healthy", "slow_gpu_pair", "gpu_x8"],
}


def degrade(kind: str, model: dict) -> dict:
    """Set one fault in the hardware model."""
    if kind == "gpu_x8":
        model["gpus"][3]["pcie"]["width_current"] = 8
    elif kind == "hca_gen4":
        model["hcas"][5]["pcie"]["gen_current"] = 4
    elif kind == "nic_far":
        # GPU2 and GPU3 lose the NICs on their PCIe switch: those sit on another socket's switch.
        for hca in model["hcas"][2:4]:
            hca.update(pcie_switch=3, numa_node=1)
    elif kind == "slow_gpu_pair":
        model["faults"]["slow_gpu_pair"] = {"gpus": [2, 5], "factor": 0.6}
    else:
        model = degrade_sim(kind, model)
    return model


def main() -> None:
    profile = profiles.load("h100-sxm5-80g-ndr")
    for check, kinds in CAPTURES.items():
        folder = DATA / check
        folder.mkdir(parents=True, exist_ok=True)
        steps = importlib.import_module(f"provision.checks.{check}").CHECK.steps(profile, None)
        for kind in kinds:
            model = degrade(kind, hwmodel.build(profile.data, "node07", 6))
            for step in steps:
                suffix = f".{step.key}.txt" if len(steps) > 1 else ".txt"
                text = run(step.argv[0].replace("-", "_"), step.argv[1:], model)
                (folder / f"sim_h100_{kind}{suffix}").write_text(text)
                if kind == "healthy":
                    (folder / f"sim_h100_truncated{suffix}").write_text(text[: len(text) // 2])
                print(f"{check}/sim_h100_{kind}{suffix}: {len(text)} bytes")


if __name__ == "__main__":
    main()
