#!/usr/bin/env python3
"""Simulated ``ib_write_bw`` (perftest): server without a host argument, client with one.

The two sides meet over TCP (``-p``, default 18515) like perftest's out-of-band exchange and
swap one JSON line describing their HCA; the client computes the result and sends it back so
both print the same table (as real perftest does). Bandwidth, in Gb/s:
``performance.ib_write_bw_Gbps`` x min(1, slower port rate / nominal rate) x the slower
side's ``faults.slow_hca`` factor x what the fabric route from client to server carries
(``fabricsim.path_factor``: a degraded or flapping cable on it), capped by each side's usable
PCIe bandwidth (and the GPU's with ``--use_cuda``), with run-to-run noise. With ``--use_cuda=N`` each side
first prints perftest's CUDA setup once the two have met (``perftest_cuda``), and fails there as perftest does
(no nvidia_peermem without ``--use_cuda_dmabuf``: the MR cannot be registered), exit 1; the other side then
fails its exchange (" Failed to exchange data between server and clients"), exit 1. ``MB/sec`` is 10^6 bytes/s, as
samples/CONTRACT.md fixes it; the real capture ib_write_bw_loopback_8M_mbsec agrees (its
24056.72 MB/sec on HDR 200 is 96% of line rate read as 10^6, above line rate read as 2^20). Layout from
ib_write_bw_cx7_ndr_gbits and ib_write_bw_loopback_8M_mbsec.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import time

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import fabricsim  # noqa: E402
import perftest_cli  # noqa: E402
import perftest_cuda  # noqa: E402
import simhw  # noqa: E402

RULE = "-" * 87
# Message size (bytes) at which the profile's healthy figure was measured, and the size at
# which half of it is reached (RDMA write BW saturates from ~16 KiB on ConnectX-6/7).
REFERENCE_SIZE = 65536
HALF_BW_SIZE = 1024
# Wall-clock cap of a simulated run in seconds: -D is honoured in the report, not in time.
MAX_SLEEP_S = 0.3
CONNECT_TIMEOUT_S = 5.0


def local_side(model: dict, args) -> tuple[dict | None, str | None]:
    """This node's side of the test, or an error message as perftest prints it."""
    hcas = sorted(model.get("hcas", []), key=lambda h: h["name"])
    if not hcas:
        return None, " Did not detect devices \n If device exists, check if driver is up\n"
    hca = simhw.hca(model, args.ib_dev) if args.ib_dev else hcas[0]
    if hca is None:
        return None, f"IB device {args.ib_dev} not found\n Unable to find the Infiniband/RoCE device\n"
    if hca.get("state") != "Active":
        return None, (f" Port number {args.ib_port} state is {hca.get('state')}\n Couldn't set the link layer\n"
                      " Couldn't get context for the device\n")
    slow = float((simhw.faults(model).get("slow_hca") or {}).get(hca["name"], 1.0))
    caps = [simhw.pcie_Gbps(hca["pcie"]["gen_current"], hca["pcie"]["width_current"])]
    gpu = _cuda_gpu(model, args.use_cuda)
    if gpu is not None:
        caps.append(simhw.pcie_Gbps(gpu["pcie"]["gen_current"], gpu["pcie"]["width_current"]))
    return {"device": hca["name"], "host": model.get("hostname"), "lid": hca["lid"],
            "rate_Gbps": hca["rate_Gbps"], "slow": slow, "pcie_cap_Gbps": min(caps),
            "link_layer": hca.get("link_layer", "InfiniBand"), "mtu": int(hca.get("active_mtu", 4096)),
            "qpn": secrets.randbelow(0x10000), "psn": secrets.randbelow(0x1000000)}, None


def _cuda_gpu(model: dict, use_cuda) -> dict | None:
    """The GPU whose memory ``--use_cuda=N`` targets, None without GPUDirect."""
    if use_cuda is None:
        return None
    gpus = simhw.visible_gpus(model)
    return gpus[int(use_cuda)] if int(use_cuda) < len(gpus) else None


def bandwidth_Gbps(model: dict, a: dict, b: dict, size: int) -> float:
    """Average RDMA write bandwidth between sides ``a`` and ``b`` for ``size``-byte messages."""
    perf = model.get("performance") or {}
    nominal = float((model.get("nominal") or {}).get("hca_rate_Gbps") or max(a["rate_Gbps"], b["rate_Gbps"]))
    bw = float(perf.get("ib_write_bw_Gbps", 0.95 * nominal))
    bw *= min(1.0, min(a["rate_Gbps"], b["rate_Gbps"]) / nominal) * min(a["slow"], b["slow"])
    bw *= route_factor(a, b)
    curve = (size / (size + HALF_BW_SIZE)) / (REFERENCE_SIZE / (REFERENCE_SIZE + HALF_BW_SIZE))
    bw = min(bw * min(1.0, curve), a["pcie_cap_Gbps"], b["pcie_cap_Gbps"])
    return simhw.noisy(bw, simhw.noise_pct(model))


def route_factor(client: dict, server: dict) -> float:
    """What the fabric's route from the client's HCA to the server's carries (1.0 off-fabric)."""
    src, dst = (client.get("host"), client["device"]), (server.get("host"), server["device"])
    plane = fabricsim.plane_of(fabricsim.load(), *src)
    if plane is None or dst not in plane.cas:
        return 1.0
    return fabricsim.path_factor(plane, src, dst)


def header(args, side: dict, server: bool) -> str:
    """perftest's parameter banner."""
    link = "IB" if side["link_layer"] == "InfiniBand" else "Ethernet"
    lines = [RULE, "                    RDMA_Write BW Test",
             f" Dual-port       : OFF\t\tDevice         : {side['device']}",
             f" Number of qps   : {args.qp}\t\tTransport type : IB",
             " Connection type : RC\t\tUsing SRQ      : OFF",
             " PCIe relax order: ON\t\tLock-free      : OFF",
             " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF"]
    lines += [] if server else [f" TX depth        : {args.tx_depth}"]
    lines += [" CQ Moderation   : 1", " CQE Poll Batch  : Dynamic", f" Mtu             : {side.get('mtu', 4096)}[B]",
              f" Link type       : {link}", " Max inline data : 0[B]", " rdma_cm QPs\t : OFF",
              " Data ex. method : Ethernet", RULE]
    return "\n".join(lines) + "\n"


def addresses(local: dict, remote: dict) -> str:
    """The ``local address`` / ``remote address`` lines."""
    def line(kind: str, side: dict) -> str:
        return (f" {kind} address: LID {side['lid']:#04x} QPN {side['qpn']:#06x} PSN {side['psn']:#08x} "
                f"RKey 0x1fff00 VAddr 0x{(secrets.randbits(44) | 0x7e0000000000) & ~0xfff:014x}")
    return line("local", local) + "\n" + line("remote", remote) + "\n" + RULE + "\n"


def results(args, rows: list[dict]) -> str:
    """The result table; rows hold ``size``, ``iters``, ``peak``, ``avg`` (in the printed unit), ``rate``."""
    unit = "Gb/sec" if args.report_gbits else "MB/sec"
    lines = [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"]
    for r in rows:
        lines.append(f" {r['size']:<7}    {r['iters']:<7}          {r['peak']:<7.2f}            "
                     f"{r['avg']:<7.2f}\t\t   {r['rate']:<7.6f}")
    return "\n".join(lines + [RULE]) + "\n"


def measure(model: dict, args, local: dict, remote: dict) -> list[dict]:
    """Result rows for every message size of the run."""
    sizes = [2 ** k for k in range(1, 24)] if args.all else [args.size]
    rows = []
    for size in sizes:
        gbps = bandwidth_Gbps(model, local, remote, size)
        iters = int(gbps * 1e9 / 8 * args.duration / size) if args.duration else args.iters
        shown = gbps if args.report_gbits else gbps * 1e9 / 8 / 1e6
        peak = 0.0 if args.duration else shown * simhw.noisy(1.0002, 0.01)
        rows.append({"size": size, "iters": iters, "peak": peak, "avg": shown, "rate": gbps * 1e9 / 8 / size / 1e6})
    time.sleep(min(MAX_SLEEP_S, float(args.duration or 0.05)))
    return rows


def serve(model: dict, args, local: dict) -> int:
    """Server side: wait for one client, exchange, print the client's results."""
    addr = args.bind_source_ip or perftest_cli.bind_address(model)
    with socket.create_server((addr, args.port)) as srv:
        print("\n************************************\n* Waiting for client to connect... *\n"
              "************************************", flush=True)
        conn, _peer = srv.accept()
        with conn, conn.makefile("rw") as stream:
            if not _cuda(model, args):  # perftest sets up its GPU buffer once the client is there
                return 1
            hello = stream.readline()
            if not hello:
                sys.stderr.write(" Failed to exchange data between server and clients\n")
                return 1
            remote = json.loads(hello)
            stream.write(json.dumps(local) + "\n")
            stream.flush()
            sys.stdout.write(header(args, local, True) + addresses(local, remote))
            rows = json.loads(stream.readline() or "null")
    if not rows:
        sys.stderr.write(" Failed to exchange data between server and clients\n")
        return 1
    sys.stdout.write(results(args, rows) + (perftest_cuda.finish() if args.use_cuda is not None else ""))
    return 0


def _cuda(model: dict, args) -> bool:
    """perftest's CUDA setup with ``--use_cuda`` (perftest_cuda): prints it; False when it failed."""
    if args.use_cuda is None:
        return True
    out, err, ok = perftest_cuda.start(model, args)
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return ok


def connect(model: dict, args, local: dict) -> int:
    """Client side: connect to the server, exchange, measure, print and send the results."""
    try:
        sock = socket.create_connection((args.host, args.port), timeout=CONNECT_TIMEOUT_S)
    except OSError:
        sys.stderr.write(f"Couldn't connect to {args.host}:{args.port}\n Unable to open file descriptor for "
                         "socket connection Unable to init the socket connection\n")
        return 1
    sock.settimeout(None)
    with sock, sock.makefile("rw") as stream:
        if not _cuda(model, args):
            return 1
        sys.stdout.write(header(args, local, False))
        try:
            stream.write(json.dumps(local) + "\n")
            stream.flush()
            hello = stream.readline()
        except OSError:
            hello = ""
        if not hello:  # the server failed to set up (its own message is on its side)
            sys.stderr.write(" Failed to exchange data between server and clients\n")
            return 1
        remote = json.loads(hello)
        sys.stdout.write(addresses(local, remote))
        rows = measure(model, args, local, remote)
        stream.write(json.dumps(rows) + "\n")
        stream.flush()
    sys.stdout.write(results(args, rows) + (perftest_cuda.finish() if args.use_cuda is not None else ""))
    return 0


def main(argv: list[str]) -> int:
    """Run ``ib_write_bw ARGV``; returns the exit status."""
    args = perftest_cli.parse("ib_write_bw", argv)
    model = simhw.load()
    simhw.hang_if_faulted("ib_write_bw", model)
    local, error = local_side(model, args)
    if error or local is None:
        sys.stderr.write(error or "")
        return 1
    return connect(model, args, local) if args.host else serve(model, args, local)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
