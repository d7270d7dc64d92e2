"""Read a saved report.json back into the model (``provision.results.model``).

Reads schema version 2 and the version-less reports written before the model existed
(``burnin: {host: [rows]}``, ``profiles: {host: {name, overrides}}``, raw outputs as a list of
``raw/<host>/<check>[.<key>].txt`` paths). A malformed report raises ProvisionError naming
the file and the key path: a version 2 report is checked against the published schema
(``report.schema.json``) before any of it is used, so that a type-confused one (a string where an
object belongs, a number as a message, ``"false"`` as ``ok``) is refused, never read as a pass; a
journal line is checked against the schema's result (``result_from_dict``).
"""
from __future__ import annotations

from typing import Any

from provision.errors import ProvisionError
from provision.results import schema
from provision.results.model import (READABLE_VERSIONS, CheckResult, FailedTask, Finding, HostInstall, HostRecord,
                                     Outcome, RawOutput, Reference, RoleResult, Run, Scope)


def run_from_dict(data: Any, origin: str) -> Run:
    """A Run from report.json's mapping. Raises ProvisionError for a malformed report."""
    if not isinstance(data, dict):
        raise ProvisionError(f"{origin}: not a run report (a JSON object)")
    version = data.get("schema_version", 1)
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ProvisionError(f"{origin}: schema_version {version!r}: this version reads "
                             f"{', '.join(map(str, READABLE_VERSIONS))}")
    if version != 1:
        try:
            schema.validate(data, origin)
        except ValueError as exc:
            raise ProvisionError(str(exc)) from None
    where = ""
    try:
        where = "hosts"
        hosts = _legacy_hosts(data) if version == 1 else {h: _host(r) for h, r in (data.get("hosts") or {}).items()}
        where = "install"
        install = {h: _install(r) for h, r in (data.get("install") or {}).items()}
        where = "results"
        results = _legacy_results(data) if version == 1 else [_result(r) for r in data.get("results") or []]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProvisionError(f"{origin}: {where}: malformed ({type(exc).__name__}: {exc})") from None
    return Run(run_id=str(data.get("run_id", "")), inventory=str(data.get("inventory", "")),
               phases=list(data.get("phases") or []), started=str(data.get("started", "")),
               finished=str(data.get("finished", "")), hosts=hosts, install=install, results=results,
               install_wall_s=data.get("install_wall_s"), burnin_wall_s=data.get("burnin_wall_s"),
               install_artifacts=data.get("install_artifacts"), evaluated=data.get("evaluated"),
               cluster=data.get("cluster"), attempts=data.get("attempts"), power_actions=data.get("power_actions"))


def finding_from_dict(row: dict) -> Finding:
    reference = None
    if "reference" in row:
        value = float(row["reference"])
        low, high = row.get("lower_bound"), row.get("upper_bound")
        reference = Reference(value=value, lower=None if low is None else _fraction(low, value),
                              upper=None if high is None else _fraction(high, value), unit=row.get("unit", ""),
                              source=row.get("source", ""), params=row.get("params") or {},
                              estimate=row.get("estimate") is True)
    if not isinstance(row["ok"], bool):  # bool("false") is True: a version 1 report is not schema-checked
        raise TypeError(f"ok: {str(row['ok'])[:40]!r} is not true or false")
    return Finding(device=row["device"], metric=row["metric"], value=row.get("value"), ok=row["ok"],
                   unit=row.get("unit", ""), reference=reference, expected=row.get("expected"),
                   fault=row.get("fault", ""), action=row.get("action", ""), detail=row.get("detail", ""),
                   host=row.get("host", ""))


def _fraction(bound: float, value: float) -> float:
    return 0.0 if value == 0 else bound / value - 1


def result_from_dict(row: dict) -> CheckResult:
    """One result row of report.json (or of the run's journal), checked against the schema's result.
    Raises KeyError/ValueError/TypeError."""
    found = schema.result_problems(row)
    if found:
        raise ValueError(found[0])
    return _result(row)


def _result(row: dict) -> CheckResult:
    return CheckResult(check=row["check"], hosts=tuple(row["hosts"]), outcome=Outcome(row["outcome"]),
                       message=row["message"], scope=Scope(row.get("scope", "node")),
                       duration_s=float(row.get("duration_s") or 0.0),
                       findings=[finding_from_dict(f) for f in row.get("findings") or []],
                       raw=[RawOutput(r["key"], r["host"], r["path"], r.get("stderr", ""), r.get("server", ""))
                            for r in row.get("raw") or []],
                       run_error=bool(row.get("run_error")), evidence=bool(row.get("evidence")),
                       attempt=int(row.get("attempt") or 1))


def _host(row: dict) -> HostRecord:
    return HostRecord(profile=row.get("profile"), vars=dict(row.get("vars") or {}), os_target=row.get("os_target"),
                      os_release=dict(row.get("os_release") or {}),
                      kernel=row.get("kernel"))


def _install(row: dict) -> HostInstall:
    roles = {name: RoleResult(int(r["tasks"]), int(r["changed"]),
                              [FailedTask(str(f["task"]), str(f["msg"])) for f in r["failed"]])
             for name, r in (row.get("roles") or {}).items()}
    return HostInstall(status=row["status"], changed=int(row.get("changed") or 0), roles=roles)


def _legacy_hosts(data: dict) -> dict[str, HostRecord]:
    out = {}
    for host, row in (data.get("profiles") or {}).items():
        overrides = (row or {}).get("overrides")
        out[host] = HostRecord(profile=(row or {}).get("name"),
                               vars={"provision_reference_overrides": overrides} if overrides else {})
    return out


def _legacy_results(data: dict) -> list[CheckResult]:
    out = []
    for host, rows in (data.get("burnin") or {}).items():
        for row in rows:
            raw = []
            for rel in row.get("raw") or []:
                stem = rel.rsplit("/", 1)[-1][: -len(".txt")]
                key = stem[len(row["check"]) + 1:] if stem != row["check"] else ""
                raw.append(RawOutput(key, host, rel))
            out.append(_result({**row, "hosts": [host], "raw": [r.to_dict() for r in raw]}))
    return out
