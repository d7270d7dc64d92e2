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
which fault prints which text is this simulator's choice (the hosts of the run come as ``--hosts h1,h2,...``
from the simulated dcgmi, as the real workload learns them from MPI):

- the node's own IMEX daemon not running -> ``IMEX Error : status is DOWN`` on every GPU (the test file's text);
- IMEX channel 0 missing in the node -> ``NCCL Error : unhandled system error (run with NCCL_DEBUG=INFO for
  details)`` on every GPU: NCCL's MNNVL check cannot allocate FABRIC memory without a channel and returns
  ncclSystemError (NVIDIA/nccl src/mnnvl.cc ``ncclMnnvlCheck``: "MNNVL (cliqueSize %d) is available but not working
  on this system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels)."), whose
  ncclGetErrorString text this is (NVIDIA/nccl src/init.cc);
- the IMEX daemon of another host of the run not answering on its port (``imexdomain``) -> ``NCCL Error : unhandled
  cuda error (run with NCCL_DEBUG=INFO for details)`` on every GPU: importing that host's fabric handles fails in
  NCCL's CUCHECK (ncclUnhandledCudaError; NVIDIA/nccl src/include/cudawrap.h);
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
NO_CHANNEL = "NCCL Error : unhandled system error (run with NCCL_DEBUG=INFO for details)"
LOST = "CUDA Error : cudaSetDevice returned unknown error"
GEMM = "cuBLAS Error : execution failed"
NODE_LINE = "PROVISION-SIM-NODE"
# imexdomain's problem kinds -> the text every GPU of the rank prints (the module docstring's sources).
IMEX_TEXTS = {"daemon_down": IMEX_DOWN, "channel_missing": NO_CHANNEL, "peer_unreachable": FABRIC}


def gpu_errors(model: dict, gpu: dict, imex: str | None = None) -> list[str]:
    """The errors mnubergemm prints for ``gpu`` of ``model``; ``imex`` the node's IMEX problem (imexdomain's kinds)."""
    errors = [IMEX_TEXTS[imex]] if imex else []
    if gpu.get("lost"):
        return errors + [LOST]
    fabric = gpu.get("fabric") or {}
    health = (fabric.get("health") or {}).get("summary", "Healthy")
    links = (gpu.get("nvlink") or {}).get("links") or []
    if fabric and (fabric.get("state") != "Completed" or fabric.get("status") != "Success" or health != "Healthy"
                   or not all(link.get("active", True) for link in links)) and FABRIC not in errors:
        errors.append(FABRIC)
    if gpu["index"] in set(simhw.faults(model).get("gpu_burn_faulty") or ()):
        errors.append(GEMM)
    return errors


def rank_lines(model: dict, host: str, rank: int, imex: str | None, driver: str) -> list[str]:
    """What one rank prints: an INFO line per GPU it drives, an error line per error, the node line."""
    gpus = simhw.visible_gpus(model)
    out = []
    for local, gpu in enumerate(gpus):
        glob = rank * len(gpus) + local
        out.append(f"MNUB [I] G: {glob} {host} L: {gpu['index']}  INFO  hosthash={zlib.crc32(host.encode())}")
        out += [f"MNUB [E] G: {glob} {host} L: {gpu['index']}  T:N {text}" for text in gpu_errors(model, gpu, imex)]
    return out + [f"{NODE_LINE} {host} driver={driver}"]


NO_CLUSTER = "00000000-0000-0000-0000-000000000000"  # nvmlGpuFabricInfo's cluster of a GPU in no NVLink domain


def imex_problem(model: dict, hosts: list[str] | None) -> str | None:
    """This node's IMEX problem (imexdomain's kind), None when it has none or is in no IMEX domain."""
    import imexdomain

    clusters = {(g.get("fabric") or {}).get("cluster_uuid") for g in model.get("gpus") or ()}
    in_domain = bool(clusters - {None, NO_CLUSTER})
    if not in_domain:  # a node of no multi-node NVLink domain: mndiag refuses its SKU before any rank runs
        return None
    found = imexdomain.mnnvl_problem(model, hosts)
    return found[0] if found else None


def main(argv: list[str]) -> int:
    model = simhw.load()
    simhw.hang_if_faulted("mnubergemm", model)
    host = model.get("hostname") or socket.gethostname()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    driver = (simhw.driver(model) or {}).get("version", "")
    hosts = argv[argv.index("--hosts") + 1].split(",") if "--hosts" in argv[:-1] else None
    sys.stdout.write("\n".join(rank_lines(model, host, rank, imex_problem(model, hosts), driver)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
