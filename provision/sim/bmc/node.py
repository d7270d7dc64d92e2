"""One simulated BMC's state beside its node: the node's model (read per request), its power switch, SEL, active
faults and password, the sessions it handed out, and the PowerState a ``bmc_power_ignored`` BMC pretends. The
Redfish service (``service``) and the IPMI endpoint (``ipmi``) both act through it, so that both protocols make the
same transitions and records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from provision.sim.bmc.power import Switch
from provision.sim.bmc.resources import View
from provision.sim.bmc.sel import Sel


@dataclass
class BmcNode:
    """One BMC: its node's name, model (read per request), power switch, SEL, active faults (kind -> record) and
    password."""

    name: str
    model: Callable[[], dict]
    switch: Switch
    sel: Sel
    faults: Callable[[], dict]
    password: str
    uuid: str = "00000000-0000-0000-0000-000000000000"

    def __post_init__(self) -> None:
        self.sessions: dict[str, str] = {}  # token -> session Id
        self.claimed: str | None = None  # the PowerState a bmc_power_ignored BMC pretends

    def power_state(self, faults: dict) -> str:
        """The PowerState this BMC reports: the node's, or the one a bmc_power_ignored BMC was asked for."""
        if "bmc_power_ignored" in faults and self.claimed:
            return self.claimed
        self.claimed = None
        return self.switch.power.state()

    def reset(self, reset_type: str, faults: dict) -> None:
        """Carry out ``reset_type`` (one of ``RESET_TYPES``), or pretend to under bmc_power_ignored."""
        if "bmc_power_ignored" in faults:
            self.sel.event(f"reset {reset_type} ignored (bmc_power_ignored)")
            self.claimed = "Off" if reset_type in ("ForceOff", "GracefulShutdown") else "On"
        else:
            self.switch.reset(reset_type)

    def view(self, faults: dict) -> View:
        return View(self.name, self.model(), self.power_state(faults), set(faults),
                    lambda: self.sel.entries(huge="sel_huge" in faults), self.uuid)
