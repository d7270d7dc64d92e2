#!/usr/bin/env python3
"""Simulated ``mnubergemm``: one MPI rank of DCGM's multi-node GEMM stress, started by the simulated
``dcgmi mndiag`` through a real ``mpirun`` on every host of its host list (one rank per host here; the real
workload runs one rank per GPU). Each rank reports its node's GPUs from the node's hardware model.

Lines as the real workload prints them and DCGM reads them (NVIDIA/DCGM 72fa3fe,
``modules/mndiag/MnDiagMpiMnubergemmRunner.cpp`` ``ParseMnUberGemmOutput`` and the outputs of
``modules/mndiag/tests/MnDiagMpiMnubergemmRunnerTests.cpp``): ``MNUB [I] G: <global rank> <hostname> L: <local
rank>  INFO ...`` names a GPU (the local rank is the GPU's entity id) and ``MNUB [E] G: ... L: ...  T:N <text>``
an error of that GPU. The error texts follow the real ones' "<library> Error : <what>" (the test file's
"IMEX Error : status is DOWN", "NCCL Error : not initialized", "CUDA Error : cudaStreamQuery returned ...");
which fault prints which text is this simulator's choice:

- the node's own IMEX daemon not running -> ``IMEX Error : status is DOWN`` on every GPU (the test file's text);
- a GPU whose NVLink fabric has not completed training, whose fabric status is not Success or whose fabric
  health is not Healthy, or with an NVLink link down -> ``NCCL Error : unhandled cuda error (run with
  NCCL_DEBUG=INFO for details)`` (NCCL's ncclGetErrorString text for ncclUnhandledCudaError);
- a lost GPU -> ``CUDA Error : cudaSetDevice returned unknown error``; a GPU off the bus is not seen at all;
- a GPU in ``faults.gpu_burn_faulty`` (wrong GEMM results) -> ``cuBLAS Error : execution failed``.

A last line, ``PROVISION-SIM-NODE <hostname> driver=<version>``, tells the simulated dcgmi what the real one
learns from each host engine. ``faults.hung_tools: [mnubergemm]`` hangs the rank (and so the whole run).
"""
from __future__ import annotations

import os
import socket
import sys
import zlib

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

IMEX_DOWN = "IMEX Error : status is DOWN"
FABRIC = "NCCL Error : unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
LOST = "CUDA Error : cudaSetDevice returned unknown error"
GEMM = "cuBLAS Error : execution failed"
NODE_LINE = "PROVISION-SIM-NODE"


def gpu_errors(model: dict, gpu: dict, imex_up: bool) -> list[str]:
    """The errors mnubergemm prints for ``gpu`` of ``model``."""
    errors = [] if imex_up else [IMEX_DOWN]
    if gpu.get("lost"):
        return errors + [LOST]
    fabric = gpu.get("fabric") or {}
    health = (fabric.get("health") or {}).get("summary", "Healthy")
    links = (gpu.get("nvlink") or {}).get("links") or []
    if fabric and (fabric.get("state") != "Completed" or fabric.get("status") != "Success" or health != "Healthy"
                   or not all(link.get("active", True) for link in links)):
        errors.append(FABRIC)
    if gpu["index"] in set(simhw.faults(model).get("gpu_burn_faulty") or ()):
        errors.append(GEMM)
    return errors


def rank_lines(model: dict, host: str, rank: int, imex_up: bool, driver: str) -> list[str]:
    """What one rank prints: an INFO line per GPU it drives, an error line per error, the node line."""
    gpus = simhw.visible_gpus(model)
    out = []
    for local, gpu in enumerate(gpus):
        glob = rank * len(gpus) + local
        out.append(f"MNUB [I] G: {glob} {host} L: {gpu['index']}  INFO  hosthash={zlib.crc32(host.encode())}")
        out += [f"MNUB [E] G: {glob} {host} L: {gpu['index']}  T:N {text}" for text in gpu_errors(model, gpu, imex_up)]
    return out + [f"{NODE_LINE} {host} driver={driver}"]


def _imex_up(model: dict) -> bool:
    """Whether this node's IMEX daemon runs (a node of no IMEX domain has none to be down)."""
    import nvidia_imex_ctl  # the simulated nvidia-imex-ctl's view of the daemon (its pid file)

    return nvidia_imex_ctl.domain_from_config(model, "") is None or nvidia_imex_ctl._daemon_running()


def main(argv: list[str]) -> int:
    model = simhw.load()
    simhw.hang_if_faulted("mnubergemm", model)
    host = model.get("hostname") or socket.gethostname()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    driver = (simhw.driver(model) or {}).get("version", "")
    sys.stdout.write("\n".join(rank_lines(model, host, rank, _imex_up(model), driver)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
