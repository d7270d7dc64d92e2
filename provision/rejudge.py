"""Judge a saved run again from its raw outputs, without touching any node.

Each burn-in row of report.json names its raw files (``raw/<host>/<check>.txt`` or
``<check>.<key>.txt`` per device). A row whose tool could not run (``run_error``) or that
was skipped keeps its verdict; every other row is parsed and judged again against the
host's profile (or ``profile_name``) with the host's site overrides.
"""
from __future__ import annotations

from pathlib import Path

from provision import profiles
from provision.burnin import OS_RELEASE, applicable, judge, parse_os_release
from provision.checks import registry
from provision.errors import ProvisionError


def run(run_dir: Path, rep: dict, profile_name: str | None) -> dict[str, list[dict]]:
    """New burn-in section for ``rep``. Raises ProvisionError if the report is malformed or raw
    output is missing."""
    burnin = rep.get("burnin")
    if not isinstance(burnin, dict) or not burnin:
        raise ProvisionError(f"{run_dir}/report.json: no burn-in results to evaluate")
    checks, out = registry(), {}
    for host, rows in burnin.items():
        profile = _profile(rep, host, profile_name).for_target(_saved_target(run_dir, host))
        if not isinstance(rows, list):
            raise ProvisionError(f"{run_dir}/report.json: burnin.{host}: not a list of check results")
        try:
            out[host] = [_row(run_dir, host, row, checks, profile) for row in rows]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProvisionError(f"{run_dir}/report.json: burnin.{host}: malformed row ({type(exc).__name__}: {exc})") from None
    return out


def _saved_target(run_dir: Path, host: str) -> str | None:
    """The node's repository folder from the os-release the burn-in saved, if it saved one."""
    path = run_dir / "raw" / host / OS_RELEASE
    if ".." in host or "/" in host or not path.is_file():
        return None
    return profiles.target_of(parse_os_release(path.read_text(errors="replace")))


def _profile(rep: dict, host: str, profile_name: str | None) -> profiles.Profile:
    saved = (rep.get("profiles") or {}).get(host)
    if not isinstance(saved, dict) and profile_name is None:
        raise ProvisionError(f"report.json: profiles.{host}: no profile recorded; pass --profile")
    saved = saved if isinstance(saved, dict) else {}
    profile = profiles.load(str(profile_name or saved.get("name")))
    return profile.with_overrides(saved.get("overrides"), f"report.json: host {host}")


def _row(run_dir: Path, host: str, row: dict, checks: dict, profile) -> dict:
    check = checks.get(row["check"])
    if check is None:
        raise ProvisionError(f"report.json: burnin.{host}: unknown check {row['check']!r}")
    if not applicable(check, profile):
        return {**row, "outcome": "skipped", "message": f"not applicable to profile {profile.name}", "findings": []}
    if row["outcome"] == "skipped" or row.get("run_error") or not row.get("raw"):
        return row
    texts = {}
    for rel in row["raw"]:
        path = (run_dir / rel).resolve()
        if run_dir.resolve() not in path.parents:
            raise ProvisionError(f"report.json: burnin.{host}.{row['check']}: raw path {rel!r} is outside the run")
        if not path.is_file():
            raise ProvisionError(f"{path}: raw output named in report.json is missing")
        stem = path.name[: -len(".txt")]
        key = stem[len(row["check"]) + 1:] if stem != row["check"] else ""
        texts[key] = path.read_text(errors="replace")
    result = judge(host, check, profile, texts).to_dict()
    result.pop("host")
    result.update(duration_s=row.get("duration_s", 0.0), raw=row["raw"])
    return result
