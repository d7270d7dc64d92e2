"""A profile's ``references`` checked against the checks that read them.

Which checks exist, which of their metrics have references, in which unit and with which test
parameters is declared by each check (``Check.metrics``, ``Check.params``), so a profile row is
checked here rather than in the profile schema: adding a check never edits the schema. A row
for an unknown check or metric, another unit, or params its check does not declare (or lacks)
is refused with one line naming the profile file and the key path. A check that judges by
another check's rows declares it (``Check.references_from``: ib_pairs reads ib_write_bw's), so
those rows are checked against their owner's declaration and ``readers`` names every check
that reads them.
"""
from __future__ import annotations

from provision.checks import registry
from provision.errors import ProfileError
from provision.profiles import Profile, schema


def readers(check_id: str) -> list[str]:
    """The checks that judge by ``references.<check_id>``: the check itself and every check declaring
    it in ``references_from``, in run order."""
    return [c.id for c in registry().values() if c.id == check_id or check_id in c.references_from]


def validate(profile: Profile) -> None:
    """Raise ProfileError unless every reference row of ``profile`` fits its check's declaration."""
    checks = registry()
    where = profile.path
    for check_id, rows in profile.references.items():
        check = checks.get(check_id)
        if check is None:
            raise ProfileError(f"{where}: references.{check_id}: no such check (known: {', '.join(checks)})")
        for metric, row in rows.items():
            key = f"references.{check_id}.{metric}"
            if metric not in check.metrics:
                raise ProfileError(f"{where}: {key}: {check_id} reports no such metric "
                                   f"(known: {', '.join(check.metrics) or 'none'})")
            if row.unit != check.metrics[metric]:
                raise ProfileError(f"{where}: {key}.unit: must be {check.metrics[metric]!r}, not {row.unit!r}")
            declared = check.params.get(metric, {"properties": {}})
            errors = list(schema.Validator(  # the profiles' validator: an integer is an int, not 60.0
                {"type": "object", "additionalProperties": False, **declared}).iter_errors(row.params))
            if errors:
                raise ProfileError(f"{where}: {schema.describe(errors[0], key + '.params')}")
