#!/usr/bin/env python3
"""Simulated ``nvbandwidth`` (NVIDIA/nvbandwidth v0.5-style output) for the copy-engine tests.

Matrix layout from nvbandwidth_readme_d2d_write_8gpu; the diagonal of GPU-GPU matrices is
``N/A`` as newer releases print it. Bandwidth in GB/s: host<->device =
``performance.nvbandwidth_h2d_GBps`` x the GPU's PCIe downtraining factor; device<->device =
``performance.nvbandwidth_d2d_GBps`` x the lower active-NVLink fraction of the two GPUs
x ``faults.slow_gpu_pair.factor`` for that pair; each cell with run-to-run noise.
"""
from __future__ import annotations

import argparse
import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

# testcase -> (title, kind)
TESTCASES = {
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d"),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", "h2d"),
    "device_to_device_memcpy_read_ce": ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "d2d"),
    "device_to_device_memcpy_write_ce": ("memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "d2d"),
}


def _link_fraction(gpu: dict) -> float:
    """Share of the GPU's NVLink links that are up (1.0 without NVLink)."""
    links = (gpu.get("nvlink") or {}).get("links") or []
    return sum(1 for link in links if link["active"]) / len(links) if links else 1.0


def d2d_GBps(model: dict, a: dict, b: dict) -> float:
    """Copy bandwidth between two GPUs before noise."""
    perf = model.get("performance") or {}
    bw = float(perf.get("nvbandwidth_d2d_GBps", 0.0)) * min(_link_fraction(a), _link_fraction(b))
    pair = simhw.faults(model).get("slow_gpu_pair") or {}
    if {a["index"], b["index"]} == set(pair.get("gpus", [])):
        bw *= float(pair.get("factor", 1.0))
    return bw


def matrix(model: dict, gpus: list[dict], kind: str) -> list[list[float | None]]:
    """Rows of the result matrix (one CPU row for host copies)."""
    noise = simhw.noise_pct(model)
    perf = model.get("performance") or {}
    if kind == "h2d":
        h2d = float(perf.get("nvbandwidth_h2d_GBps", 0.0))
        return [[simhw.noisy(h2d * simhw.pcie_factor(g["pcie"]), noise) for g in gpus]]
    return [[None if a is b else simhw.noisy(d2d_GBps(model, a, b), noise) for b in gpus] for a in gpus]


def render(name: str, rows: list[list[float | None]], columns: int) -> str:
    """One test's block: title, matrix and SUM line."""
    title, _kind = TESTCASES[name]
    width = len(str(max(len(rows), 1) - 1))
    lines = [f"Running {name}.", title, " " * width + "".join(f"{j:>10}" for j in range(columns))]
    for i, row in enumerate(rows):
        lines.append(f"{i:<{width}}" + "".join(f"{'N/A':>10}" if v is None else f"{v:>10.2f}" for v in row))
    total = sum(v for row in rows for v in row if v is not None)
    return "\n".join(lines + ["", f"SUM {name} {total:.2f}", ""]) + "\n"


def main(argv: list[str]) -> int:
    """Run ``nvbandwidth ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="nvbandwidth")
    p.add_argument("-t", "--testcase", nargs="+", action="extend")
    p.add_argument("-l", "--list", action="store_true")
    p.add_argument("-b", "--bufferSize", type=int, default=512)
    p.add_argument("-i", "--testSamples", type=int, default=3)
    args, _unknown = p.parse_known_args(argv)
    if args.list:
        print("\n".join(TESTCASES))
        return 0
    model = simhw.load()
    simhw.hang_if_faulted("nvbandwidth", model)
    drv = simhw.driver()
    if drv is None:
        print("NVML error: Driver Not Loaded")
        return 1
    gpus = simhw.visible_gpus(model)
    names = args.testcase or list(TESTCASES)
    unknown = [n for n in names if n not in TESTCASES]
    if unknown:
        print(f"ERROR: Testcase {unknown[0]} not found!")
        return 1
    out = [f"nvbandwidth Version: v0.5\n\nDriver Version: {drv['version']}\n"]
    out += [f"Device {i}: {g['model']} ({g['bus_id'][:-2]})" for i, g in enumerate(gpus)] + [""]
    text = "\n".join(out) + "\n"
    for name in names:
        text += render(name, matrix(model, gpus, TESTCASES[name][1]), len(gpus))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
