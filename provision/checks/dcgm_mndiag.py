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
GPU_MISSING when fewer GPUs). A table cuts a host's "GPUs: 0, 1, ..." row at its 25-character column (seven GPUs
or more), so such a host's count is not printed: it is the table's "Total GPUs" less the other hosts' GPUs where it
is the only cut host, else the hosts with cut lists pass only when "Total GPUs" reaches the GPUs the run expects
(hosts x the profile's count), and fail GPU_MISSING otherwise (no Total GPUs row: fail, the count unknown).
Each GPU's result is Pass (its errors as the detail: IMEX_DAEMON_DOWN when the workload
says IMEX is down, else MNDIAG_GPU_FAILED); a test failed with no GPU named (mpirun's exit) is MNDIAG_MPI_FAILED.
A run that could not complete (dcgmi's "Unable to complete multi-node diagnostic") is an error.
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Scope, Step
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
    count = ctx.profile.gpu.count
    for host in ctx.hosts:
        entry = _entry(out["hosts"], host)
        reported.pop(id(entry), None)
        findings += _host(host, entry, count, _cut_count(out, entry, len(ctx.hosts) * count))
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


def _cut_count(out: dict, entry: dict | None, expected_total: int) -> tuple[int | None, bool, str]:
    """For a host whose table row cut its GPU list: (its GPU count where the table tells it, whether the run's total
    reaches ``expected_total``, how it was judged); (None, False, '') for any other host."""
    if entry is None or not entry.get("gpus_cut"):
        return None, False, ""
    total = out["total_gpus"]
    if total is None:
        return None, False, "GPU list cut at the table's column and no Total GPUs row: the count is unknown"
    cut = [h for h in out["hosts"] if h.get("gpus_cut")]
    judged = f"GPU list cut at the table's column; Total GPUs {total} of the {expected_total} the run expects"
    if len(cut) == 1:
        others = sum(len(h["gpus"]) for h in out["hosts"] if h is not entry)
        return total - others, total >= expected_total, f"{judged}, {total - others} on this host"
    return None, total >= expected_total, judged


def _host(host, entry: dict | None, count: int, cut: tuple[int | None, bool, str]) -> list[Finding]:
    name = host.name
    if entry is None:
        return [Finding(device="GPUs", metric="mndiag_gpus", value=0, ok=False, expected=count,
                        fault="MNDIAG_HOST_MISSING", action=faults.action("MNDIAG_HOST_MISSING"), host=name,
                        detail="not in dcgmi mndiag's results")]
    gpus = entry["gpus"]
    derived, total_ok, how = cut
    listed: int | str = len(gpus) if not how else derived if derived is not None else "unknown (list cut)"
    ok = listed >= count if isinstance(listed, int) else total_ok
    out = [Finding(device="GPUs", metric="mndiag_gpus", value=listed, ok=ok, expected=count,
                   fault="GPU_MISSING", action=faults.action("GPU_MISSING"), host=name,
                   detail=f"host {entry['host_id']}: {entry['hostname']}" + (f" ({how})" if how else ""))]
    for gpu in gpus:
        if gpu["status"] == PASS:
            continue
        fault = "IMEX_DAEMON_DOWN" if any(e.startswith(IMEX_DOWN) for e in gpu["errors"]) else "MNDIAG_GPU_FAILED"
        out.append(Finding(device=f"GPU{gpu['gpu']}", metric="mndiag_gpu_result", value=gpu["status"],
                           ok=gpu["status"] == "Warn", expected=PASS, fault=fault,
                           action=faults.action(fault), host=name, detail="; ".join(gpu["errors"])))
    return out


CHECK = Check(id="dcgm_mndiag", tool="dcgmi mndiag", steps=steps, judge=judge, order=118,
              placement=Placement(scope=Scope.GROUP, needs=("gpu", "imex", "mndiag"), per_nvlink_domain=True),
              budget=Budget(loads="gpu", timeout_s=TIME_TO_RUN_S + 600, sets=("acceptance",), optional=True),
              data=Data(metrics={"mndiag_result": "", "mndiag_gpus": "", "mndiag_gpu_result": ""}))
