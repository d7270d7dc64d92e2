#!/usr/bin/env python3
"""Simulated ``all_reduce_perf`` (nccl-tests 2.13 output) on the node's visible GPUs.

Bus bandwidth rises with message size towards ``performance.nccl_allreduce_busbw_GBps``
x (active NVLink fraction of the worst GPU used) x ``faults.slow_gpu_pair.factor`` (when
both GPUs of the pair take part), with run-to-run noise per row. Per nccl-tests'
PERFORMANCE.md: algbw = busbw x n / (2(n-1)) and time = latency + size / algbw.
Line formats are nccl-tests common.cu's printf formats.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

# Bytes per element of nccl-tests' datatypes (-d).
TYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
              "float": 4, "double": 8, "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}
# Small-message latency of one all-reduce on 8 NVLink GPUs in us (nccl_allreduce_a100x8_novalidation: ~35 us).
LATENCY_US = 30.0
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_arg(text: str) -> int:
    """Bytes from nccl-tests' size syntax (``8``, ``128M``, ``8G``: powers of 1024)."""
    text = text.strip().upper()
    return int(text[:-1]) * SUFFIX[text[-1]] if text and text[-1] in SUFFIX else int(text)


def parser() -> argparse.ArgumentParser:
    """nccl-tests' options (defaults from common.cu); unknown ones are ignored."""
    p = argparse.ArgumentParser(prog="all_reduce_perf")
    p.add_argument("-b", "--minbytes", type=size_arg, default=32 * 1024 * 1024)
    p.add_argument("-e", "--maxbytes", type=size_arg, default=32 * 1024 * 1024)
    p.add_argument("-f", "--stepfactor", type=int, default=1)
    p.add_argument("-i", "--stepbytes", type=size_arg, default=1024 * 1024)
    p.add_argument("-g", "--ngpus", type=int, default=1)
    p.add_argument("-t", "--nthreads", type=int, default=1)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-m", "--agg_iters", type=int, default=1)
    p.add_argument("-d", "--datatype", default="float")
    p.add_argument("-o", "--op", default="sum")
    p.add_argument("-G", "--cudagraph", type=int, default=0)
    return p


def sizes(args) -> list[int]:
    """Message sizes from -b to -e, by factor -f or else by step -i."""
    out, size = [], args.minbytes
    while size <= args.maxbytes:
        out.append(size)
        size = size * args.stepfactor if args.stepfactor > 1 else size + max(1, args.stepbytes)
        if args.stepfactor == 1 and args.stepbytes == 0:
            break
    return out


def peak_busbw(model: dict, gpus: list[dict]) -> float:
    """Large-message bus bandwidth in GB/s for these GPUs, before noise."""
    bw = float((model.get("performance") or {}).get("nccl_allreduce_busbw_GBps", 0.0))
    fractions = [sum(1 for link in g["nvlink"]["links"] if link["active"]) / len(g["nvlink"]["links"])
                 for g in gpus if (g.get("nvlink") or {}).get("links")]
    bw *= min(fractions, default=1.0)
    pair = simhw.faults(model).get("slow_gpu_pair") or {}
    used = {g["index"] for g in gpus}
    if pair and set(pair.get("gpus", [])) <= used:
        bw *= float(pair.get("factor", 1.0))
    return bw


def row(size: int, args, n: int, peak: float, noise: float) -> str:
    """One result line: out-of-place then in-place."""
    word = TYPE_BYTES[args.datatype]
    count = size // word
    line = f"{count * word:12d}  {count:12d}  {args.datatype:>8}  {args.op:>6}  {-1:6d}"
    for _placement in ("out", "in"):
        algbw_peak = simhw.noisy(peak, noise) * n / (2 * (n - 1)) if n > 1 else simhw.noisy(peak, noise)
        t_us = LATENCY_US + (count * word) / (algbw_peak * 1e3) if algbw_peak > 0 else LATENCY_US
        algbw = (count * word) / (t_us * 1e3)
        busbw = algbw * 2 * (n - 1) / n if n > 1 else 0.0
        t_str = f"{t_us:7.0f}" if t_us >= 10000 else (f"{t_us:7.1f}" if t_us >= 100 else f"{t_us:7.2f}")
        wrong = f"{0:5d}" if args.check else f"{'N/A':>5}"
        line += f"  {t_str}  {algbw:6.2f}  {busbw:6.2f}  {wrong}"
    return line


def header(args, gpus: list[dict], host: str) -> list[str]:
    """Parameter line, device list and column heads."""
    lines = [f"# nThread {args.nthreads} nGpus {len(gpus)} minBytes {args.minbytes} maxBytes {args.maxbytes} "
             f"step: {args.stepfactor if args.stepfactor > 1 else args.stepbytes}"
             f"({'factor' if args.stepfactor > 1 else 'bytes'}) warmup iters: {args.warmup_iters} "
             f"iters: {args.iters} agg iters: {args.agg_iters} validation: {args.check} graph: {args.cudagraph}",
             "#", "# Using devices"]
    for rank, gpu in enumerate(gpus):
        lines.append(f"#  Rank {rank:2d} Group  0 Pid {os.getpid():6d} on {host:>10} device {rank:2d} "
                     f"[0x{simhw.gpu_bus(gpu):02x}] {gpu['model']}")
    blank = f"# {'':10}  {'':12}  {'':8}  {'':6}  {'':6}"
    return lines + ["#", blank + "           out-of-place                       in-place          ",
                    f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  "
                    f"{'algbw':>6}  {'busbw':>6} {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6} {'#wrong':>6}",
                    f"# {'(B)':>10}  {'(elements)':>12}  {'':8}  {'':6}  {'':6}  {'(us)':>7}  {'(GB/s)':>6}  "
                    f"{'(GB/s)':>6}  {'':5}  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  {'':5}"]


def fail(host: str, message: str) -> int:
    """nccl-tests' CUDA failure report; exit status testCudaError (2)."""
    print(f"{host}: Test CUDA failure common.cu:892 '{message}'\n .. {host} pid {os.getpid()}: "
          f"Test failure common.cu:1190")
    return 2


def main(argv: list[str]) -> int:
    """Run ``all_reduce_perf ARGV``; returns the exit status."""
    args, _unknown = parser().parse_known_args(argv)
    model = simhw.load()
    host = model.get("hostname") or socket.gethostname()
    simhw.hang_if_faulted("all_reduce_perf", model)
    if simhw.driver() is None:
        return fail(host, "CUDA driver version is insufficient for CUDA runtime version")
    visible = simhw.visible_gpus(model)
    if not visible:
        return fail(host, "no CUDA-capable device is detected")
    if args.ngpus * args.nthreads > len(visible):
        return fail(host, "invalid device ordinal")
    if args.datatype not in TYPE_BYTES:
        print(f"datatype {args.datatype} is not supported")  # nccl-tests' message for -d
        return 1
    gpus = visible[:args.ngpus * args.nthreads]
    peak, noise = peak_busbw(model, gpus), simhw.noise_pct(model)
    lines = header(args, gpus, host)
    rows = [row(size, args, len(gpus), peak, noise) for size in sizes(args)]
    busbw = [float(r.split()[i]) for r in rows for i in (7, 11)]
    lines += rows + ["# Out of bounds values : 0 OK",
                     f"# Avg bus bandwidth    : {sum(busbw) / len(busbw) if busbw else 0.0:g} ", "#"]
    time.sleep(0.05)
    sys.stdout.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
