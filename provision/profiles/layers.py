"""Where each reference row of a host's profile comes from: four layers, lowest first.

1. a check's default rows (``Check.references``: limits that hold on every platform the check applies to, each with
   its source), for a profile the check applies to (the platform traits it ``needs``). The checks sit above this
   package, which never imports them: they hand their rows down as ``DefaultRows``, through ``provide`` (the checks'
   registry registers itself as it is imported, ``provision.checks.default_rows``) or to ``load``/``for_host``;
2. ``site_references.yaml``: the figures that are the site's rather than the hardware's;
3. the profile's own rows (``provision/profiles/data/<name>.yaml``): what its hardware changes;
4. the inventory: a host's ``provision_reference_overrides``, which changes fields of a row of a lower layer (a
   ``value`` without ``estimate`` or ``source`` is the site's own figure) or adds a complete row (``NEW_ROW``;
   ``params`` {} when left out) for a check and metric no lower layer has, a site's own check's included.

Below the inventory a row replaces the row of the same check and metric of a lower layer whole. Each row's layer
is kept by name (``Profile.reference_layer``), and ``provision checks --references HOST`` prints them, as
``ansible-inventory --host`` shows a host's variables after Ansible's precedence.
"""
from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from provision.errors import ProfileError
from provision.profiles import schema

SITE = "site_references.yaml"
# What an inventory row that no lower layer has must give: its figure, what is judged (a bound may be null, but it
# is said: a row without bounds judges nothing), its unit and where the figure comes from.
NEW_ROW = ("value", "lower", "upper", "unit", "source")


@dataclass(frozen=True)
class DefaultRows:
    """One check's default reference rows (``Check.references``): ``check`` its id, ``needs`` the platform traits it
    applies on (its ``Check.needs``: a profile lacking one gets none of its rows, as ``Check.applies`` says), and
    ``rows`` metric -> row, as a profile writes one."""

    check: str
    needs: tuple[str, ...]
    rows: Mapping[str, Mapping]


Source = Callable[[], Sequence[DefaultRows]]
_SOURCE: list[Source] = []  # where the checks' rows come from: one function, set from above (``provide``)
_CHECKED: set[str] = set()  # the checks' rows found to be reference rows (one entry per distinct declaration)


def provide(source: Source) -> None:
    """Take the checks' default rows from ``source`` (called on each ``load`` and ``for_host`` that is handed none,
    since a site's checks may come and go): the checks' registry calls this as it is imported, so that this package,
    below the checks, never imports them."""
    _SOURCE[:] = [source]


def provided() -> tuple[DefaultRows, ...]:
    """The checks' default rows from the registered ``source`` (none before the checks are imported), each check's
    checked once per distinct declaration as reference rows. Raises ProfileError naming the check."""
    found = tuple(_SOURCE[0]()) if _SOURCE else ()
    for one in found:
        try:
            key: str | None = json.dumps([one.check, one.rows], sort_keys=True)
        except (TypeError, ValueError):  # not JSON data: the schema names what is wrong
            key = None
        if key is None or key not in _CHECKED:
            schema.validate({"references": {one.check: one.rows}}, "references",
                            f"check {one.check} (Check.references)")
            if key is not None:
                _CHECKED.add(key)
    return found


def default_layer(check: str) -> str:
    return f"check {check} default"


def profile_layer(name: str, path: str) -> str:
    return f"profile {name} ({path})"


# The inventory's layer in a host's view: every host with the same values shares that view, so it names no host (a
# host's listing does: ``provision checks --references``).
INVENTORY = "inventory: provision_reference_overrides"


def inventory_layer(origin: str) -> str:
    """The inventory's layer for overrides from ``origin`` (``host <name>``, ``check set <name>``)."""
    return f"inventory: {origin} provision_reference_overrides"


Named = Callable[[str, str], str]  # (check, metric) -> the name of the layer a row of it comes from


def stack(layers: Iterable[tuple[Named, Mapping]]) -> tuple[dict, dict]:
    """(references, names) from ``layers``, highest first, each (its layer's name, check -> metric -> row):
    check -> metric -> a plain copy of the row of the highest layer that has that check and metric (whole), and
    check -> metric -> that layer's name. A higher layer's checks and metrics come first."""
    references: dict[str, dict] = {}
    names: dict[str, dict] = {}
    for name, rows in layers:
        for check, metrics in rows.items():
            for metric, row in metrics.items():
                if metric not in references.setdefault(check, {}):
                    references[check][metric] = copy.deepcopy(row)
                    names.setdefault(check, {})[metric] = name(check, metric)
    return references, names


def is_table(rows: object) -> bool:
    """Whether ``rows`` maps check -> metric -> something: what ``stack`` can merge (else the schema says why not)."""
    return isinstance(rows, Mapping) and all(isinstance(metrics, Mapping) for metrics in rows.values())


def missing(fields: Mapping) -> list[str]:
    """What a row the inventory adds lacks of ``NEW_ROW``."""
    return [key for key in NEW_ROW if key not in fields]


def overlay(references: dict, names: dict, overrides: Mapping, where: str, layer: str, profile: str) -> None:
    """The inventory's ``overrides`` (check -> metric -> fields, from ``where``) laid over ``references`` (check ->
    metric -> row, plain: changed in place) and their layers' ``names`` (each row's named ``layer``, overridden or
    added). An override that sets a value and says nothing of ``estimate`` is the site's own figure: the row is no
    longer an estimate, and without a ``source`` says it is the site's. Raises ProfileError naming the override."""
    for check, metrics in overrides.items():
        for metric, fields in (metrics or {}).items():
            key, row = f"{where}.{check}.{metric}", references.get(check, {}).get(metric)
            if row is None or not isinstance(fields, dict):
                references.setdefault(check, {})[metric] = _added(key, check, metric, fields, references, profile)
                names.setdefault(check, {})[metric] = f"{layer} (added)"
                continue
            if "value" in fields and "estimate" not in fields:
                row.pop("estimate", None)  # the site's own figure replaces the estimate (its rows' sources say so)
            if "value" in fields and "source" not in fields:  # never the replaced figure's reasoning
                row["source"] = f"the site's own figure ({key})"
            row.update(fields)
            names[check][metric] = f"{layer} (overridden: {', '.join(map(str, fields))}; over {names[check][metric]})"


def _added(key: str, check: str, metric: str, fields: object, references: dict, profile: str) -> dict:
    """The row an override of a check and metric no lower layer has adds: a complete one (``NEW_ROW``; ``params`` {}
    when left out). Else raises ProfileError naming the reference it may have meant (a misspelt check or metric, as
    difflib finds one), or what it lacks."""
    near = _near(metric, references[check]) if check in references else _near(check, references)
    if isinstance(fields, Mapping) and not missing(fields):
        return {"params": {}, **fields}
    if near or not isinstance(fields, Mapping):
        raise ProfileError(f"{key}: no such reference in profile {profile}{near}")
    raise ProfileError(f"{key}: no such reference in profile {profile}, and not a complete new row: missing "
                       f"{', '.join(missing(fields))} (a new row gives {', '.join(NEW_ROW)}; params {{}} when left "
                       "out)")


def _near(name: str, known) -> str:
    """' (did you mean X?)' for a misspelt check or metric of an override, when difflib finds one."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
