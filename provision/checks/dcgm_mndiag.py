"""dcgm_mndiag: DCGM's multi-node diagnostic (mnubergemm, an MPI GEMM stress over the NVLink domain) passes on every
GPU of every tray of the domain.

Tool: ``dcgmi mndiag --hostList "h1;h2;..." -r mnubergemm -p mnubergemm.time_to_run=S -j`` on the domain's first
host (the head node, whose host engine coordinates the others'), parser ``provision.parsers.dcgmi_mndiag`` (DCGM
4.6's table and JSON, read from NVIDIA/DCGM 72fa3fe ``dcgmi/MnDiag.cpp``; no real capture is published). Limits and
requirements, NVIDIA/DCGM 72fa3fe and NVIDIA's "DCGM Multi-Node Diagnostics" guide
(https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-multinode-diagnostics.html):

- DCGM 4.3 onwards; the products GB200 NVL (PCI device 2941) and GB300 NVL (31c2) only
  (``modules/mndiag/DcgmMnDiagManager.cpp``): the check needs the ``mndiag`` trait (``provision.profiles``) and the
  ``imex`` one, and is skipped saying so elsewhere;
- at most 72 hosts in one request (``DCGM_MAX_NUM_HOSTS`` in ``dcgmlib/dcgm_structs.h``; dcgmi refuses more,
  ``dcgmi/CommandLineParser.cpp``): a larger domain is an error naming the limit before anything runs;
- Open MPI and passwordless SSH between the hosts, the same driver on each, the host engines reachable, the GPUs
  drained (the guide's prerequisites), and IMEX up (the workload's "IMEX Error : status is DOWN").
- ``mnubergemm.time_to_run`` defaults to 3600 s (``modules/mndiag/dcgm_mndiag_structs.hpp``); the acceptance set
  runs it for that long (``TIME_TO_RUN_S``).

The check is optional: only the ``acceptance`` set (or ``--checks dcgm_mndiag``) runs it. It runs once per NVLink
domain (``per_nvlink_domain``: a group job over the hosts sharing ``provision_nvlink_domain``), with the static checks
before the cluster procedure, so a domain it fails keeps its trays out of the InfiniBand tests.

Rules: each host of the job reports the profile's GPU count (MNDIAG_HOST_MISSING when it is absent from the results,
GPU_MISSING when fewer GPUs); each GPU's result is Pass (its errors as the detail: IMEX_DAEMON_DOWN when the workload
says IMEX is down, else MNDIAG_GPU_FAILED); a test failed with no GPU named (mpirun's exit) is MNDIAG_MPI_FAILED.
A run that could not complete (dcgmi's "Unable to complete multi-node diagnostic") is an error.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Check, Context, Finding, Scope, Step
from provision.errors import ParseError, ProfileError

MAX_HOSTS = 72  # DCGM_MAX_NUM_HOSTS, NVIDIA/DCGM dcgmlib/dcgm_structs.h (72fa3fe)
LIMIT_SOURCE = "DCGM_MAX_NUM_HOSTS in NVIDIA/DCGM dcgmlib/dcgm_structs.h (DCGM 4.6, commit 72fa3fe)"
TIME_TO_RUN_S = 3600  # mnubergemm's default time_to_run, modules/mndiag/dcgm_mndiag_structs.hpp
PASS = "Pass"
IMEX_DOWN = "IMEX Error"  # "IMEX Error : status is DOWN" (modules/mndiag/tests/MnDiagMpiMnubergemmRunnerTests.cpp)


def steps(profile, group) -> list[Step]:
    hosts = group.hosts
    if len(hosts) > MAX_HOSTS:
        raise ProfileError(f"dcgm_mndiag: {len(hosts)} hosts in one NVLink domain ({hosts[0].name} ... "
                           f"{hosts[-1].name}); dcgmi mndiag accepts at most {MAX_HOSTS} ({LIMIT_SOURCE})")
    argv = ["dcgmi", "mndiag", "--hostList", ";".join(h.address for h in hosts), "-r", "mnubergemm",
            "-p", f"mnubergemm.time_to_run={TIME_TO_RUN_S}", "-j"]
    return [Step(f"{len(hosts)}-hosts", argv, parser="dcgmi-mndiag")]


def judge(ctx: Context) -> list[Finding]:
    (out,) = ctx.parsed.values()
    if out["runtime_error"]:
        raise ParseError(f"dcgmi mndiag did not complete: {out['runtime_error']}")
    if out["status"] is None:
        raise ParseError("dcgmi mndiag printed no test result")
    reported = {id(h): h for h in out["hosts"]}
    findings: list[Finding] = []
    for host in ctx.hosts:
        entry = _entry(out["hosts"], host)
        reported.pop(id(entry), None)
        findings += _host(host, entry, ctx.profile.gpu.count)
    failed_gpus = any(f.metric == "mndiag_gpu_result" and not f.ok for f in findings)
    if not failed_gpus:  # a failed test with no GPU named: mpirun or the workload itself
        notes = [e["message"] or "" for e in out["global_errors"]]
        notes += [f"host {h['hostname']} reported but not in this job" for h in reported.values()]
        domain = getattr(ctx.hosts[0], "nvlink_domain", None)
        where = f"NVLink domain {domain} ({len(ctx.hosts)} trays)" if domain else f"{len(ctx.hosts)} hosts"
        findings.insert(0, Finding(device=f"mnubergemm on {where}", metric="mndiag_result",
                                   value=out["status"], ok=out["status"] == PASS, expected=PASS,
                                   fault="MNDIAG_MPI_FAILED", action=faults.action("MNDIAG_MPI_FAILED"),
                                   detail="; ".join(n for n in notes if n)))
    return findings


def _entry(hosts: list[dict], host) -> dict | None:
    """The result's entry of ``host``: mnubergemm names hosts as their ``hostname``, which is the inventory name, its
    short form or the address the host list gave."""
    names = {str(n) for n in (getattr(host, "name", None), getattr(host, "address", None)) if n}
    names |= {n.split(".", 1)[0] for n in names if not n[:1].isdigit()}
    return next((h for h in hosts if h["hostname"] in names
                 or (h["hostname"] or "").split(".", 1)[0] in names), None)


def _host(host, entry: dict | None, count: int) -> list[Finding]:
    name = host.name
    if entry is None:
        return [Finding(device="GPUs", metric="mndiag_gpus", value=0, ok=False, expected=count,
                        fault="MNDIAG_HOST_MISSING", action=faults.action("MNDIAG_HOST_MISSING"), host=name,
                        detail="not in dcgmi mndiag's results")]
    gpus = entry["gpus"]
    cut = entry.get("gpus_cut", False)  # a table's GPU list cut at its column: the count is not known
    out = [Finding(device="GPUs", metric="mndiag_gpus", value=len(gpus), ok=cut or len(gpus) >= count, expected=count,
                   fault="GPU_MISSING", action=faults.action("GPU_MISSING"), host=name,
                   detail=f"host {entry['host_id']}: {entry['hostname']}")]
    for gpu in gpus:
        if gpu["status"] == PASS:
            continue
        fault = "IMEX_DAEMON_DOWN" if any(e.startswith(IMEX_DOWN) for e in gpu["errors"]) else "MNDIAG_GPU_FAILED"
        out.append(Finding(device=f"GPU{gpu['gpu']}", metric="mndiag_gpu_result", value=gpu["status"],
                           ok=gpu["status"] == "Warn", expected=PASS, fault=fault,
                           action=faults.action(fault), host=name, detail="; ".join(gpu["errors"])))
    return out


CHECK = Check(id="dcgm_mndiag", order=118, tool="dcgmi mndiag", steps=steps, judge=judge,
              sets=("acceptance",), optional=True, needs=("gpu", "imex", "mndiag"), scope=Scope.GROUP,
              per_nvlink_domain=True,
              timeout_s=TIME_TO_RUN_S + 600,
              metrics={"mndiag_result": "", "mndiag_gpus": "", "mndiag_gpu_result": ""})
