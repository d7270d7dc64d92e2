#!/usr/bin/env python3
"""Simulated ``gpu_burn`` (wilicc/gpu-burn) on the node's visible GPUs.

Progress lines are written after a carriage return like the real tool; the summary ends
with ``GPU N: OK`` or ``FAULTY``. GPUs listed in ``faults.gpu_burn_faulty`` report compare
errors and FAULTY. The exit status is 0 even then, as the real tool's is
(gpu_burn_16gpu_faulty_negative_errors_exit0). Line formats from gpu_burn_a100x8_ok.
Rate: ``performance.gpu_burn_gflops`` per GPU with run-to-run noise. The requested burn
time is reported, not spent: the simulation sleeps at most ``MAX_SLEEP_S``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

MAX_SLEEP_S = 0.3
PROGRESS_STEPS = 10
# Temperature rise of an SXM GPU under gpu_burn load, in C (gpu_burn_a100x8_ok: 38 -> 59 C).
LOAD_TEMP_RISE_C = 21
# Compare errors a faulty GPU reports per step (any non-zero count marks it FAULTY).
ERRORS_PER_STEP = 4096


def progress(step: int, gpus: list[dict], faulty: set[int], gflops: list[float]) -> str:
    """One progress line after ``step`` of ``PROGRESS_STEPS``."""
    pct = 100.0 * step / PROGRESS_STEPS
    procs = " - ".join(f"{step * 2261} ({round(gflops[i])} Gflop/s)" for i in range(len(gpus)))
    errs = "- ".join(f"{step * ERRORS_PER_STEP}  (WARNING!)" if g["index"] in faulty else "0 " for g in gpus)
    temps = " - ".join(f"{g['temp_C'] + LOAD_TEMP_RISE_C * step // PROGRESS_STEPS} C" for g in gpus)
    return f"\r{pct:.1f}%  proc'd: {procs}   errors: {errs}  temps: {temps} "


def main(argv: list[str]) -> int:
    """Run ``gpu_burn ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="gpu_burn")
    p.add_argument("seconds", nargs="?", type=int, default=10)
    p.add_argument("-m", "--memory")
    p.add_argument("-d", "--doubles", action="store_true")
    p.add_argument("-tc", "--tensor-cores", action="store_true")
    p.add_argument("-i", "--gpu", type=int)
    p.add_argument("-c", "--compare")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("gpu_burn", model)
    gpus = simhw.visible_gpus(model)
    if simhw.driver() is None or not gpus:
        print("Couldn't init a GPU test: Error: No CUDA devices")  # gpu_burn's message without devices
        return 1
    if args.gpu is not None:
        gpus = gpus[args.gpu:args.gpu + 1]
    faulty = set(simhw.faults(model).get("gpu_burn_faulty") or [])
    rate = float((model.get("performance") or {}).get("gpu_burn_gflops", 0.0))
    out = [f"Using compare file: {args.compare or 'compare.ptx'}", f"Burning for {args.seconds} seconds."]
    out += [f"GPU {i}: {g['model']} (UUID: {g['uuid']})" for i, g in enumerate(gpus)]
    out += [f"Initialized device {i} with {g['memory_total_MiB']} MB of memory" for i, g in enumerate(gpus)]
    sys.stdout.write("\n".join(out) + "\n")
    for step in range(1, PROGRESS_STEPS + 1):
        gflops = [simhw.noisy(rate, simhw.noise_pct(model)) for _ in gpus]
        sys.stdout.write(progress(step, gpus, faulty, gflops))
        sys.stdout.flush()
        time.sleep(min(MAX_SLEEP_S, args.seconds) / PROGRESS_STEPS)
    lines = ["", "Killing processes.. done", "", f"Tested {len(gpus)} GPUs:"]
    lines += [f"\tGPU {i}: {'FAULTY' if g['index'] in faulty else 'OK'}" for i, g in enumerate(gpus)]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
