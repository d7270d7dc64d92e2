"""Make the simulated captures of gpu_stress, storage and stack in tests/data/<check>/.

Each check's own steps (argv from the H100 profile) are run against simulated tools for an
H100 node, healthy or with one fault set in its hardware model or software state; outputs are
never hand-written. Files: ``sim_h100_<case>.<step key>.txt``; ``sim_h100_truncated.<key>.txt``
is the first half of the healthy one. Tools: gpu_burn, dcgmi, bonding (for ``cat
/proc/net/bonding/<bond>``), fio, nvidia_smi and nvcc from provision/sim/tools/ (nvcc in a
temporary /usr/local/cuda-X.Y tree, since it reads version.json beside its bin/). There is no
simulated dpkg-query: ``dpkg_query`` expands the step's --showformat with the versions of
the debian12 repository snapshot (provision/sim/snapshot/), as dpkg-query would for installed ("ii ") packages.
Re-run after changing a simulated tool or a check's steps:
    .venv/bin/python tests/data/tools/capture_stress.py
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from provision import profiles  # noqa: E402
from provision.checks import gpu_stress, stack, storage  # noqa: E402
from provision.sim import hwmodel, repo, snapshot  # noqa: E402

TOOLS = ROOT / "provision/sim/tools"
DATA = ROOT / "tests/data"
SIM_TOOL = {"gpu_burn": "gpu_burn", "dcgmi": "dcgmi", "fio": "fio", "nvidia-smi": "nvidia_smi"}
CASES = {
    gpu_stress: ["healthy", "gpu_burn_faulty", "dcgm_fail", "gpu_slow", "no_work"],
    storage: ["healthy", "bond_slave_down", "slow_storage"],
    stack: ["healthy", "pin_mismatch"],
}


class Host:
    name, address = "node07", "127.0.0.1"


def software() -> dict:
    """The software state of a node installed from the simulated repository (driver branch 550)."""
    snap = snapshot.load("debian12")
    facts = {}
    for pkg in snap.packages:  # the same files the simulated packages carry (provision/sim/repo.py)
        facts.update(repo.package_facts(snap, pkg))
    return {"driver": json.loads(facts["usr/lib/provision-sim/nvidia-driver.json"]),
            "cuda": json.loads(facts["usr/local/cuda-12.4/version.json"]),
            "packages": {p.name: p.version for p in snap.packages}}


def degrade(kind: str, model: dict, state: dict) -> None:
    """Set one fault in the hardware model or the software state."""
    if kind == "gpu_burn_faulty":
        model["faults"]["gpu_burn_faulty"] = [2]
    elif kind == "dcgm_fail":
        model["faults"]["dcgm_fail"] = {"Targeted Power": [5]}
    elif kind == "gpu_slow":
        model["performance"]["gpu_burn_gflops"] = 40000.0
    elif kind == "no_work":
        model["performance"]["gpu_burn_gflops"] = 0.0
    elif kind == "bond_slave_down":
        model["storage"]["bond"]["slaves"][1]["mii_status"] = "down"
    elif kind == "slow_storage":
        model["faults"]["slow_storage"] = 0.5
    elif kind == "pin_mismatch":  # the 535 branch and an older NCCL left on the node
        state["driver"] = {"version": "535.183.01", "cuda_version": "12.2"}
        state["packages"]["libnccl2"] = "2.18.3-1+cuda12.2"


def dpkg_query(args: list[str], state: dict) -> str:
    """What ``dpkg-query -W --showformat=FMT PKG...`` prints for installed packages."""
    fmt = next(a.split("=", 1)[1] for a in args if a.startswith("--showformat="))
    out = ""
    for name in (a for a in args if not a.startswith("-")):
        line = fmt.replace("${Package}", name).replace("${Version}", state["packages"][name])
        out += line.replace("${db:Status-Abbrev}", "ii ").replace("\\n", "\n")
    return out


def run(argv: list[str], model: dict, state: dict) -> str:
    """Run one step's argv against the simulated tool it names; exit 0 is required."""
    name = Path(argv[0]).name
    if name == "dpkg-query":
        return dpkg_query(argv[1:], state)
    with tempfile.TemporaryDirectory() as tmp:
        hw, drv = Path(tmp) / "hw.yaml", Path(tmp) / "driver.json"
        hw.write_text(yaml.safe_dump(model))
        drv.write_text(json.dumps(state["driver"]))
        pid = Path(tmp) / "persistenced.pid"  # a live pid: nvidia-persistenced runs on an installed node
        pid.write_text(str(os.getpid()))
        env = dict(os.environ, PROVISION_SIM_HW=str(hw), PROVISION_SIM_DRIVER=str(drv), PROVISION_SIM_ADDR="127.0.0.1",
                   PROVISION_SIM_PERSISTENCED_PID=str(pid))
        if name == "cat":
            script, args = TOOLS / "bonding.py", [Path(argv[1]).name]
        elif name == "nvcc":
            toolkit = Path(tmp) / Path(argv[0]).parent.parent.name
            (toolkit / "bin").mkdir(parents=True)
            (toolkit / "version.json").write_text(json.dumps(state["cuda"]))
            script, args = shutil.copy(TOOLS / "nvcc.py", toolkit / "bin/nvcc.py"), argv[1:]
        else:
            script, args = TOOLS / f"{SIM_TOOL[name]}.py", argv[1:]
        proc = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def main() -> None:
    profile = profiles.load("h100-sxm5-80g-ndr")
    for module, kinds in CASES.items():
        folder = DATA / module.CHECK.id
        folder.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            model, state = hwmodel.build(profile.data, Host.name, 6), software()
            degrade(kind, model, state)
            for step in module.CHECK.steps(profile, Host()):
                text = run(step.argv, model, state)
                (folder / f"sim_h100_{kind}.{step.key}.txt").write_text(text)
                if kind == "healthy":
                    (folder / f"sim_h100_truncated.{step.key}.txt").write_text(text[: len(text) // 2])
                print(f"{folder.name}/sim_h100_{kind}.{step.key}.txt: {len(text)} bytes (exit 0)")


if __name__ == "__main__":
    main()
