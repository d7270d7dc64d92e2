"""A host's stack fingerprint from what its run already read: no extra command on any node.

Fields (``provision.history.db.FINGERPRINT``), each a string or None when the run did not read it:
- driver, cuda, cudnn, nccl: the ``stack`` check's findings (driver_version; nvcc's release with
  its V number from the finding's detail; the cuDNN and NCCL packages' upstream versions);
- hca_fw: ``fw_ver`` of every CA in the ``ib_ports`` check's saved ``ibstat`` output, one value
  when all CAs agree, else ``mlx5_0=28.39.1002,mlx5_1=...``;
- kernel: ``uname -r`` as the burn-in read it (``HostRecord.kernel``).
"""
from __future__ import annotations

from typing import Callable

from provision.errors import ProvisionError
from provision.parsers import parse_tool
from provision.results.model import CheckResult, Run

Reader = Callable[[str, str], str]  # (raw path relative to the run, origin) -> text; RunDir.read


def of_run(run: Run, read: Reader | None) -> dict[str, dict[str, str | None]]:
    """{host: {field: value}} for every host of ``run``; ``read`` gives saved raw outputs (None: no
    firmware, as when the run folder is gone)."""
    out: dict[str, dict[str, str | None]] = {}
    for host, record in run.hosts.items():
        out[host] = {"driver": None, "cuda": None, "cudnn": None, "nccl": None, "hca_fw": None,
                     "kernel": record.kernel}
    for result in run.results:
        if result.check == "stack" and result.host in out:
            out[result.host].update(_stack(result))
        elif result.check == "ib_ports" and result.host in out and read is not None:
            out[result.host]["hca_fw"] = _firmware(result, read)
    return out


def _stack(result: CheckResult) -> dict[str, str]:
    found = {}
    for f in result.findings:
        if f.metric == "driver_version":
            found["driver"] = str(f.value)
        elif f.metric == "cuda_release" and f.value is not None:
            nvcc = f.detail.split(";")[0].removeprefix("nvcc ").strip() if f.detail.startswith("nvcc ") else ""
            found["cuda"] = f"{f.value} ({nvcc})" if nvcc else str(f.value)
        elif f.metric == "version" and f.device.startswith("libcudnn"):
            found["cudnn"] = str(f.value)
        elif f.metric == "version" and f.device.startswith("libnccl"):
            found["nccl"] = str(f.value)
    return found


def _firmware(result: CheckResult, read: Reader) -> str | None:
    """The CAs' firmware from the saved ibstat output; None when it is missing or unreadable."""
    if not result.raw:
        return None
    try:
        parsed = parse_tool("ibstat", read(result.raw[0].path, f"ib_ports on {result.host}"))
    except ProvisionError:
        return None
    per_ca = {p["ca"]: p["fw_ver"] for p in parsed.get("ports", []) if p.get("fw_ver")}
    if not per_ca:
        return None
    if len(set(per_ca.values())) == 1:
        return next(iter(per_ca.values()))
    return ",".join(f"{ca}={fw}" for ca, fw in sorted(per_ca.items()))


def changes(before: dict[str, str | None], now: dict[str, str | None]) -> list[str]:
    """What changed between two fingerprints, as 'driver 550.54.15 -> 550.90.07' (fields both read)."""
    return [f"{key} {before[key]} -> {now[key]}" for key in now
            if before.get(key) is not None and now[key] is not None and before[key] != now[key]]
