"""topology: GPU-GPU NVLink bonding and GPU-NIC PCIe affinity match the board's design.

Tool: ``nvidia-smi topo -m`` (parser ``provision.parsers.smi_topo``, tested on the layouts of
drivers 418 (mlx5_N columns, CPU Affinity), 450+ (NUMA Affinity) and 530+ (NICn columns,
GPU NUMA ID, NIC Legend), tab-separated or expanded to spaces). Cells are link types, no units.

Rules (profile ``topology``; null = not judged):
- every GPU pair's cell equals ``topology.gpu_gpu`` ("NV18": all 18 NVLink4 links bonded through
  NVSwitch on HGX H100). A pair is named "GPU0-GPU3"; fault TOPO_NVLINK.
- each GPU's best NIC cell is ``topology.gpu_nearest_nic`` or closer, ranked as nvidia-smi's
  legend orders paths: PIX < PXB < PHB < NODE < SYS (SOC is the pre-2017 name of SYS). A GPU
  is named "GPU2"; fault TOPO_NIC_AFFINITY. Source of both rules: the DGX H100/A100 user
  guides' system topology (profile comments).
- the number of GPU rows equals ``gpu.count``.
The GPU-GPU rule needs NVLink (rule ``gpu_gpu`` needs ``nvlink``: a PCIe board's pairs cross
switches and sockets), the NIC rule HCAs (``nearest_nic`` needs ``hca``).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.common.topo_paths import PATH_RANK
from provision.checks.rules import expect


def steps(profile, host) -> list[Step]:
    return [Step("", ["nvidia-smi", "topo", "-m"], parser="nvidia-smi-topo")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    topo, want = parsed[""], profile.topology
    gpus = sorted((name for name in topo["matrix"] if name.startswith("GPU")), key=lambda n: int(n[3:]))
    findings = [expect("node", "gpu_count", len(gpus), profile.gpu.count, "GPU_MISSING")]
    if want.gpu_gpu and CHECK.applies(profile, "gpu_gpu"):
        findings += [expect(f"{a}-{b}", "gpu_gpu", topo["matrix"][a].get(b), want.gpu_gpu, "TOPO_NVLINK")
                     for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    if want.gpu_nearest_nic and CHECK.applies(profile, "nearest_nic"):
        findings += [_nearest_nic(gpu, topo, want.gpu_nearest_nic) for gpu in gpus]
    return findings


def _nearest_nic(gpu: str, topo: dict, expected: str) -> Finding:
    """The GPU's closest NIC against the profile's path type (that path or a closer one)."""
    row = topo["matrix"][gpu]
    nics = [(PATH_RANK.get(cell, len(PATH_RANK)), column, cell) for column, cell in row.items()
            if column.startswith(("NIC", "mlx"))]
    fault = faults.catalogue()["TOPO_NIC_AFFINITY"]
    if not nics:
        return Finding(device=gpu, metric="nearest_nic", value=None, ok=False, expected=f"{expected} or closer",
                       fault=fault.code, action=fault.action, detail="no NIC in the matrix")
    rank, column, cell = min(nics)
    name = topo["nic_legend"].get(column)
    return Finding(device=gpu, metric="nearest_nic", value=cell, ok=rank <= PATH_RANK.get(expected, -1),
                   expected=f"{expected} or closer", fault=fault.code, action=fault.action,
                   detail=f"via {column}" + (f" ({name})" if name else ""))


CHECK = Check(id="topology", tool="nvidia-smi topo -m", steps=steps, judge=judge, order=42,
              placement=Placement(needs=("gpu",), rules={"gpu_gpu": ("nvlink",), "nearest_nic": ("hca",)}),
              budget=Budget(timeout_s=30, sets=("quick", "deep")),
              data=Data(metrics={"gpu_count": ""}))
