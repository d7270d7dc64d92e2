#!/usr/bin/env python3
"""Simulated ``numactl`` (numactl(8)): ``numactl --cpunodebind=N --membind=N COMMAND ARGS...`` checks the node
lists against the model's NUMA nodes and runs COMMAND in place of itself (execvp); the binding itself is not
simulated (the nodes share this machine's CPUs). Debian's numactl is not in the simulated nodes' base (the
burnin_tools role installs it on real sites).

Messages are numactl's own (numactl/numactl at 93c1fe5fabf38502ca315598bf74699c41300df9): a node out of range is
libnuma's warning "libnuma: Warning: node argument N is out of range" (libnuma.c numa_parse_nodestring, numa_warn),
then "<ARG> is invalid" on stdout and the usage text on stderr, exit 1 (numactl.c, --cpunodebind/--membind); a
command that cannot run: "numactl: execution of `CMD': <strerror>" (numactl.c main, complain). Options other than
these two (and their -N/-m forms) are accepted and ignored; ``--hardware``/``-H`` prints the model's nodes.
"""
from __future__ import annotations

import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

# The first lines of numactl.c usage(); the rest of the text follows on a real host.
USAGE = ("usage: numactl [--all | -a] [--balancing | -b]\n"
         "               [--interleave= | -i <nodes>] [--weighted-interleave= | -w <nodes>]\n"
         "               [--preferred= | -p <node>] [--preferred-many= | -P <nodes>]\n"
         "               [--physcpubind= | -C <cpus>] [--cpunodebind= | -N <nodes>]\n"
         "               [--membind= | -m <nodes>] [--localalloc | -l] command args ...\n")
BINDS = {"--cpunodebind": "N", "--membind": "m", "-N": "N", "-m": "m", "--cpubind": "N", "-c": "N"}
TAKES_VALUE = {"--interleave", "-i", "--preferred", "-p", "--physcpubind", "-C", "--weighted-interleave", "-w",
               "--preferred-many", "-P"}


def nodes_of(text: str, count: int) -> list[int] | None:
    """The node numbers of a numactl node list (``0``, ``0,1``, ``0-1``, ``all``); None when one is out of range,
    after libnuma's warning on stderr."""
    if text == "all":
        return list(range(count))
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            return None
        for node in range(first, last + 1):
            if not 0 <= node < count:
                sys.stderr.write(f"libnuma: Warning: node argument {node} is out of range\n\n")
                return None
            out.append(node)
    return out


def _split(argv: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(options with values, command) from numactl's argv: options stop at the first non-option."""
    opts, i = [], 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if not eq and (name in BINDS or name in TAKES_VALUE) and i + 1 < len(argv):
            value, i = argv[i + 1], i + 1
        opts.append((name, value))
        i += 1
    return opts, argv[i:]


def hardware(model: dict) -> str:
    """``numactl --hardware``'s first lines: the node count and each node's CPUs (smi_topo's Linux numbering)."""
    cpu = model.get("cpu") or {"numa_nodes": 1, "cores_per_numa": 1, "threads_per_core": 1}
    per, count, threads = int(cpu["cores_per_numa"]), int(cpu["numa_nodes"]), int(cpu["threads_per_core"])
    lines = [f"available: {count} nodes (0-{count - 1})"]
    for node in range(count):
        cpus = [t * per * count + node * per + c for t in range(threads) for c in range(per)]
        lines.append(f"node {node} cpus: " + " ".join(map(str, cpus)))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Run ``numactl ARGV``: exec the command, or exit 1 as numactl does."""
    model = simhw.load()
    count = int((model.get("cpu") or {}).get("numa_nodes", 1))
    opts, command = _split(argv)
    if any(name in ("--hardware", "-H") for name, _ in opts):
        sys.stdout.write(hardware(model))
        return 0
    for name, value in opts:
        if name in BINDS and nodes_of(value, count) is None:
            print(f"<{value}> is invalid", flush=True)
            sys.stderr.write(USAGE)
            return 1
    if not command:
        sys.stderr.write(USAGE)
        return 1
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"numactl: execution of `{command[0]}': {os.strerror(exc.errno or 2)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
