"""A profile's ``references`` checked against the checks that read them.

Which checks exist, which of their metrics have references, in which unit and with which test
parameters is declared by each check (``Check.metrics``, ``Check.params``), so a profile row is
checked here rather than in the profile schema: adding a check never edits the schema. A row
for an unknown check or metric, another unit, or params its check does not declare (or lacks)
is refused with one line naming the profile file and the key path. A check that judges by
another check's rows declares it (``Check.references_from``: ib_pairs reads ib_write_bw's), so
those rows are checked against their owner's declaration and ``readers`` names every check
that reads them.

A check's own default rows (``Check.references``, the lowest layer of every profile it applies to:
``provision.profiles.layers``) are checked here too, once merged, and a wrong one is named by its check
(``check <id> (Check.references)``) rather than by the profile it was merged into.
"""
from __future__ import annotations

import difflib

from collections.abc import Mapping

from provision.checks import registry
from provision.checks.base import Check
from provision.errors import ProfileError
from provision.profiles import Profile, layers, schema


def readers(check_id: str) -> list[str]:
    """The checks that judge by ``references.<check_id>``: the check itself and every check declaring
    it in ``references_from``, in run order."""
    return [c.id for c in registry().values() if c.id == check_id or check_id in c.data.references_from]


def validate(profile: Profile) -> None:
    """Raise ProfileError unless every reference row of ``profile`` fits its check's declaration, naming the layer
    that wrote the row (``_where``). A view found valid is not checked again (1,250 hosts share a handful)."""
    if _VALID.get(id(profile)) is profile:
        return
    checks = registry()
    for check_id, rows in profile.references.items():
        check = checks.get(check_id)
        if check is None:
            where = _where(profile, check_id, next(iter(rows), ""))
            near = difflib.get_close_matches(check_id, list(checks), n=1) if where == OVERRIDES else []
            raise ProfileError(f"{where}: references.{check_id}: no such check"
                               + (f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(checks)})"))
        for metric, row in rows.items():  # a row is the mistake of the layer it comes from
            _fits(check, metric, row.unit, row.params, _where(profile, check_id, metric))
    if len(_VALID) >= MAX_VALID:
        _VALID.clear()
    _VALID[id(profile)] = profile  # kept with its id, so that no other view can take it


MAX_VALID = 4096  # views found valid, kept; beyond it the memo starts again (a bound, not a tuned figure)
_VALID: dict[int, Profile] = {}


OVERRIDES = "provision_reference_overrides"  # the inventory's variable, and the name of its layer's mistakes


def _where(profile: Profile, check_id: str, metric: str) -> str:
    """Who wrote ``check_id``/``metric``'s row: the check (its default), the inventory (a site's override) or the
    profile's file."""
    layer = profile.reference_layer(check_id, metric) or ""
    if layer == layers.default_layer(check_id):
        return f"check {check_id} (Check.references)"
    if layer.startswith("inventory"):
        return OVERRIDES
    return profile.path


def _fits(check: Check, metric: str, unit: str, params: Mapping, where: str) -> None:
    """Raise ProfileError (``where``, the row's key and what is wrong) unless a row of ``check``'s ``metric`` in
    ``unit`` with ``params`` fits the check's declaration (``Check.metrics``, ``Check.params``)."""
    key = f"references.{check.id}.{metric}"
    if metric not in check.data.metrics:
        raise ProfileError(f"{where}: {key}: {check.id} reports no such metric "
                           f"(known: {', '.join(check.data.metrics) or 'none'})")
    if unit != check.data.metrics[metric]:
        raise ProfileError(f"{where}: {key}.unit: must be {check.data.metrics[metric]!r}, not {unit!r}")
    declared = check.data.params.get(metric, {"properties": {}})
    errors = list(schema.Validator(  # the profiles' validator: an integer is an int, not 60.0
        {"type": "object", "additionalProperties": False, **declared}).iter_errors(params))
    if errors:
        raise ProfileError(f"{where}: {schema.describe(errors[0], key + '.params')}")
