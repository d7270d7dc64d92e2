"""Shared library of the simulated GPU/InfiniBand tools (stdlib + PyYAML only).

Installed inside each simulated node as ``/usr/lib/provision-sim/simhw.py``. The tools read
the node's hardware model (``provision/sim/hwmodel.py`` writes it) and the installed
driver's version file, and print what the real tools print for that hardware.
"""
from __future__ import annotations

import json
import os
import random
import time

import yaml

MODEL_PATH = "/etc/provision-sim/hardware.yaml"
DRIVER_PATH = "/usr/lib/provision-sim/nvidia-driver.json"
PERSISTENCED_PID = "/run/nvidia-persistenced/nvidia-persistenced.pid"
# PCIe transfer rate per lane in GT/s by generation (PCI-SIG base specifications 1.0-6.0).
PCIE_GTPS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
# Line-code efficiency: 8b/10b for Gen1-2, 128b/130b for Gen3+ (PCI-SIG base specification 3.0).
PCIE_ENCODING = {1: 0.8, 2: 0.8}
# Share of the raw link left after TLP/DLLP overhead with 256-byte payloads (~85%, PCI-SIG
# "PCIe efficiency" app notes); a 400 Gb/s HCA behind Gen4 x16 then tops out near 215 Gb/s.
PCIE_PROTOCOL_EFFICIENCY = 0.85
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")
# PCI device ids by product-name fragment (PCI ID repository, pci-ids.ucw.cz, vendor 10de; B200 and GB200:
# pci_device_id 290110DE and 294110DE in the driver-580 captures, tests/data/samples/nvidia_smi_qx_*_driver580_*).
PCI_DEVICE_IDS = (("GB200", "2941"), ("B200", "2901"), ("H100 80GB HBM3", "2330"), ("H200", "2335"),
                  ("A100-SXM4-80GB", "20b2"), ("A100-SXM4-40GB", "20b0"), ("A100", "20b5"), ("A10", "2236"),
                  ("T4", "1eb8"), ("V100", "1db5"), ("L4", "27b8"), ("4090", "2684"))
_RANDOM = random.SystemRandom()


def load() -> dict:
    """The node's hardware model (env ``PROVISION_SIM_HW`` overrides the path)."""
    with open(os.environ.get("PROVISION_SIM_HW", MODEL_PATH), encoding="utf-8") as fh:
        # libyaml's parser where PyYAML has it: pure Python took seconds for the MBs of a 1,024-node fabric
        return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def noisy(value: float, pct: float) -> float:
    """``value`` with uniform run-to-run noise of +-``pct`` percent."""
    return value * (1.0 + _RANDOM.uniform(-pct, pct) / 100.0)


def noise_pct(model: dict) -> float:
    """The model's run-to-run noise in percent."""
    return float(model.get("noise_pct", 0.0))


def driver(model: dict | None = None) -> dict | None:
    """``{"version", "cuda_version"}`` of the loaded driver, None when not installed.

    Normally the installed package's file (env ``PROVISION_SIM_DRIVER`` or
    ``/usr/lib/provision-sim/nvidia-driver.json``). The model's ``faults.loaded_driver`` wins:
    an older kernel module still loaded because the node was not rebooted after an upgrade.
    """
    if model is None:
        try:
            model = load()
        except OSError:
            model = {}
    loaded = faults(model).get("loaded_driver")
    if loaded:
        return loaded
    path = os.environ.get("PROVISION_SIM_DRIVER", DRIVER_PATH)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") else None


def faults(model: dict) -> dict:
    """The model's injected faults (kind -> parameters)."""
    return model.get("faults") or {}


BENCH_TOOL_TIME = "/etc/provision-sim/bench-tool-time-s"  # bench/burnin_overhead.py: every tool takes this long


def hang_if_faulted(tool_name: str, model: dict | None = None) -> None:
    """Sleep forever when the model lists ``tool_name`` under ``faults.hung_tools``; first, when the
    benchmark file ``BENCH_TOOL_TIME`` holds seconds T, take T seconds (a fixed tool time, so that a
    burn-in's orchestration overhead can be measured against a known test time)."""
    model = load() if model is None else model
    try:
        with open(BENCH_TOOL_TIME) as handle:
            time.sleep(max(0.0, float(handle.read().strip() or 0)))
    except (OSError, ValueError):
        pass
    if tool_name in (faults(model).get("hung_tools") or []):
        while True:
            time.sleep(3600)


def visible_gpus(model: dict) -> list[dict]:
    """GPUs the driver sees: present and not fallen off the bus."""
    return [g for g in model.get("gpus", []) if g.get("present", True) and not g.get("fallen_off_bus")]


def persistence_enabled() -> bool:
    """True when the nvidia-persistenced pid file names a live process.

    Path: env ``PROVISION_SIM_PERSISTENCED_PID`` or the daemon's default pid file.
    """
    path = os.environ.get("PROVISION_SIM_PERSISTENCED_PID", PERSISTENCED_PID)
    try:
        with open(path, encoding="utf-8") as fh:
            pid = int(fh.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def pcie_Gbps(gen: int, width: int) -> float:
    """Usable one-direction PCIe bandwidth in Gb/s of a link at ``gen`` x ``width``."""
    gtps = PCIE_GTPS.get(int(gen), 2.5)
    return gtps * PCIE_ENCODING.get(int(gen), 128 / 130) * int(width) * PCIE_PROTOCOL_EFFICIENCY


def pcie_factor(pcie: dict) -> float:
    """Bandwidth fraction left by a downtrained link (current vs maximum gen/width), <= 1."""
    now = pcie_Gbps(pcie["gen_current"], pcie["width_current"])
    best = pcie_Gbps(pcie["gen_max"], pcie["width_max"])
    return min(1.0, now / best) if best else 1.0


def hca(model: dict, name: str) -> dict | None:
    """The HCA called ``name`` (e.g. ``mlx5_0``), None if the node has none."""
    return next((h for h in model.get("hcas", []) if h["name"] == name), None)


def gpu_bus(gpu: dict) -> int:
    """PCI bus number of a GPU from its ``bus_id`` (``00000000:19:00.0`` -> 0x19)."""
    return int(gpu["bus_id"].split(":")[1], 16)


def pci_device_id(gpu: dict) -> str:
    """Four-hex-digit PCI device id of the GPU model (``2330`` for an H100 SXM5 80GB)."""
    return next((dev for key, dev in PCI_DEVICE_IDS if key in gpu["model"]), "2330")


def persistence_mode(gpu: dict, daemon: bool) -> str:
    """The GPU's persistence mode as nvidia-smi prints it: Enabled while nvidia-persistenced runs (``daemon``)
    and the GPU's own setting (the model's ``persistence_mode``, what ``nvidia-smi -pm`` sets) is not Disabled."""
    return "Enabled" if daemon and gpu.get("persistence_mode", "Enabled") != "Disabled" else "Disabled"


def power_limit_W(gpu: dict) -> float:
    """The GPU's current (enforced) power limit: the model's ``power_limit_W`` (what ``nvidia-smi -pl`` sets), the
    profile's cap on a model written before it existed."""
    return float(gpu.get("power_limit_W", gpu["power_cap_W"]))


def mode(gpu: dict, key: str, which: str, default: str = "Disabled") -> str:
    """``current`` or ``pending`` of the GPU's ``mig_mode`` or ``ecc_mode`` (N/A where the model has none)."""
    block = gpu.get(key)
    return str(block.get(which, default)) if isinstance(block, dict) else ("N/A" if key in gpu else default)
