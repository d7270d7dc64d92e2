"""What the burn-in engine asks of the nodes' BMCs, out of band: the protocol ``provision.bmc.access`` implements.

The engine reaches a node two ways: over SSH (``provision.engine.transport``) and through its BMC, from the
controller. It needs three things of the BMC, and nothing more:

- ``connect(host, booted)``: a ``Connection`` whose ``run(["bmc", WHAT], timeout_s)`` answers a check's BMC step
  (``Step.via`` "bmc") with the BMC's JSON, its event log from ``booted`` (when the node last booted, as it said over
  SSH) or the run's start, whichever is earlier; None when the inventory names no BMC for the host;
- ``view(host)``: one line of what the BMC says of a node that does not answer over SSH: its power state, its
  health and its last event-log entries ('' with no BMC; the BMC's own failure, said in the line, when it does not
  answer). It goes into the finding of every check the node could not run;
- ``power_cycle(hosts, say, known)``: power-cycle the hung nodes ``hosts`` (``burnin --recover``), each confirmed by a
  boot id read over SSH other than the one it had (``known``: host -> the boot id the run read when it reached the
  node, for a node that no longer answers), never by the BMC's word alone (``provision.bmc.power``); one ``Cycled``
  per host.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Mapping, Protocol, Sequence

from provision.engine.transport import Connection
from provision.inventory import Host


@dataclass(frozen=True)
class Cycled:
    """One node's power cycle: ``outcome`` done (it came back: a boot id other than ``before_boot_id``, read over
    SSH), not_carried_out (the BMC accepted the action and the node did not go down or come back), failed (the BMC
    refused or did not answer) or skipped; ``detail`` one line; ``seconds`` from the action to the new boot id."""

    host: str
    outcome: str
    detail: str
    before_boot_id: str | None = None
    after_boot_id: str | None = None
    seconds: float | None = None
    bmc: str = ""


class OutOfBand(Protocol):
    """The nodes' BMCs as the engine reaches them (module docstring)."""

    def connect(self, host: Host, booted: datetime | None = None) -> Connection | None:
        ...

    def view(self, host: Host) -> str:
        ...

    def power_cycle(self, hosts: Sequence[Host], say: Callable[[str], None],
                    known: Mapping[str, str] | None = None) -> list[Cycled]:
        ...
