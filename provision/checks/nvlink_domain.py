"""nvlink_domain: NCCL all-reduce across one NVLink domain's trays over multi-node NVLink (MNNVL), nccl-tests.

One job per NVLink domain (``Check.per_nvlink_domain``: the hosts sharing the inventory variable
``provision_nvlink_domain``, ``Host.nvlink_domain``), only where the profile has one (trait ``nvlink_domain``:
GB200/GB300 NVL72). Launched as nccl_cluster launches (Open MPI's ``mpirun`` on the domain's first host, one rank
per node driving its GPUs, ``-g``), with NCCL's environment exported to every rank (``-x``) so that the traffic
must go over NVLink (NCCL environment variables, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html):
``NCCL_MNNVL_ENABLE=1`` (MNNVL forced on: NCCL fails rather than falls back when the domain cannot carry it),
``NCCL_IB_DISABLE=1`` (no InfiniBand: a slow or split domain cannot hide behind the HCAs),
``NCCL_CUMEM_ENABLE=1`` (MNNVL needs cuMem's fabric handles) and ``NVIDIA_IMEX_CHANNELS=0`` (the IMEX channel the
imex check requires); CoreWeave's GB200 NVL72 nccl-tests example sets the same (coreweave/nccl-tests,
slurm/nccl-test-distributed-gb200-nvl72-enroot.slurm).

Judged as nccl_cluster (``provision.checks.common.allreduce``, parser ``nccl-tests``): the out-of-place bus
bandwidth at the largest size (GB/s) against ``nvlink_domain.busbw_GBps``, a published full-rack figure (the profile
row's source), wrong results, out-of-bounds values and the rank count (nodes x GPUs). The device is the domain by
name, so a slow domain is named as such. It runs with the other static checks, before the cluster procedure's
InfiniBand tests (ib_pairs, nccl_cluster); a domain it failed keeps its hosts out of those tests
(``provision.engine.cluster``). A profile with no reference row errors (no invented threshold).

A job NCCL could not run over MNNVL exits non-zero with nccl-tests' failure report (``Test NCCL failure ...
'ERROR / LAST ERROR'``): that is the domain failing, judged from the report (``Step.exit_judged``), not a tool that
could not run. A report naming IMEX (NCCL's MNNVL check: "Check the IMEX channel configuration" or "Check the IMEX
configuration", NVIDIA/nccl src/mnnvl.cc; or the FABRIC import refused, CUDA's "operation not permitted") fails
NVLINK_DOMAIN_IMEX_FAILED, any other NVLINK_DOMAIN_MNNVL_FAILED; the report's text is the finding's value. A
non-zero exit with neither a report nor result rows is still an error (no rows to judge).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Scope, Step
from provision.checks.common.allreduce import SWEEP, allreduce
from provision.checks.common.nvlink_domains import domain_name

CHECK_ID = "nvlink_domain"
# What every rank's NCCL is given (module docstring: NCCL's env documentation).
NCCL_ENV = ("NCCL_MNNVL_ENABLE=1", "NCCL_IB_DISABLE=1", "NCCL_CUMEM_ENABLE=1", "NVIDIA_IMEX_CHANNELS=0")
# Words of a failure report that put it on IMEX (module docstring): NCCL's MNNVL check names IMEX; CUDA's
# CUDA_ERROR_NOT_PERMITTED text is what a refused FABRIC import gives.
IMEX_WORDS = ("IMEX", "operation not permitted")


# The sweep of a profile with no NVLink domain (the engine skips the check there before it runs; ``steps`` still
# answers, as every check's does for any profile): the reference row's own sizes.
NO_DOMAIN_SWEEP = {"min_bytes": 536870912, "max_bytes": 8589934592, "step_factor": 2, "iters": 20, "warmup_iters": 5}


def steps(profile, group) -> list[Step]:
    # A domain's profile without its reference row is an error before anything runs: no invented threshold.
    p = profile.required_reference(CHECK_ID, "busbw_GBps").params if profile.has("nvlink_domain") else NO_DOMAIN_SWEEP
    hosts = ",".join(f"{h.address}:1" for h in group.hosts)
    exported = [a for setting in NCCL_ENV for a in ("-x", setting)]
    argv = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(len(group.hosts)), "--host", hosts,
            *exported, "all_reduce_perf", "-b", str(p["min_bytes"]), "-e", str(p["max_bytes"]),
            "-f", str(p["step_factor"]), "-g", str(profile.gpu.count), "-c", "1", "-n", str(p["iters"]),
            "-w", str(p["warmup_iters"])]
    return [Step(f"{len(group.hosts)}-nodes", argv, parser="nccl-tests", exit_judged=True)]


def judge(ctx: Context) -> list[Finding]:
    (result,), profile, hosts = ctx.parsed.values(), ctx.profile, ctx.hosts
    ref = profile.required_reference(CHECK_ID, "busbw_GBps")
    device = f"{domain_name(hosts)} ({len(hosts)} trays x {profile.gpu.count} GPUs)"
    if result.get("failures"):
        return [_failed(device, failure) for failure in result["failures"]]
    return allreduce(result, device, len(hosts) * profile.gpu.count, ref, "NVLINK_DOMAIN_SLOW")


def _failed(device: str, failure: dict) -> Finding:
    """One rank's failure report as a failing finding (the module docstring's rule)."""
    fault = "NVLINK_DOMAIN_IMEX_FAILED" if any(w in failure["text"] for w in IMEX_WORDS) \
        else "NVLINK_DOMAIN_MNNVL_FAILED"
    return Finding(device=device, metric="mnnvl_run", value=failure["text"], ok=False, expected="completed",
                   fault=fault, action=faults.action(fault), host=failure.get("host") or "",
                   detail=f"{failure.get('host') or 'a rank'}: Test {failure['kind']} failure")


PARAMS = {
    "busbw_GBps": {
        "required": ["min_bytes", "max_bytes", "step_factor", "iters", "warmup_iters", "gpus", "mnnvl"],
        "properties": {
            **SWEEP,
            "gpus": {"type": "integer", "minimum": 2},  # the GPUs the published figure was measured over
            "mnnvl": {"const": "on"},
        },
    },
}


# The hardware peak each metric is bounded by (provision.checks.plausible): a ring's bus bandwidth over NVLink.
PEAKS = {"busbw_GBps": "nvlink_busbw"}


CHECK = Check(id=CHECK_ID, tool="mpirun", steps=steps, judge=judge, order=110,
              placement=Placement(scope=Scope.GROUP, needs=("gpu", "nvlink_domain"), per_nvlink_domain=True),
              budget=Budget(loads="gpu", timeout_s=300, sets=("deep",)),
              data=Data(metrics={"busbw_GBps": "GB/s", "mnnvl_run": ""}, params=PARAMS, peaks=PEAKS))
