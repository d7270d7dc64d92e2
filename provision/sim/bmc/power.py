"""What a simulated BMC switches: a node's power, behind one small protocol so that the Redfish service runs over a
real rack node (``provision.sim.bmcd.RackPower``: ``rack.stop_node``/``rack.start_node``) or over nothing at all
(``FakePower``, for a fast service test), and the transitions every Reset makes (DSP0268 ComputerSystem ResetType
semantics).
"""
from __future__ import annotations

import threading
from typing import Protocol

from provision.sim.bmc.sel import Sel


class PowerController(Protocol):
    def state(self) -> str:
        """"On" or "Off"."""

    def on(self) -> None: ...

    def off(self) -> None: ...


class FakePower:
    """A switch and nothing behind it."""

    def __init__(self, on: bool = True) -> None:
        self.is_on = on

    def state(self) -> str:
        return "On" if self.is_on else "Off"

    def on(self) -> None:
        self.is_on = True

    def off(self) -> None:
        self.is_on = False


def transitions(reset_type: str, state: str) -> list[str]:
    """The power steps ("off", "on") a Reset of ``reset_type`` makes from ``state``. A restart or cycle of a node
    that is off powers it on, as bmcweb's PowerCycle of an off host does."""
    if reset_type == "On":
        return ["on"] if state == "Off" else []
    if reset_type in ("ForceOff", "GracefulShutdown"):
        return ["off"] if state == "On" else []
    return ["off", "on"] if state == "On" else ["on"]


class Switch:
    """One node's power as its BMC drives it: one Reset at a time, each step recorded in the SEL and the BMC log."""

    def __init__(self, power: PowerController, sel: Sel) -> None:
        self.power, self.sel = power, sel
        self.lock = threading.Lock()

    def reset(self, reset_type: str) -> None:
        with self.lock:
            self.sel.event(f"reset {reset_type}")
            for step in transitions(reset_type, self.power.state()):
                if step == "off":
                    self.power.off()
                else:
                    self.power.on()
                self.sel.add(f"power_{step}")
                self.sel.event(f"power_{step}")
