#!/usr/bin/env python3
"""Simulated ``fio`` (3.33 text and ``--output-format=json``) for one job from the command line.

Text layout from fio_seqwrite_1M_qd64_libaio_6GiBps. Bandwidth in MiB/s:
``performance.fio_write_MiBps`` (``fio_read_MiBps`` for reads, else the write figure) x
``faults.slow_storage`` (a factor), with run-to-run noise; IOPS = bandwidth / block size,
completion latency = queue depth / IOPS (Little's law). The requested runtime is
reported, not spent.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
# p99 completion latency relative to the mean under steady sequential load (capture: 23 ms p99 / 10.5 ms mean).
P99_OVER_MEAN = 2.2


def size_arg(text: str) -> int:
    """Bytes from fio's size syntax (``1M``, ``4k``, ``1MiB``)."""
    text = text.lower().rstrip("ib").rstrip("b") if text[-1:].lower() == "b" else text.lower()
    return int(float(text[:-1]) * UNITS[text[-1]]) if text[-1:] in UNITS else int(text)


def measure(model: dict, args) -> dict:
    """Bandwidth, IOPS and latency figures of the job."""
    perf = model.get("performance") or {}
    reading = "read" in args.rw and "write" not in args.rw
    bw = float(perf.get("fio_read_MiBps" if reading else "fio_write_MiBps", perf.get("fio_write_MiBps", 0.0)))
    bw = simhw.noisy(bw * float(simhw.faults(model).get("slow_storage", 1.0)), simhw.noise_pct(model))
    iops = bw * (1 << 20) / args.bs
    clat_us = args.iodepth / iops * 1e6 if iops else 0.0
    runtime_ms = int(args.runtime * 1000)
    return {"reading": reading, "bw_MiBps": bw, "iops": iops, "clat_us": clat_us, "runtime_ms": runtime_ms,
            "io_bytes": int(bw * (1 << 20) * args.runtime), "p99_us": clat_us * P99_OVER_MEAN}


def text_report(args, m: dict) -> str:
    """fio's normal output for one job."""
    bs_k, kind = args.bs // 1024, "read" if m["reading"] else "write"
    bw, mb = m["bw_MiBps"], m["bw_MiBps"] * (1 << 20) / 1e6
    io_gib = m["io_bytes"] / (1 << 30)
    p99_ms = max(1, round(m["p99_us"] / 1000))
    lines = [f"{args.name}: (g=0): rw={args.rw}, bs=(R) {bs_k}KiB-{bs_k}KiB, (W) {bs_k}KiB-{bs_k}KiB, "
             f"(T) {bs_k}KiB-{bs_k}KiB, ioengine={args.ioengine}, iodepth={args.iodepth}",
             "fio-3.33", "Starting 1 process", "",
             f"{args.name}: (groupid=0, jobs=1): err= 0: pid={os.getpid()}: {time.strftime('%a %b %e %H:%M:%S %Y')}",
             f"  {kind}: IOPS={m['iops']:.0f}, BW={bw:.0f}MiB/s ({mb:.0f}MB/s)({io_gib:.0f}GiB/{m['runtime_ms']}msec)"
             + ("; 0 zone resets" if kind == "write" else ""),
             f"    clat (usec): min={m['clat_us'] * 0.1:.0f}, max={m['clat_us'] * 8:.0f}, avg={m['clat_us']:.2f}, "
             f"stdev={m['clat_us'] * 0.6:.2f}",
             "    clat percentiles (msec):",
             f"     |  1.00th=[{max(1, round(m['clat_us'] * 0.4 / 1000)):>5}],"
             f" 50.00th=[{max(1, round(m['clat_us'] / 1000)):>5}],"
             f" 99.00th=[{p99_ms:>5}], 99.99th=[{p99_ms * 8:>5}]",
             f"   bw (  MiB/s): min={bw * 0.6:.0f}, max={bw * 1.1:.0f}, per=100.00%, avg={bw:.2f}, "
             f"stdev={bw * 0.1:.2f}, samples={max(1, m['runtime_ms'] // 500)}", "",
             "Run status group 0 (all jobs):",
             f"  {kind.upper()}: bw={bw:.0f}MiB/s ({mb:.0f}MB/s), "
             f"{bw:.0f}MiB/s-{bw:.0f}MiB/s ({mb:.0f}MB/s-{mb:.0f}MB/s), "
             f"io={io_gib:.0f}GiB ({m['io_bytes'] / 1e9:.0f}GB), run={m['runtime_ms']}-{m['runtime_ms']}msec"]
    return "\n".join(lines) + "\n"


def json_report(args, m: dict) -> str:
    """fio's ``--output-format=json`` for one job (bw in KiB/s, latencies in ns)."""
    active = {"io_bytes": m["io_bytes"], "bw": int(m["bw_MiBps"] * 1024), "iops": m["iops"],
              "runtime": m["runtime_ms"], "clat_ns": {"mean": m["clat_us"] * 1e3, "percentile": {
                  "50.000000": int(m["clat_us"] * 1e3), "99.000000": int(m["p99_us"] * 1e3)}}}
    idle = {"io_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "clat_ns": {"mean": 0.0}}
    job = {"jobname": args.name, "groupid": 0, "error": 0,
           "job options": {"rw": args.rw, "bs": args.bs_text, "iodepth": str(args.iodepth), "ioengine": args.ioengine},
           "read": active if m["reading"] else idle, "write": idle if m["reading"] else active}
    return json.dumps({"fio version": "fio-3.33", "timestamp": int(time.time()), "jobs": [job]}, indent=2) + "\n"


def main(argv: list[str]) -> int:
    """Run ``fio ARGV`` (one job, options on the command line); returns the exit status."""
    p = argparse.ArgumentParser(prog="fio", prefix_chars="-")
    for opt, default in (("--name", "job"), ("--rw", "read"), ("--bs", "4k"), ("--ioengine", "psync"),
                         ("--iodepth", "1"), ("--runtime", "0"), ("--output-format", "normal"), ("--size", "1G")):
        p.add_argument(opt, default=default)
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("fio", model)
    args.bs_text, args.bs = args.bs, size_arg(args.bs)
    args.iodepth, args.runtime = int(args.iodepth), float(args.runtime.rstrip("s") or 0) or 60.0
    m = measure(model, args)
    time.sleep(0.05)
    sys.stdout.write(json_report(args, m) if "json" in args.output_format else text_report(args, m))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
