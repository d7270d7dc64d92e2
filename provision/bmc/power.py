"""Power actions on many nodes, in batches, each confirmed by the node itself over SSH, never by the BMC's word.

``power_batches`` takes ``batch`` nodes at a time (their actions at once, then every one confirmed or given up),
waits ``stagger_s`` between batches, and returns one outcome per node:

- done: off: the node stopped answering SSH within ``timeout_s``; on, cycle, reset: it answered with a boot id other
  than the one read before the action (any readable one when none could be read before);
- not_carried_out: the BMC accepted the action and the node did not go down or come back in time, even where the
  BMC reports the PowerState asked for (a BMC can say Off and leave the node running);
- unconfirmed: an off of a node that did not answer SSH before it either: its silence after proves nothing;
- failed: the BMC did not answer or refused the action; a node whose BMC does not answer is never actioned;
- skipped: nothing to do (on of a node that answers SSH; off of a node the BMC reports Off that does not answer).

A node whose boot id cannot be read before the action (a hung node: ``burnin --recover``) may still be cycled; its
outcome then rests on SSH coming back with a readable boot id other than the last one known (the burn-in passes the
boot id it read when it reached the node: ``boot_id_of`` may answer the first read from what it knew), and its
detail says so.

Default batch and stagger (``defaults``): a quarter of the rack's power budget (the inventory's
``provision_plan.rack.budget_kW``) over the node's maximum power (the profile's ``power.node_max_W``) nodes at a
time, so that the nodes booting at once (fans at full speed in POST, power supplies charging) stay within a quarter
of the budget while the rest keep running; one node at a time without both figures. A chosen margin, not a
measured one.
"""
from __future__ import annotations

import concurrent.futures
import datetime as dt
import math
import time
from typing import Callable

from provision.errors import BmcError

ACTIONS = ("on", "off", "cycle", "reset")
DEFAULT_BATCH, DEFAULT_STAGGER_S = 1, 10.0
DEFAULT_TIMEOUT_S = 600.0  # a GPU server's POST with 8 GPUs and 8 HCAs takes minutes; 10 min covers the slow ones
BUDGET_SHARE = 0.25
POLL_S = 2.0


def defaults(node_max_W: float | None, rack_budget_kW: float | None) -> tuple[int, float]:
    """(batch, stagger_s) for nodes of ``node_max_W`` in a rack of ``rack_budget_kW`` (module docstring)."""
    if node_max_W and rack_budget_kW and node_max_W > 0 and rack_budget_kW > 0:
        return max(1, math.floor(BUDGET_SHARE * rack_budget_kW * 1000 / node_max_W)), DEFAULT_STAGGER_S
    return DEFAULT_BATCH, DEFAULT_STAGGER_S


def batch_defaults(hosts) -> tuple[int, float]:
    """``defaults`` for ``hosts`` (inventory Hosts): the largest node (its profile's power.node_max_W) and the
    smallest rack budget (its inventory's provision_plan.rack.budget_kW) among them."""
    from provision import profiles
    from provision.errors import ProvisionError

    node_W, budget_kW = [], []
    for host in hosts:
        try:
            view = profiles.for_host(str(host.profile), host.vars, host.name) if host.profile else None
        except ProvisionError:
            view = None
        if view is not None and view.power is not None:
            node_W.append(float(view.power.node_max_W))
        plan = host.vars.get("provision_plan")
        rack = plan.get("rack") if isinstance(plan, dict) else None
        if isinstance(rack, dict) and isinstance(rack.get("budget_kW"), (int, float)):
            budget_kW.append(float(rack["budget_kW"]))
    return defaults(max(node_W) if node_W else None, min(budget_kW) if budget_kW else None)


def power_batches(targets, action: str, batch: int, stagger_s: float,  # noqa: PLR0913 (issue 37's contract)
                  bmc_of: Callable, boot_id_of: Callable, timeout_s: float, say: Callable[[str], None]) -> list[dict]:
    """Do ``action`` on ``targets`` (hosts with ``.name``) ``batch`` at a time (module docstring). ``bmc_of(host)``
    gives the host's BmcConfig (connected here, each request bounded by ``client.DEFAULT_TIMEOUT_S``) or a
    connected Bmc, None for a host without one (skipped), and may raise BmcError; ``boot_id_of(host)`` the node's
    boot id read over SSH, None when it does not answer. One dict per host, in the order given: host, action,
    outcome, before_boot_id, after_boot_id, detail, started, finished, seconds (from the action to the outcome),
    bmc (its address)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown power action {action!r}")
    batch = max(1, int(batch))
    outcomes: list[dict] = []
    hosts = list(targets)
    for start in range(0, len(hosts), batch):
        if start:
            say(f"bmc power {action}: waiting {stagger_s:g} s before the next batch")
            time.sleep(stagger_s)
        group = hosts[start:start + batch]
        say(f"bmc power {action}: {', '.join(h.name for h in group)}")
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = [pool.submit(_one, h, action, bmc_of, boot_id_of, timeout_s) for h in group]
            for future in futures:
                outcome = future.result()
                say(f"{outcome['host']}: {outcome['outcome']}: {outcome['detail']}")
                outcomes.append(outcome)
    return outcomes


def _one(host, action: str, bmc_of: Callable, boot_id_of: Callable, timeout_s: float) -> dict:
    started = _now()
    record = {"host": host.name, "action": action, "outcome": "failed", "before_boot_id": None,
              "after_boot_id": None, "detail": "", "started": started, "finished": started, "seconds": None,
              "bmc": ""}
    before = boot_id_of(host)
    record["before_boot_id"] = before
    bmc = None
    try:
        bmc = _connected(bmc_of(host))
        if bmc is None:
            record.update(outcome="skipped", detail="no BMC in the inventory (provision_bmc_address)")
            return record
        record["bmc"] = bmc.config.address
        state = bmc.status().get("power_state")
        skip = _skip(action, before, state)
        if skip:
            record.update(outcome="skipped", detail=skip)
            return record
        bmc.power(action)
        acted = time.monotonic()
    except BmcError as exc:
        record.update(detail=" ".join(str(exc).split()))
        return record
    finally:
        if bmc is not None:
            bmc.close()
        record["finished"] = _now()
    outcome, after, detail = _confirm(host, action, before, boot_id_of, timeout_s)
    unread = "" if before else "; its boot id could not be read before (not answering SSH), so the outcome " \
                               "rests on SSH answering after"
    record.update(outcome=outcome, after_boot_id=after, detail=detail + (unread if action != "off" else ""),
                  finished=_now(), seconds=round(time.monotonic() - acted, 1))
    return record


def _connected(found):
    """A Bmc from what ``bmc_of`` gave: a BmcConfig is connected here; None stays None."""
    from provision.bmc.config import BmcConfig

    if isinstance(found, BmcConfig):
        from provision.bmc import client

        return client.connect(found, client.DEFAULT_TIMEOUT_S)
    return found


def _skip(action: str, before: str | None, state: str | None) -> str:
    if action == "on" and before:
        return f"already on: answers SSH (boot id {before})"
    if action == "off" and not before and state == "Off":
        return "already off: the BMC reports Off and the node does not answer SSH"
    return ""


def _confirm(host, action: str, before: str | None, boot_id_of: Callable, timeout_s: float):
    """(outcome, boot id after, detail): wait up to ``timeout_s`` for the node to go (off) or come back with a new
    boot id (on, cycle, reset). An off of a node that did not answer SSH before is ``unconfirmed``: its silence after
    proves nothing, and the BMC's word alone is never taken."""
    if action == "off" and before is None:
        return "unconfirmed", None, ("the node did not answer SSH before the power-off either: nothing over SSH can "
                                     "confirm it, and the BMC's word alone is not taken")
    until = time.monotonic() + timeout_s
    after = before
    while True:
        after = boot_id_of(host)
        if action == "off" and after is None:
            return "done", None, "the node stopped answering SSH"
        if action != "off" and after and after != before:
            return "done", after, f"came back with a new boot id {after}"
        if time.monotonic() >= until:
            break
        time.sleep(POLL_S)
    if action == "off":
        return "not_carried_out", after, (f"still answers SSH (boot id {after}) {timeout_s:g} s after the BMC "
                                          "accepted the power-off")
    if after and after == before:
        return "not_carried_out", after, (f"still the same boot id {after} {timeout_s:g} s after the BMC accepted "
                                          f"the power {action}: the node did not restart")
    return "not_carried_out", None, f"did not answer SSH with a boot id within {timeout_s:g} s of the power {action}"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
