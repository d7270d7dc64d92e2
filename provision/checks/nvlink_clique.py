"""nvlink_clique: every tray of one NVLink domain reports one NVLink clique of one cluster.

Tool: ``nvidia-smi -q -x`` on each tray of the domain (one step per host, keyed by the host's name; parser
``nvidia-smi-qx``, the one gpu_health reads: each GPU's ``fabric`` block, tested on the GB200 driver 580 capture
``tests/data/samples/nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt``). One job per NVLink domain
(``Check.per_nvlink_domain``: the hosts sharing ``provision_nvlink_domain``), only where the profile has one.

gpu_health judges one tray's GPUs against each other; this judges the trays against each other. Over every GPU of
the domain whose fabric training completed (NVML ``nvmlGpuFabricInfo``: state Completed), the (clusterUuid,
cliqueId) most GPUs report is the domain's; each GPU reporting another, or an all-zero clusterUuid (none
assigned), fails NVLINK_DOMAIN_CLIQUE_MISMATCH naming its tray and GPU. With no majority (two trays, one in each)
every GPU outside the first tray's pair fails, the detail saying no majority was seen. A GPU whose training did not
complete, or that is lost, fails NVLINK_FABRIC_NOT_TRAINED (it cannot take part in the domain: not a pass). One
passing finding per tray that agrees.
"""
from __future__ import annotations

import collections

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Scope, Step
from provision.checks.common.nvlink_domains import domain_name

MISMATCH, UNTRAINED = "NVLINK_DOMAIN_CLIQUE_MISMATCH", "NVLINK_FABRIC_NOT_TRAINED"


def host_name(host) -> str:
    return str(getattr(host, "name", host))


def steps(profile, group) -> list[Step]:
    return [Step(host_name(h), ["nvidia-smi", "-q", "-x"], parser="nvidia-smi-qx", on=i)
            for i, h in enumerate(group.hosts)]


def judge(ctx: Context) -> list[Finding]:
    trays = {tray: smi["gpus"] for tray, smi in ctx.parsed.items()}
    members = [(tray, i, g) for tray, gpus in trays.items() for i, g in enumerate(gpus)]
    trained = [(t, i, g) for t, i, g in members if not g.get("lost") and (g.get("fabric") or {}).get("state")
               == "Completed"]
    out = [Finding(device=f"GPU{i} {g.get('bus_id')}", metric="fabric_state",
                   value=(g.get("fabric") or {}).get("state") or ("lost" if g.get("lost") else None), ok=False,
                   expected="Completed", fault=UNTRAINED, action=faults.action(UNTRAINED), host=t,
                   detail="its GPU cannot join the domain's NVLink clique") for t, i, g in members
           if (t, i, g) not in trained]
    seen = collections.Counter(_identity(g) for _, _, g in trained)
    if not seen:
        return out
    (want, count), *rest = seen.most_common()
    tie = bool(rest) and rest[0][1] == count
    if tie:  # no majority: the first tray's pair stands for the domain, said so
        want = _identity(trained[0][2])
    domain = domain_name(ctx.hosts)
    bad = {t for t, _, g in trained if _identity(g) != want or _unset(g)}
    for t, i, g in trained:
        got = _identity(g)
        if got != want or _unset(g):
            out.append(Finding(
                device=f"GPU{i} {g.get('bus_id')}", metric="fabric_clique", value=f"{got[0]}/{got[1]}", ok=False,
                expected=f"{want[0]}/{want[1]}", fault=MISMATCH, action=faults.action(MISMATCH), host=t,
                detail=("no NVLink cluster assigned" if _unset(g) else
                        f"tray {t} in clique {got[1]} of cluster {got[0]}, {domain}'s "
                        + ("trays split with no majority" if tie else f"other {count} GPUs in clique {want[1]}"))))
    out += [Finding(device=f"tray {t}", metric="fabric_clique", value=f"{want[0]}/{want[1]}", ok=True,
                    expected=f"{want[0]}/{want[1]}", host=t) for t in trays if t not in bad
            and any(tt == t for tt, _, _ in trained)]
    return out


def _identity(gpu: dict) -> tuple:
    fabric = gpu["fabric"]
    return fabric.get("cluster_uuid"), fabric.get("clique_id")


def _unset(gpu: dict) -> bool:
    uuid = _identity(gpu)[0]
    return uuid is None or set(str(uuid).replace("-", "")) == {"0"}


CHECK = Check(id="nvlink_clique", tool="nvidia-smi -q -x", steps=steps, judge=judge, order=105,
              placement=Placement(scope=Scope.GROUP, needs=("gpu", "nvlink_domain"), per_nvlink_domain=True),
              budget=Budget(timeout_s=60, sets=("deep",)),
              data=Data(metrics={}))
