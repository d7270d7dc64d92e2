"""gpudirect: GPUDirect RDMA of every HCA with its nearest GPU: ib_write_bw from and to GPU memory, the path NCCL takes
between a GPU and the fabric.

Tool: perftest ``ib_write_bw`` built with CUDA (``env CUDA_DEVICE_ORDER=PCI_BUS_ID``: CUDA numbers the GPUs as
nvidia-smi does), server then client in loopback through the node's address, one step
per HCA (key ``mlx5_N``, its own TCP port), buffers in GPU memory (``--use_cuda=<gpu>``; ``--use_cuda_dmabuf`` where
the profile's path is ``dmabuf``), under ``numactl --cpunodebind=<n> --membind=<n>`` on the GPU's NUMA node, as
aznhc's azure_ib_write_bw_gdr.nhc runs it (8 MiB messages, numactl on the HCA's NUMA node). Parser
``provision.parsers.perftest`` (its CUDA lines and perftest's failure texts).

Each HCA's GPU is its nearest one in this run's ``nvidia-smi topo -m`` of the node (``Check.uses`` topology: the
GPU whose cell to that NIC is the closest path, PIX < PXB < PHB < NODE < SYS; on a tie one no earlier HCA took, then
the lowest index, so that two GPUs and two HCAs on one switch pair up one to one), and its
NUMA node that GPU's "NUMA Affinity". Bandwidth in Gb/s (``bw_avg_Gbps``) against the profile's
``gpudirect.bw_avg_Gbps`` (GPUDIRECT_SLOW); a run in which perftest could not register or allocate the GPU buffer
(nvidia-peermem not loaded, no dma-buf support: perftest's "Couldn't allocate MR", "Couldn't create IB resources")
fails GPUDIRECT_UNAVAILABLE, since NCCL on that node falls back to staging through host memory; a run that printed
no CUDA lines measured host memory, not GPUDirect, and is an error. Findings name the HCA, its GPU and the path:
``mlx5_3 with GPU3 (dmabuf)``.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Ready, Step
from provision.checks.rules import measured
from provision.checks.common.topo_paths import PATH_RANK
from provision.checks import faults
from provision.errors import ParseError
from provision.fabric.model import hca_names

BASE_PORT = 18615  # ib_write_bw's ports start at 18515 (perftest's default); these stay clear of them
UNAVAILABLE, SLOW = "GPUDIRECT_UNAVAILABLE", "GPUDIRECT_SLOW"
CUDA_ORDER = "CUDA_DEVICE_ORDER=PCI_BUS_ID"  # env(1)'s NAME=VALUE


def nearest_gpus(profile, topo: dict | None) -> dict[str, tuple[int, str | None]]:
    """HCA name -> (its nearest GPU's index, that GPU's NUMA node or None), from ``nvidia-smi topo -m``'s parse
    result; without one (a re-evaluation, a plan), the board's design: HCA i beside GPU i (DGX/HGX layouts)."""
    names = hca_names(profile)
    count = max(1, profile.gpu.count)
    if topo is None:
        return {dev: (i % count, None) for i, dev in enumerate(names)}
    column_of = {device: column for column, device in (topo.get("nic_legend") or {}).items()}
    gpus = sorted((row for row in topo["matrix"] if row.startswith("GPU")), key=lambda r: int(r[3:]))
    out: dict[str, tuple[int, str | None]] = {}
    for dev in names:
        column = column_of.get(dev, dev)  # drivers before 530 name the NIC columns by device (mlx5_0)
        taken = {gpu for gpu, _ in out.values()}
        # nearest first; among GPUs as near, one no HCA has yet (two GPUs and two HCAs on one switch pair up 1:1)
        ranked = [(PATH_RANK.get(topo["matrix"][g].get(column, ""), len(PATH_RANK)), int(g[3:]) in taken, int(g[3:]))
                  for g in gpus]
        if not ranked or min(ranked)[0] == len(PATH_RANK):
            raise ParseError(f"nvidia-smi topo -m shows no path from any GPU to {dev}")
        gpu = min(ranked)[2]
        numa = ((topo.get("affinity") or {}).get(f"GPU{gpu}") or {}).get("numa_affinity")
        out[dev] = (gpu, numa if numa not in (None, "", "N/A") else None)
    return out


def steps(profile, host, seen: dict | None = None) -> list[Step]:
    params = profile.required_reference("gpudirect", "bw_avg_Gbps").params
    topo = (seen or {}).get("topology", {}).get("")
    out = []
    for i, (dev, (gpu, numa)) in enumerate(nearest_gpus(profile, topo).items()):
        bind = ["numactl", f"--cpunodebind={numa}", f"--membind={numa}"] if numa is not None else []
        # CUDA numbers GPUs fastest first unless told PCI order, nvidia-smi (and topo -m) always by PCI bus id: the
        # same order for --use_cuda=N (CUDA C Programming Guide, "CUDA Environment Variables": CUDA_DEVICE_ORDER).
        bind = ["env", CUDA_ORDER, *bind]
        cuda = [f"--use_cuda={gpu}"] + (["--use_cuda_dmabuf"] if params["path"] == "dmabuf" else [])
        common = [*bind, "ib_write_bw", "-d", dev, *cuda, "-s", str(params["msg_size_bytes"]),
                  "-D", str(params["duration_s"]), "--report_gbits", "-F", "-p", str(BASE_PORT + i)]
        ready = Ready(line="Waiting for client to connect", port=BASE_PORT + i)
        out.append(Step(dev, common + [host.address], parser="perftest", server=common, ready=ready,
                        exit_judged=True))
    return out


def judge(ctx: Context) -> list[Finding]:
    ref = ctx.profile.required_reference("gpudirect", "bw_avg_Gbps")
    path = ref.params["path"]
    findings = []
    for dev, result in ctx.parsed.items():
        cuda = result.get("cuda")
        gpu = f"GPU{cuda['device']}" if cuda and cuda.get("device") is not None else "its GPU"
        device = f"{dev} with {gpu} ({path})"
        if result.get("errors") and result.get("bw_avg_Gbps") is None:
            findings.append(Finding(device=device, metric="bw_avg_Gbps", value=None, ok=False, unit="Gb/s",
                                    reference=ref, fault=UNAVAILABLE, action=faults.action(UNAVAILABLE),
                                    detail="perftest: " + "; ".join(result["errors"][:3])))
            continue
        if not cuda:
            raise ParseError(f"{dev}: ib_write_bw printed no CUDA lines: it measured host memory, not GPUDirect "
                             "(a perftest built without CUDA?)")
        if path == "dmabuf" and not cuda.get("dmabuf"):  # the path NCCL will take must be the one measured
            raise ParseError(f"{dev}: ib_write_bw did not register the GPU buffer through dma-buf (no 'using DMA-BUF' "
                             "line): the dmabuf path was not the one measured")
        if result.get("bw_avg_Gbps") is None:
            raise ParseError(f"{dev}: perftest printed no average bandwidth")
        findings.append(measured(device, "bw_avg_Gbps", result["bw_avg_Gbps"], ref, SLOW))
    return findings


PARAMS = {
    "bw_avg_Gbps": {
        "required": ["msg_size_bytes", "duration_s", "path"],
        "properties": {
            "msg_size_bytes": {"type": "integer", "minimum": 1},
            "duration_s": {"type": "integer", "minimum": 1},
            # How the site's NCCL registers GPU memory with the HCA: the nvidia-peermem module, or dma-buf (the open
            # GPU kernel modules on Linux 5.12+; NCCL_DMABUF_ENABLE, NCCL environment variables documentation).
            "path": {"enum": ["peermem", "dmabuf"]},
        },
    },
}

CHECK = Check(id="gpudirect", tool="ib_write_bw --use_cuda", steps=steps, judge=judge, order=55,
              placement=Placement(needs=("gpu", "hca"), uses=("topology",)),
              budget=Budget(loads="gpu", timeout_s=30, sets=("quick", "deep")),
              data=Data(metrics={"bw_avg_Gbps": "Gb/s"}, params=PARAMS))
