"""firmware_fleet: the run's hosts of one profile against each other: the GPU or HCA or node whose firmware differs
from the run's clear majority is named.

Runs no tool (``Check.gathers``): it compares what ``firmware`` read on each host of the profile in this run (its
outputs, parsed by the same parsers; each raw file stays the node's). Per field (``provision.checks.versions``:
VBIOS, InfoROM, GSP, HCA firmware and board id, BIOS, BMC, kernel, driver), over every unit of the profile's hosts
(every GPU, every HCA, every node): the value held by more than half of them is the majority, and each unit with
another value fails FIRMWARE_ODD_ONE_OUT naming its host, device, value and the majority's. Where no value has more
than half (two values in equal numbers) the field fails FIRMWARE_SPLIT for the whole group: no host is guessed to be
the odd one: each host of the group is named with the split. A field the site's manifest (``provision_firmware``)
names is left to the manifest, which firmware judges per node: during a rolling update every version it allows is
right, whichever holds the majority. Only the profile's HCAs are compared (not a storage NIC or a DPU beside
them). One NVL72 rack's 18 trays are one profile's hosts, so a tray on other firmware is named the same way.
Cluster Health Scanner prints such a node x version matrix; here the distribution is part of the result: one
passing row per field and value (``<field>_distribution``: the value, how many units hold it and on which hosts, as
a Slurm hostlist), which the console, report.json and the HTML report show.

A host whose firmware check gave no outputs (unreachable, or its outputs could not be judged) is left out of the
comparison, and a ``left_out`` fact names it.
"""
from __future__ import annotations

from provision.checks import registry, versions
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Scope, gathered_steps, split_key
from provision.fabric.model import hca_names
from provision.results.hostlist import fold

ODD, SPLIT = "FIRMWARE_ODD_ONE_OUT", "FIRMWARE_SPLIT"


def steps(profile, group):
    return gathered_steps(registry()[CHECK.gathers], profile, group)  # firmware's steps, found as the engine finds them


def judge(ctx: Context) -> list[Finding]:
    by_host: dict[str, dict[str, dict]] = {}
    for key, parsed in ctx.parsed.items():
        host, step = split_key(key)
        by_host.setdefault(host, {})[step] = parsed
    hcas = hca_names(ctx.profile) if ctx.profile.has("hca") else None
    found = [(host, unit) for host, outputs in by_host.items() for unit in versions.units(outputs, hcas)]
    # A field the site's manifest names is the manifest's to judge (firmware does, per node): during a rolling
    # update the versions it allows are all right, whichever holds the majority.
    manifest = versions.manifest_of(ctx.profile.site)
    profile = ctx.profile.name
    findings = versions.odd_ones([(h, u) for h, u in found if u.field not in manifest],
                                 f"the run's {len(by_host)} {profile} hosts", ODD, SPLIT)
    left = [str(getattr(h, "name", h)) for h in ctx.hosts if str(getattr(h, "name", h)) not in by_host]
    if left:  # their firmware check gave no outputs to compare (unreachable, or could not be judged)
        findings.append(Finding(device=f"{len(left)} hosts", metric="left_out", value=fold(left), ok=True,
                                detail="not compared: their firmware check gave no outputs (see its results)"))
    for field, rows in versions.distribution(found).items():
        level = versions.FIELDS[field][0]
        findings += [Finding(device=f"{count} {level}{'s' if count != 1 else ''}", metric=f"{field}_distribution",
                             value=value, ok=True,
                             detail=fold(hosts)) for value, count, hosts in rows]
    return findings


CHECK = Check(id="firmware_fleet", tool="(firmware's outputs)", steps=steps, judge=judge, order=110,
              placement=Placement(scope=Scope.GROUP, gathers="firmware"),
              budget=Budget(timeout_s=60, sets=("quick", "deep")),
              data=Data(metrics={}))
