"""Command line of the simulated perftest tools (perftest's own option names and defaults).

Defaults from perftest_parameters.c: port 18515, 65536-byte messages, 5000 iterations,
TX depth 128, one QP. Unknown options are accepted and ignored, as a newer perftest's are.
"""
from __future__ import annotations

import argparse
import os
import socket


def parse(prog: str, argv: list[str]) -> argparse.Namespace:
    """Parsed perftest options; ``host`` is None in server mode."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("host", nargs="?")
    p.add_argument("-d", "--ib-dev")
    p.add_argument("-i", "--ib-port", type=int, default=1)
    p.add_argument("-p", "--port", type=int, default=18515)
    p.add_argument("-s", "--size", type=int, default=65536)
    p.add_argument("-n", "--iters", type=int, default=5000)
    p.add_argument("-D", "--duration", type=float)
    p.add_argument("-a", "--all", action="store_true")
    p.add_argument("-q", "--qp", type=int, default=1)
    p.add_argument("-t", "--tx-depth", type=int, default=128)
    p.add_argument("-x", "--gid-index", type=int)
    p.add_argument("-F", "--CPU-freq", action="store_true")
    p.add_argument("-R", "--rdma_cm", action="store_true")
    p.add_argument("--report_gbits", action="store_true")
    p.add_argument("--use_cuda", nargs="?", const=0, type=int)
    p.add_argument("--use_cuda_dmabuf", action="store_true")
    p.add_argument("--bind_source_ip")
    args, _unknown = p.parse_known_args(argv)
    return args


def bind_address(model: dict) -> str:
    """Address a server listens on: env ``PROVISION_SIM_ADDR``, else the node's own name.

    Simulated nodes share the host network, so a wildcard bind would collide; each node
    listens on the loopback address its hostname resolves to (127.0.0.1 as a last resort).
    """
    if os.environ.get("PROVISION_SIM_ADDR"):
        return os.environ["PROVISION_SIM_ADDR"]
    for name in (socket.gethostname(), model.get("hostname")):
        try:
            return socket.gethostbyname(name) if name else "127.0.0.1"
        except OSError:
            continue
    return "127.0.0.1"
