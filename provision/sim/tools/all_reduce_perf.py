#!/usr/bin/env python3
"""Simulated ``all_reduce_perf`` (nccl-tests 2.13 output) on the node's visible GPUs.

Bus bandwidth rises with message size towards ``performance.nccl_allreduce_busbw_GBps``
x (active NVLink fraction of the worst GPU used) x ``faults.slow_gpu_pair.factor`` (when
both GPUs of the pair take part), with run-to-run noise per row. Per nccl-tests'
PERFORMANCE.md: algbw = busbw x n / (2(n-1)) and time = latency + size / algbw.
Line formats are nccl-tests common.cu's printf formats.

Started by mpirun over several nodes (``OMPI_COMM_WORLD_SIZE`` > 1), the ranks talk MPI
(mpi4py): rank 0 gathers every node's hardware model and prints one result for the whole job,
as nccl-tests built with MPI=1 does (common.cu gathers each process's "Rank ... on HOST device"
lines to process 0; only process 0 prints). Bus bandwidth is then the lower of every node's
intra-node figure and the fabric's ring over the nodes in rank order
(``fabricsim.ring_net_busbw_GBps``). A node that fails fails every rank: each failing rank
prints its own failure and all exit with the same status; a hung node holds the whole job.

With ``NCCL_MNNVL_ENABLE=1`` exported to the ranks (mpirun ``-x``; NCCL's env documentation,
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) the job runs over multi-node NVLink
instead of the HCAs: its figure is ``performance.nccl_mnnvl_busbw_GBps`` (a healthy NVL72 rack's) x the
worst GPU's NVLink left (``mnnvl_factor``: its active links, less the links through one NVLink switch
tray where its fabric health is not Healthy or its bandwidth not Full). MNNVL forced on fails every rank
with an NCCL error (testNcclError, 3) where it cannot span the job: a GPU whose fabric registration did not
complete, none assigned (an all-zero clusterUuid), or ranks in different cliques or clusters (the
simulator does not model NCCL's socket fallback between cliques: the job fails, naming the cliques).
MNNVL also needs IMEX on every node of the job (``imexdomain``: the node's nvidia-imex daemon running, IMEX channel
0 present, and the daemon of every other node of the job answering on its TCP port); where one is missing the
ranks of that node fail with what NCCL reports (``IMEX_FAILURES``).
Without it (NCCL's default, 2: auto) the simulator keeps the ring over the HCAs.
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

import fabricsim  # noqa: E402
import imexdomain  # noqa: E402
import simhw  # noqa: E402

# Bytes per element of nccl-tests' datatypes (-d).
TYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
              "float": 4, "double": 8, "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}
# Small-message latency of one all-reduce on 8 NVLink GPUs in us (nccl_allreduce_a100x8_novalidation: ~35 us).
LATENCY_US = 30.0
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# How often ranks waiting for the others look again, in s: Open MPI's blocking collectives poll
# without sleeping, so ranks held up by a hung node would otherwise spin on a core until the job's
# timeout (mpi_yield_when_idle only yields: https://www.open-mpi.org/faq/?category=running#oversubscribing).
WAIT_POLL_S = 0.01


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


def device_lines(gpus: list[dict], host: str, first_rank: int = 0, first_device: int = 0) -> list[str]:
    """This process's "Rank ... on HOST device ..." lines (common.cu's format)."""
    return [f"#  Rank {first_rank + i:2d} Group  0 Pid {os.getpid():6d} on {host:>10} device {first_device + i:2d} "
            f"[0x{simhw.gpu_bus(gpu):02x}] {gpu['model']}" for i, gpu in enumerate(gpus)]


def header(args, ngpus: int, devices: list[str]) -> list[str]:
    """Parameter line, device list and column heads."""
    lines = [f"# nThread {args.nthreads} nGpus {ngpus} minBytes {args.minbytes} maxBytes {args.maxbytes} "
             f"step: {args.stepfactor if args.stepfactor > 1 else args.stepbytes}"
             f"({'factor' if args.stepfactor > 1 else 'bytes'}) warmup iters: {args.warmup_iters} "
             f"iters: {args.iters} agg iters: {args.agg_iters} validation: {args.check} graph: {args.cudagraph}",
             "#", "# Using devices", *devices]
    blank = f"# {'':10}  {'':12}  {'':8}  {'':6}  {'':6}"
    return lines + ["#", blank + "           out-of-place                       in-place          ",
                    f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  "
                    f"{'algbw':>6}  {'busbw':>6} {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6} {'#wrong':>6}",
                    f"# {'(B)':>10}  {'(elements)':>12}  {'':8}  {'':6}  {'':6}  {'(us)':>7}  {'(GB/s)':>6}  "
                    f"{'(GB/s)':>6}  {'':5}  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  {'':5}"]


def fail_text(host: str, message: str) -> str:
    """nccl-tests' CUDA failure report."""
    return (f"{host}: Test CUDA failure common.cu:892 '{message}'\n .. {host} pid {os.getpid()}: "
            f"Test failure common.cu:1190")


def fail(host: str, message: str) -> int:
    """Print nccl-tests' CUDA failure report; exit status testCudaError (2)."""
    print(fail_text(host, message))
    return 2


def node_gpus(args, model: dict, host: str, local_rank: int = 0) -> tuple[list[dict], tuple[int, str] | None]:
    """The GPUs this process drives (its local rank's share), or (exit status, report) of the failure."""
    if simhw.driver() is None:
        return [], (2, fail_text(host, "CUDA driver version is insufficient for CUDA runtime version"))
    visible = simhw.visible_gpus(model)
    if not visible:
        return [], (2, fail_text(host, "no CUDA-capable device is detected"))
    per_process = args.ngpus * args.nthreads
    if per_process * (local_rank + 1) > len(visible):
        return [], (2, fail_text(host, "invalid device ordinal"))
    if args.datatype not in TYPE_BYTES:
        return [], (1, f"datatype {args.datatype} is not supported")  # nccl-tests' message for -d
    return visible[per_process * local_rank:per_process * (local_rank + 1)], None


def result_lines(args, n: int, peak: float, noise: float) -> list[str]:
    """The result rows and the summary lines, for ``n`` ranks in all."""
    rows = [row(size, args, n, peak, noise) for size in sizes(args)]
    busbw = [float(r.split()[i]) for r in rows for i in (7, 11)]
    return rows + ["# Out of bounds values : 0 OK",
                   f"# Avg bus bandwidth    : {sum(busbw) / len(busbw) if busbw else 0.0:g} ", "#"]


# A GB200 NVL72's NVLink switch trays: each GPU's 18 NVLink5 links run 2 to each of the 9 (NVIDIA GB200 NVL72,
# https://www.nvidia.com/en-us/data-center/gb200-nvl72/: 9 NVLink switch trays, 18 links per Blackwell GPU). A fabric
# health other than Healthy / bandwidth other than Full is modelled as one switch tray's links lost.
NVLINK_SWITCH_TRAYS = 9
NCCL_ERROR = 3  # nccl-tests' testNcclError (common.h)
NO_CLUSTER = "00000000-0000-0000-0000-000000000000"


def mnnvl_enabled() -> bool:
    """Whether MNNVL is forced on for this job (``NCCL_MNNVL_ENABLE=1``)."""
    return os.environ.get("NCCL_MNNVL_ENABLE", "").strip() == "1"


def mnnvl_factor(gpus: list[dict]) -> float:
    """The NVLink left to the worst of ``gpus``: active links over all links, less one switch tray's share
    where its fabric reports reduced capacity."""
    worst = 1.0
    for g in gpus:
        links = (g.get("nvlink") or {}).get("links") or []
        if not links:
            continue
        active = float(sum(1 for link in links if link["active"]))
        health = (g.get("fabric") or {}).get("health") or {}
        if health.get("summary", "Healthy") != "Healthy" or health.get("bandwidth", "Full") != "Full":
            active -= len(links) / NVLINK_SWITCH_TRAYS
        worst = min(worst, max(active, 0) / len(links))
    return worst


def mnnvl_problem(gpus: list[dict]) -> str:
    """Why MNNVL cannot include these GPUs ('' when it can): a fabric registration not completed or no cluster."""
    for g in gpus:
        fabric = g.get("fabric") or {}
        if fabric.get("state") != "Completed" or fabric.get("status") != "Success":
            return f"GPU{g['index']} fabric state {fabric.get('state') or 'N/A'}: MNNVL is not supported"
        if fabric.get("cluster_uuid") in (None, NO_CLUSTER):
            return f"GPU{g['index']} has no NVLink cluster: MNNVL is not supported"
    return ""


def cliques(gpus: list[dict]) -> list[str]:
    """The ``clusterUuid/cliqueId`` of each of ``gpus`` whose fabric has one."""
    return sorted({f"{g['fabric']['cluster_uuid']}/{g['fabric']['clique_id']}" for g in gpus if g.get("fabric")})


SYSTEM_ERROR = "unhandled system error (run with NCCL_DEBUG=INFO for details)"  # ncclGetErrorString(ncclSystemError)
CUDA_ERROR = "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"  # (ncclUnhandledCudaError), src/init.cc
# What NCCL reports where IMEX cannot carry MNNVL (imexdomain's problem kinds -> (error string, last error)):
# - channel 0 missing: ncclMnnvlCheck cannot allocate FABRIC memory (ncclCuMemAlloc with CU_MEM_HANDLE_TYPE_FABRIC)
#   and returns ncclSystemError after its WARN, NVIDIA/nccl src/mnnvl.cc;
# - this node's daemon down: the allocation works but exporting/importing its fabric handle fails, the same
#   function's other WARN (src/mnnvl.cc);
# - a peer's daemon not answering: NCCL's own check passes (it only trials its own handle), and importing the peer's
#   handle fails in CUCHECK (src/include/cudawrap.h: "Cuda failure %d '%s'", ncclUnhandledCudaError). The CUDA error
#   is CUDA_ERROR_NOT_PERMITTED (800, cuGetErrorString "operation not permitted"), which the driver API documents for
#   a FABRIC import the importer is not granted (cuMemImportFromShareableHandle, CUDA driver API "Virtual Memory
#   Management"); which error a down peer daemon gives is this simulator's choice.
IMEX_FAILURES = {
    imexdomain.CHANNEL_MISSING: (SYSTEM_ERROR, "MNNVL (cliqueSize {n}) is available but not working on this system. "
                                 "Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels). "
                                 "Set NCCL_MNNVL_ENABLE=0 to ignore this issue."),
    imexdomain.DAEMON_DOWN: (SYSTEM_ERROR, "MNNVL (cliqueSize {n}) is available but not working on this system. "
                             "Check the IMEX configuration (nvidia-imex-ctl -N). "
                             "Set NCCL_MNNVL_ENABLE=0 to ignore this issue."),
    imexdomain.PEER_UNREACHABLE: (CUDA_ERROR, "Cuda failure 800 'operation not permitted'"),
}


def nccl_fail_text(host: str, detail: str, error: str = SYSTEM_ERROR) -> str:
    """nccl-tests' NCCL failure report (NCCLCHECK: ncclGetErrorString, then NCCL's last error)."""
    return f"{host}: Test NCCL failure common.cu:1005 '{error} / {detail}'"


def imex_error(host: str, model: dict, peers: list[str], ranks: int) -> tuple[int, str] | None:
    """(exit status, report) of a rank whose node's IMEX cannot carry MNNVL to ``peers`` (the job's other
    hostnames), None when it can; ``ranks`` the job's GPUs (NCCL's cliqueSize)."""
    found = imexdomain.mnnvl_problem(model, peers)
    if found is None:
        return None
    error, detail = IMEX_FAILURES[found[0]]
    return NCCL_ERROR, nccl_fail_text(host, detail.format(n=ranks), error)


def job_peak_busbw(models: list[dict], gpus: list[list[dict]], world: dict | None, rng=None) -> float:
    """Large-message bus bandwidth of one all-reduce over several nodes (``models`` and the GPUs
    each drives, in rank order): the slowest node's own figure, or the fabric's ring if lower."""
    intra = min(peak_busbw(model, used) for model, used in zip(models, gpus))
    return min(intra, fabricsim.ring_net_busbw_GBps(world, models, rng))


def job_lines(args, reports: list[dict], world: dict | None, mnnvl: bool = False) -> list[str]:
    """Rank 0's output for the whole job from every process's report (rank order): ``model``,
    ``gpus`` and its ``devices`` lines; over multi-node NVLink when ``mnnvl``."""
    models, gpus = [r["model"] for r in reports], [r["gpus"] for r in reports]
    if mnnvl:
        figure = float((models[0].get("performance") or {}).get("nccl_mnnvl_busbw_GBps", 0.0))
        peak = figure * mnnvl_factor([g for used in gpus for g in used])
    else:
        peak = job_peak_busbw(models, gpus, world)
    noise = max(simhw.noise_pct(m) for m in models)
    devices = [line for r in reports for line in r["devices"]]
    return header(args, len(gpus[0]), devices) + result_lines(args, sum(len(g) for g in gpus), peak, noise)


def mpi_size() -> int:
    """Processes in the job as Open MPI's launcher tells each one (1 when not under mpirun)."""
    try:
        return int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    except ValueError:
        return 1


def wait_for_all(comm) -> None:
    """A barrier that sleeps between polls (WAIT_POLL_S)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(WAIT_POLL_S)


def mpi_main(args) -> int:
    """One rank of a multi-node run, on MPI_COMM_WORLD."""
    from mpi4py import MPI  # Debian's python3-mpi4py in the nodes; only multi-node runs need it

    return run_rank(args, MPI.COMM_WORLD)


def shared_failure(comm, error: tuple[int, str] | None) -> int:
    """Every rank learns every rank's error; a failing rank prints its own. The first error's status, else 0."""
    errors = [e for e in comm.allgather(error) if e]
    if error:
        print(error[1], flush=True)
    return errors[0][0] if errors else 0


def run_rank(args, comm) -> int:
    """One rank of a multi-node run on ``comm`` (mpi4py's interface); rank 0 prints the job's result."""
    model = simhw.load()
    host = model.get("hostname") or socket.gethostname()
    simhw.hang_if_faulted("all_reduce_perf", model)
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    gpus, error = node_gpus(args, model, host, local)
    mnnvl = mnnvl_enabled()
    if error is None and mnnvl and mnnvl_problem(gpus):
        error = (NCCL_ERROR, nccl_fail_text(host, mnnvl_problem(gpus)))
    if mnnvl:  # every rank learns the job's hosts: NCCL's MNNVL check at init needs this node's IMEX (cliqueSize)
        job = comm.allgather(host)
        if error is None:
            error = imex_error(host, model, [], len(job) * len(gpus))
    per_process = args.ngpus * args.nthreads
    report = {"model": model, "gpus": gpus, "error": error,
              "devices": device_lines(gpus, host, comm.Get_rank() * per_process, local * per_process)}
    wait_for_all(comm)
    status = shared_failure(comm, error)
    if status:
        return status
    if mnnvl:  # every rank learns the job's cliques: ranks in two cannot form one MNNVL communicator
        seen = sorted({c for found in comm.allgather(cliques(gpus)) for c in found})
        if len(seen) > 1:
            if comm.Get_rank() == 0:
                print(nccl_fail_text(host, f"MNNVL ranks span {len(seen)} NVLink cliques: {', '.join(seen)}"),
                      flush=True)
            return NCCL_ERROR
        # then the connections: each rank imports its peers' fabric handles through their IMEX daemons
        status = shared_failure(comm, imex_error(host, model, sorted(set(job) - {host}), len(job) * len(gpus)))
        if status:
            return status
    reports = comm.gather(report, root=0)
    if comm.Get_rank() == 0:
        sys.stdout.write("\n".join(job_lines(args, reports, fabricsim.load(), mnnvl)) + "\n\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    """Run ``all_reduce_perf ARGV``; returns the exit status."""
    args, _unknown = parser().parse_known_args(argv)
    if mpi_size() > 1:
        return mpi_main(args)
    model = simhw.load()
    host = model.get("hostname") or socket.gethostname()
    simhw.hang_if_faulted("all_reduce_perf", model)
    gpus, error = node_gpus(args, model, host)
    if error:
        print(error[1])
        return error[0]
    peak, noise = peak_busbw(model, gpus), simhw.noise_pct(model)
    lines = header(args, len(gpus), device_lines(gpus, host)) + result_lines(args, len(gpus), peak, noise)
    time.sleep(0.05)
    sys.stdout.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
