"""Which GPUs a job holds, and whether any process uses a GPU now, so that a check that loads the GPUs never runs
under a job (``provision.health.modes``).

Sources: Slurm sets ``SLURM_JOB_GPUS`` (the GPU indices allocated to the job, comma-separated) in the Prolog's and
Epilog's environment (https://slurm.schedmd.com/prolog_epilog.html, "SLURM_JOB_GPUS"); nvidia-smi's
``--query-compute-apps=gpu_bus_id,pid,process_name --format=csv,noheader`` lists every compute process on every GPU,
one ``<bus id>, <pid>, <name>`` line each, nothing when there is none (``nvidia-smi --help-query-compute-apps``).
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.errors import ParseError

QUERY = ["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,process_name", "--format=csv,noheader"]
NO_PROCESS = ("No running processes found", "no running processes found")  # older drivers' words for none


@dataclass(frozen=True)
class ComputeProcess:
    bus_id: str
    pid: int
    name: str


def job_gpus(environ) -> tuple[int, ...]:
    """The GPU indices of ``SLURM_JOB_GPUS`` in ``environ`` (() when unset or empty). Raises ParseError naming the
    variable for a value that is not a list of indices."""
    text = (environ.get("SLURM_JOB_GPUS") or "").strip()
    try:
        return tuple(int(part) for part in text.split(",") if part.strip()) if text else ()
    except ValueError:
        raise ParseError(f"SLURM_JOB_GPUS={text[:60]!r}: not a comma-separated list of GPU indices") from None


def compute_processes(text: str) -> list[ComputeProcess]:
    """The processes of QUERY's output. Raises ParseError naming the line for one that is not
    ``<bus id>, <pid>, <name>``."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(NO_PROCESS):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not parts[1].isdigit():
            raise ParseError(f"nvidia-smi --query-compute-apps: line {line[:80]!r} is not '<bus id>, <pid>, <name>'")
        found.append(ComputeProcess(parts[0], int(parts[1]), parts[2]))
    return found
