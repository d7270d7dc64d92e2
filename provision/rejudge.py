"""Judge a saved run again from its raw outputs, without touching any node.

Each burn-in row of report.json names its raw files (``raw/<host>/<check>.txt`` or
``<check>.<key>.txt`` per device). A row whose tool could not run (``run_error``) or that
was skipped keeps its verdict; every other row is parsed and judged again against the
host's profile (or ``profile_name``) with the host's site overrides.
"""
from __future__ import annotations

from pathlib import Path

from provision import profiles
from provision.burnin import judge
from provision.checks import registry
from provision.errors import ProvisionError


def run(run_dir: Path, rep: dict, profile_name: str | None) -> dict[str, list[dict]]:
    """New burn-in section for ``rep``. Raises ProvisionError if raw output is missing."""
    checks, out = registry(), {}
    for host, rows in rep.get("burnin", {}).items():
        profile = _profile(rep, host, profile_name)
        out[host] = [_row(run_dir, host, row, checks, profile) for row in rows]
    return out


def _profile(rep: dict, host: str, profile_name: str | None) -> profiles.Profile:
    saved = rep.get("profiles", {}).get(host)
    if saved is None and profile_name is None:
        raise ProvisionError(f"report.json: host {host}: no profile recorded; pass --profile")
    profile = profiles.load(profile_name or saved["name"])
    return profile.with_overrides((saved or {}).get("overrides"), f"host {host}")


def _row(run_dir: Path, host: str, row: dict, checks: dict, profile) -> dict:
    if row["outcome"] == "skipped" or row.get("run_error") or not row.get("raw"):
        return row
    texts = {}
    for rel in row["raw"]:
        path = run_dir / rel
        if not path.is_file():
            raise ProvisionError(f"{path}: raw output named in report.json is missing")
        stem = path.name[: -len(".txt")]
        key = stem[len(row["check"]) + 1:] if stem != row["check"] else ""
        texts[key] = path.read_text()
    result = judge(host, checks[row["check"]], profile, texts).to_dict()
    result.pop("host")
    result.update(duration_s=row.get("duration_s", 0.0), raw=row["raw"])
    return result
