#!/usr/bin/env python3
"""Simulated ``nvidia-smi``: the default table (R550+ layout), ``-L``, ``-q``, ``-q -x``,
``--query-gpu``, ``--query-compute-apps`` (the node's running simulated CUDA programs), ``topo -m`` and
``nvlink -s``, computed from the node's hardware model.

Formats follow real captures in ``tests/data/samples/`` (smi_table_h100x8_550,
smi_q_h100x8_535_183, smi_qx_t4_v11_width_x8, smi_query_csv_b300x7_in_watch). Driver and
CUDA versions come from the installed driver's version file; without it the tool fails
like the real one (exit 9). GPUs fallen off the bus are absent from every listing.
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
import smi_csv  # noqa: E402
import smi_query  # noqa: E402
import smi_topo  # noqa: E402

# nvidia-smi's exit status when the driver is not loaded (nvidia-smi(1), RETURN VALUE 9).
EXIT_NO_DRIVER = 9
RULE = "+" + "-" * 89 + "+"
GRID = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
HEADER = [
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    "|=========================================+========================+======================|",
]
PROCESSES = [
    RULE,
    "| Processes:                                                                              |",
    "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
    "|        ID   ID                                                               Usage      |",
    "|=========================================================================================|",
    "|  No running processes found                                                             |",
    RULE,
]


def _gpu_rows(index: int, gpu: dict, persistence: str) -> list[str]:
    """The three table lines of one GPU (column widths as printed by R550)."""
    ecc = gpu["ecc"]["volatile"]
    unc = int(ecc["sram_uncorrectable"]) + int(ecc["dram_uncorrectable"])
    name = gpu["model"][:31]
    pm = "On" if simhw.persistence_mode(gpu, persistence == "Enabled") == "Enabled" else "Off"
    return [
        f"|{index:>4}  {name:<31}{pm:<3} |{gpu['bus_id']:>19} Off |{unc:>21} |",
        f"| N/A{gpu['temp_C']:>5}C    P0{round(gpu['power_W']):>15}W / {round(simhw.power_limit_W(gpu)):>4}W |"
        f"{gpu.get('memory_used_MiB', 0):>8}MiB / {gpu['memory_total_MiB']:>6}MiB |"
        f"{0:>7}%{'Default':>13} |",
        f"|{'':41}|{'':24}|{simhw.mode(gpu, 'mig_mode', 'current'):>21} |",
    ]


def table(gpus: list[dict], drv: dict, persistence: str) -> str:
    """The default ``nvidia-smi`` output."""
    lines = [time.strftime("%a %b %d %H:%M:%S %Y"), RULE,
             f"| NVIDIA-SMI {drv['version']:<23}Driver Version: {drv['version']:<15}"
             f"CUDA Version: {drv['cuda_version']:<9}|",
             "|" + GRID[1:]]
    lines += HEADER
    for index, gpu in enumerate(gpus):
        lines += _gpu_rows(index, gpu, persistence) + [GRID]
    return "\n".join(lines + [""] + PROCESSES) + "\n"


def list_gpus(gpus: list[dict]) -> str:
    """``nvidia-smi -L``."""
    return "".join(f"GPU {i}: {g['model']} (UUID: {g['uuid']})\n" for i, g in enumerate(gpus))


def select(gpus: list[dict], ids: str | None) -> list[tuple[int, dict]]:
    """``(index, gpu)`` pairs picked by ``-i`` (indices, bus ids or UUIDs, comma-separated)."""
    pairs = list(enumerate(gpus))
    if not ids:
        return pairs
    wanted = [w.strip().lower() for w in ids.split(",") if w.strip()]
    return [(i, g) for i, g in pairs
            if str(i) in wanted or g["uuid"].lower() in wanted or g["bus_id"].lower() in wanted
            or g["bus_id"].lower()[4:] in wanted]


# The simulated programs that hold a CUDA context (provision/sim/tools, built or installed under these names): each
# one running in the node is a compute process on every visible GPU (gpu_burn, nvbandwidth and a single-process
# nccl-tests run use every GPU of the node).
CUDA_PROGRAMS = frozenset({"gpu_burn", "nvbandwidth", "mnubergemm", "all_reduce_perf", "all_gather_perf",
                           "broadcast_perf", "reduce_scatter_perf", "reduce_perf", "alltoall_perf", "sendrecv_perf"})
# used_memory: the model has no per-process memory, printed as nvidia-smi prints a value it cannot read ([N/A])
APP_FIELDS = {"gpu_bus_id", "pid", "process_name", "gpu_uuid", "used_memory", "used_gpu_memory"}


def compute_apps(gpus: list[dict], fields: str, fmt: str) -> int:
    """``--query-compute-apps=FIELDS --format=csv[,noheader]``: one line per (CUDA process, GPU), from the node's own
    processes (/proc: a simulated CUDA program running), nothing when there is none (nvidia-smi
    --help-query-compute-apps; the real tool prints no line then)."""
    wanted = [f.strip() for f in fields.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in APP_FIELDS]
    if unknown:
        print(f'Field "{unknown[0]}" is not a valid field to query.')
        return 2
    rows = []
    for pid, path in _cuda_processes():
        for gpu in gpus:
            values = {"gpu_bus_id": gpu["bus_id"], "pid": str(pid), "process_name": path, "gpu_uuid": gpu["uuid"],
                      "used_memory": "[N/A]", "used_gpu_memory": "[N/A]"}
            rows.append(", ".join(values[f] for f in wanted))
    header = [] if "noheader" in fmt else [", ".join(wanted)]
    _emit("".join(f"{line}\n" for line in header + rows), None)
    return 0


def _csv_query(args, chosen: list, ctx: dict) -> int:
    """``--query-gpu`` or ``--query-compute-apps`` with ``--format``; the exit status."""
    if args.query_compute_apps:
        return compute_apps([g for _, g in chosen], args.query_compute_apps, args.format)
    text, status = smi_csv.render(chosen, args.query_gpu, args.format, ctx)
    _emit(text, args.filename)
    return status


def _cuda_processes() -> list[tuple[int, str]]:
    """(pid, program path) of every process of this node running a simulated CUDA program (its argv[0], or the
    script a Python interpreter runs)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "cmdline"), "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:  # gone meanwhile
            continue
        path = next((a for a in argv[:2] if os.path.basename(a) in CUDA_PROGRAMS), None)
        if path is not None:
            found.append((int(entry.name), path))
    return sorted(found)


def parser() -> argparse.ArgumentParser:
    """Options of the real tool that the simulation honours; others are accepted and ignored."""
    p = argparse.ArgumentParser(prog="nvidia-smi", add_help=True)
    p.add_argument("-q", "--query", action="store_true")
    p.add_argument("-x", "--xml-format", action="store_true")
    p.add_argument("-L", "--list-gpus", action="store_true")
    p.add_argument("-i", "--id")
    p.add_argument("--query-gpu")
    p.add_argument("--query-compute-apps")
    p.add_argument("--format", default="csv")
    p.add_argument("-f", "--filename")
    p.add_argument("-l", "--loop", nargs="?")
    p.add_argument("-d", "--display")
    p.add_argument("-r", "--gpu-reset", action="store_true")
    return p


def _emit(text: str, filename: str | None) -> None:
    """Print ``text`` or write it to ``-f FILE`` like the real tool."""
    if filename:
        with open(filename, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def main(argv: list[str]) -> int:
    """Run ``nvidia-smi ARGV``; returns the exit status."""
    drv = simhw.driver()
    if drv is None:
        print(simhw.NO_DRIVER)
        return EXIT_NO_DRIVER
    model = simhw.load()
    simhw.hang_if_faulted("nvidia-smi", model)
    gpus = simhw.visible_gpus(model)
    if argv and argv[0] == "topo":
        return smi_topo.topo_main(argv[1:], model, gpus)
    if argv and argv[0] == "nvlink":
        return smi_topo.nvlink_main(argv[1:], gpus)
    args, _unknown = parser().parse_known_args(argv)
    persistence = "Enabled" if simhw.persistence_enabled() else "Disabled"
    chosen = select(gpus, args.id)
    if args.id and not chosen:
        print(f"No devices were found matching the id {args.id}")  # nvidia-smi -i with a wrong id
        return 6
    ctx = {"driver": drv, "persistence": persistence, "attached": len(gpus)}
    if args.gpu_reset:
        # Every chosen GPU (all without -i) as nvidia-smi prints a reset ("GPU 00000000:8F:00.0 was successfully
        # reset." per GPU, then "All done."; nvidia-smi(1), -r/--gpu-reset); a simulated GPU keeps its state.
        _emit("".join(f"GPU {g['bus_id']} was successfully reset.\n" for _, g in chosen) + "All done.\n", None)
        return 0
    if args.query_gpu or args.query_compute_apps:
        return _csv_query(args, chosen, ctx)
    if args.list_gpus:
        text = list_gpus(gpus)
    elif args.query:
        text = smi_query.render_xml(chosen, ctx) if args.xml_format else smi_query.render_text(chosen, ctx)
    elif not gpus:
        text = "No devices were found\n"
    else:
        text = table([g for _, g in chosen], drv, persistence)
    _emit(text, args.filename)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
