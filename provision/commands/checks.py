"""``provision checks``: the burn-in checks in run order, or README's table (``--markdown``), or README's table
of the check sets (``--sets``), or README's list of the hardware profiles (``--profiles``), or one host's
references with the layer each row comes from (``--references HOST -i INVENTORY``)."""
from __future__ import annotations

import argparse
import difflib
import json

from provision import arguments, checks, profiles
from provision.checks import references
from provision.commands._common import say
from provision.errors import ExitStatus, InventoryError, ProfileError, ProvisionError
from provision.profiles import layers


def main(args: argparse.Namespace) -> int:
    if getattr(args, "references", None) is not None:
        if not args.inventory:
            raise ProvisionError("checks --references HOST: give -i INVENTORY, the inventory that names the host")
        return host_references(args.references, args.inventory, arguments.vault(args), out=say)
    if getattr(args, "inventory", None):
        raise ProvisionError("checks: -i goes with --references HOST (the host whose references to print)")
    if getattr(args, "profiles", False):
        say(profiles.markdown_list(), end="")
        return ExitStatus.OK
    if getattr(args, "sets", False):
        from provision.checks import sets

        say(sets.markdown_table(checks.registry()), end="")
        return ExitStatus.OK
    return list_checks(args.markdown, out=say)


def list_checks(markdown: bool = False, out=print) -> ExitStatus:
    """Print the checks in run order: id, scope, order, needs, timeout, metrics, then the rules that apply on
    fewer platforms (``rule pcie: pcie_gpu``); or README's table."""
    if markdown:
        out(checks.markdown_table(), end="")
        return ExitStatus.OK
    for check in checks.registry().values():
        metrics = ", ".join(f"{m} [{u}]" if u else m for m, u in check.metrics.items()) or "-"
        rules = "".join(f"  rule {rule}: {','.join(needs)}" for rule, needs in check.rules.items())
        out(f"{check.id:<16} {check.scope.value:<7} order {check.order:<3} needs {','.join(check.needs) or '-':<8} "
            f"timeout {check.timeout_s:>4.0f} s  {metrics}{rules}")
    return ExitStatus.OK


def host_references(host_name: str, inventory_args: list[str], vault=None, out=print) -> ExitStatus:
    """Print host ``host_name``'s references as a run judges it by them (its profile with every layer merged,
    ``provision.profiles.layers``): a line naming the host and its profile, then one line per row in check run
    order: check.metric, value and unit, the bounds (absolute, and as fractions of the value), the test
    parameters, the layer the row comes from, and its source. Connects nowhere. Raises InventoryError (exit 2)
    for a host the inventory does not have, or has without a profile, or with a bad field (the inventory's own
    one line), ProfileError for references that do not fit their checks."""
    from provision import inventory as inv

    sources = inv.resolve_all(inventory_args)
    found = inv.read(sources, vault or inv.Vault())
    host = next((h for h in found.hosts if h.name == host_name), None)
    if host is None and found.problems:  # a problem merged over many hosts names a few of them: read this one alone
        try:
            alone = inv.read(sources, vault or inv.Vault(), [host_name])
        except InventoryError:  # --limit names no such host: said below, with the nearest name
            alone = None
        if alone is not None and alone.problems:
            raise alone.problems[0]
    if host is None:
        near = difflib.get_close_matches(host_name, [h.name for h in found.hosts], n=1)
        raise InventoryError(f"{found.label}: no host {host_name} in the inventory"
                             + (f" (did you mean {near[0]}?)" if near else ""))
    if host.profile is None:
        raise InventoryError(f"{found.label}: host {host_name} has no provision_profile: not a GPU node, no references")
    profile = profiles.for_host(str(host.profile), host.vars, host.name)
    try:
        references.validate(profile)
    except ProfileError as exc:  # as a run refuses it (provision.targets)
        raise ProfileError(f"host {host.name}: field 'provision_profile': {exc}") from None
    out(f"host {host.name}: profile {profile.name}; layers, lowest first: check <id> default < "
        "site_references.yaml < profile < inventory (provision_reference_overrides)")
    order = {check_id: i for i, check_id in enumerate(checks.registry())}
    own = layers.inventory_layer(f"host {host.name}")
    for check_id in sorted(profile.references, key=lambda c: (order.get(c, len(order)), c)):
        for metric, row in profile.references[check_id].items():
            layer = str(profile.reference_layer(check_id, metric))  # the view names no host: such hosts share it
            out(_row(f"{check_id}.{metric}", row, layer.replace(layers.INVENTORY, own)))
    return ExitStatus.OK


def _row(key: str, row, layer: str) -> str:
    """One reference row on one line: ``key  value unit  bounds low..high (lower/upper)  params {...}  from layer
    source: ...``; an estimate says so after its value."""
    low, high = row.bounds()
    value = f"{_number(row.value)} {row.unit}".rstrip() + (" (estimate)" if row.estimate else "")
    bounds = (f"bounds {_number(low) if low is not None else '-'}..{_number(high) if high is not None else '-'} "
              f"({_fraction(row.lower)}/{_fraction(row.upper)})")
    return (f"{key}  {value}  {bounds}  params {json.dumps(dict(row.params), sort_keys=True)}  from {layer}  "
            f"source: {' '.join(row.source.split())}")


def _number(value: float) -> str:
    return f"{value:.10g}"


def _fraction(value: float | None) -> str:
    """A bound as a signed percentage of the value, ``none`` for unbounded."""
    return "none" if value is None else f"{value * 100:+.10g}%"
