"""Judge a saved run again from its raw outputs, without touching any node.

Each result names its raw files (``RawOutput``). A result whose tool could not run
(``run_error``) or that was skipped keeps its verdict, as does the cluster procedure's
``localize`` result (the rounds it chose depended on the verdicts it saw); every other one is parsed and judged
again against its first host's profile (or ``profile_name``), with the inventory variables
and OS target the run recorded for it (``HostRecord``). Each output is read by the parser its
step names: the check's steps are built again for the result's hosts (``jobs.by_name``).
"""
from __future__ import annotations

from provision import profiles
from provision.checks import references, registry
from provision.engine.burnin import parse_os_release
from provision.engine.cluster import LOCALIZE
from provision.engine.jobs import by_name
from provision.engine.verdict import not_applicable, verdict
from provision.errors import ProvisionError
from provision.results.model import CheckResult, Outcome, Run
from provision.engine import recovery
from provision.results.model import REGRESSION
from provision.results.store import RunDir


def reevaluate(rundir: RunDir, run: Run, profile_name: str | None) -> list[CheckResult]:
    """The run's results judged again. Raises ProvisionError when the run has none, names an
    unknown check, records no profile for a host, or a raw output is missing."""
    if not run.results:
        raise ProvisionError(f"{rundir.report}: no burn-in results to evaluate")
    checks, cache, out = registry(), {}, []
    for result in run.results:
        if result.check == LOCALIZE:  # adaptive: its rounds were chosen by the verdicts it saw; kept as recorded
            out.append(result)
            continue
        if result.check in (REGRESSION, recovery.CHECK_ID):  # judged against the history, or a record of a power
            out.append(result)  # cycle the run did (engine.recovery): no raw output to judge again; kept as recorded
            continue
        check = checks.get(result.check)
        if check is None:
            raise ProvisionError(f"{rundir.report}: results: unknown check {result.check!r} "
                                 f"(known: {', '.join(checks)})")
        host = result.hosts[0]
        if host not in cache:
            cache[host] = _profile(rundir, run, host, profile_name)
        profile = cache[host]
        skipped = not_applicable(check, result.hosts, result.scope, profile)
        if skipped is not None:
            skipped.duration_s = result.duration_s
            out.append(skipped)
            continue
        if result.outcome is Outcome.SKIPPED or result.run_error or not result.raw:
            out.append(result)
            continue
        texts = {raw.key: rundir.read(raw.path, f"{rundir.report}: {result.check} on {result.host}")
                 for raw in result.raw}
        kept = {h: r.vars for h, r in run.hosts.items()}
        again = verdict(check, result.hosts, result.scope, profile, texts, by_name(check, result.hosts, kept))
        again.duration_s, again.raw, again.evidence = result.duration_s, result.raw, result.evidence
        out.append(again)
    return out


def _profile(rundir: RunDir, run: Run, host: str, profile_name: str | None) -> profiles.Profile:
    record = run.hosts.get(host)
    if (record is None or not record.profile) and profile_name is None:
        raise ProvisionError(f"{rundir.report}: hosts.{host}: no profile recorded; pass --profile")
    name = profile_name or record.profile  # type: ignore[union-attr]
    variables = record.vars if record else {}
    profile = profiles.for_host(str(name), variables, host)
    target = record.os_target if record else None
    saved = rundir.path / rundir.os_release(host)
    if target is None and "/" not in host and ".." not in host and saved.is_file():  # reports before the model
        target = profiles.target_of(parse_os_release(saved.read_text(errors="replace")))
    references.validate(profile)
    return profile.for_target(target)
