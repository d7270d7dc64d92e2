"""Make the simulated-hardware captures in tests/data/<check>/ from a hardware model.

Each capture is a simulated tool's output for an H100 node, healthy or with one fault set in
its hardware model (never a hand-written result). Re-run after changing a simulated tool:
    .venv/bin/python tests/data/tools/capture_sim.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from provision import profiles  # noqa: E402
from provision.sim import hwmodel  # noqa: E402

TOOLS = ROOT / "provision/sim/tools"
DATA = ROOT / "tests/data"


def degrade(kind: str, model: dict) -> dict:
    if kind == "remap_pending":
        gpu = model["gpus"][3]
        gpu["remapped_rows"].update(uncorrectable=1, pending=True)
        gpu["ecc"]["volatile"]["dram_uncorrectable"] = 2
    elif kind == "hca_200":
        model["hcas"][3]["rate_Gbps"] = 200
    elif kind == "slow_hca":
        model["faults"]["slow_hca"] = {"mlx5_5": 0.7}
    elif kind == "nvlink_down":
        for link in model["gpus"][6]["nvlink"]["links"][:9]:
            link["active"] = False
    elif kind == "hw_slowdown":
        model["gpus"][5]["clocks_event_reasons"] = ["hw_slowdown", "hw_power_brake_slowdown"]
    elif kind == "xid79":
        gpu = model["gpus"][2]
        gpu["fallen_off_bus"] = True
        pci = "0000:" + gpu["bus_id"][9:14].lower()  # "PCI:0000:4c:00" as NVRM prints it
        model["kernel_log"] += [f"[ 8214.401233] NVRM: Xid (PCI:{pci}): 79, pid=0, GPU has fallen off the bus.",
                                f"[ 8214.401240] NVRM: GPU {pci}.0: GPU has fallen off the bus."]
    return model


def run(tool: str, argv: list[str], model: dict) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        hw, drv = Path(tmp) / "hw.yaml", Path(tmp) / "driver.json"
        hw.write_text(yaml.safe_dump(model))
        drv.write_text(json.dumps({"version": "550.127.05", "cuda_version": "12.4"}))
        pid = Path(tmp) / "persistenced.pid"  # nvidia-persistenced "running": this process
        pid.write_text(str(os.getpid()))
        env = dict(os.environ, PROVISION_SIM_HW=str(hw), PROVISION_SIM_DRIVER=str(drv),
                   PROVISION_SIM_ADDR="127.0.0.1", PROVISION_SIM_PERSISTENCED_PID=str(pid))
        if tool == "ib_write_bw":
            port = str(20000 + os.getpid() % 20000)
            server = subprocess.Popen([sys.executable, str(TOOLS / "ib_write_bw.py"), *argv, "-p", port],
                                      env=env, stdout=subprocess.DEVNULL)
            import time
            time.sleep(0.5)
            out = subprocess.run([sys.executable, str(TOOLS / "ib_write_bw.py"), *argv, "-p", port, "127.0.0.1"],
                                 env=env, capture_output=True, text=True).stdout
            server.wait(timeout=10)
            return out
        return subprocess.run([sys.executable, str(TOOLS / f"{tool}.py"), *argv], env=env,
                              capture_output=True, text=True).stdout


CAPTURES = {
    "gpu_health": ("nvidia_smi", ["-q", "-x"], ["healthy", "remap_pending", "xid79", "hw_slowdown"]),
    "xid": ("dmesg", [], ["healthy", "xid79"]),
    "ib_ports": ("ibstat", [], ["healthy", "hca_200"]),
    "ib_write_bw": ("ib_write_bw", ["-d", "mlx5_5", "-s", "65536", "-D", "5", "--report_gbits", "-F"],
                    ["healthy", "slow_hca"]),
    "nccl_allreduce": ("all_reduce_perf", ["-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-c", "1"],
                       ["healthy", "nvlink_down"]),
}


def main() -> None:
    profile = profiles.load("h100-sxm5-80g-ndr")
    for check, (tool, argv, kinds) in CAPTURES.items():
        folder = DATA / check
        folder.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            model = degrade(kind, hwmodel.build(profile.data, "node07", 6))
            text = run(tool, argv, model)
            (folder / f"sim_h100_{kind}.txt").write_text(text)
            if kind == "healthy":
                (folder / "sim_h100_truncated.txt").write_text(text[: len(text) // 2])
            print(f"{folder.name}/sim_h100_{kind}.txt: {len(text)} bytes")


if __name__ == "__main__":
    main()
