"""perftest's ib_write_bw run over every HCA of a node and judged per HCA: the node-local ib_write_bw check runs it
in loopback, ib_pairs from one node to another, both against ``ib_write_bw.bw_avg_Gbps``.
"""
from __future__ import annotations

from provision.checks.base import Finding, Ready, Step
from provision.checks.rules import measured
from provision.errors import ParseError
from provision.fabric.model import hca_names

BASE_PORT = 18515  # perftest's default TCP port for the connection exchange


def perftest_steps(profile, server, on: int = 0, server_on: int = 0) -> list[Step]:
    """One ib_write_bw step per HCA: the server runs on job host ``server_on``, the client on
    ``on`` connects to ``server``'s address; each HCA on its own TCP port. With the reference's ``gpudirect: on``
    both sides' buffers are in GPU memory (``--use_cuda``, the GPU beside the HCA in the board's design: HCA i with
    GPU i, as DGX/HGX boards pair them; ``--use_cuda_dmabuf`` where ``path`` is ``dmabuf``): ib_pairs then tests
    GPUDirect RDMA across the fabric."""
    params = profile.required_reference("ib_write_bw", "bw_avg_Gbps").params
    out = []
    for i, dev in enumerate(hca_names(profile)):
        dmabuf = ["--use_cuda_dmabuf"] if params.get("path") == "dmabuf" else []
        cuda = [f"--use_cuda={i % max(1, profile.gpu.count)}", *dmabuf] if params.get("gpudirect") == "on" else []
        common = ["ib_write_bw", "-d", dev, *cuda, "-s", str(params["msg_size_bytes"]),
                  "-D", str(params["duration_s"]), "--report_gbits", "-F", "-p", str(BASE_PORT + i)]
        # perftest's server prints this banner when it waits for its client (perftest README, "Running Tests")
        ready = Ready(line="Waiting for client to connect", port=BASE_PORT + i)
        out.append(Step(dev, common + [server.address], parser="perftest", server=common, ready=ready, on=on,
                        server_on=server_on))
    return out


def bandwidth(parsed: dict, profile, fault: str) -> list[Finding]:
    """Per HCA (step key) its average bandwidth against ``ib_write_bw.bw_avg_Gbps``; ``fault`` the
    catalogue code of a shortfall. Raises ParseError when a step printed no average."""
    ref = profile.required_reference("ib_write_bw", "bw_avg_Gbps")
    findings = []
    for dev, result in parsed.items():
        if result.get("bw_avg_Gbps") is None:
            raise ParseError(f"{dev}: perftest printed no average bandwidth")
        findings.append(measured(f"{dev}", "bw_avg_Gbps", result["bw_avg_Gbps"], ref, fault))
    return findings
