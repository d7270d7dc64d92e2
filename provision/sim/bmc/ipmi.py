"""IPMI LAN (RMCP+, IPMI v2.0) for the simulated BMCs: pyghmi's ``pyghmi.ipmi.bmc.Bmc`` per node on UDP 623 of
the BMC address, so that ``ipmitool -I lanplus -H ADDR -U admin -E chassis power status|on|off|cycle|reset`` and
``mc info`` work. Chassis control (IPMI v2.0 spec, 28.3 "Chassis Control": 0 down, 1 up, 2 cycle, 3 hard reset,
5 soft shutdown) maps to the Redfish ResetTypes, so both protocols make the same transitions, SEL entries and log
lines. Get Device ID (20.1) answers from the node's model (``nodefacts.BMC``, as the in-node ``ipmitool mc info``).
"""
from __future__ import annotations

import threading
import uuid

from pyghmi.ipmi.bmc import Bmc

from provision.sim.bmc.node import BmcNode

PORT = 623


class NodeBmc(Bmc):
    """One node's IPMI endpoint over its ``BmcNode``."""

    def __init__(self, node: BmcNode, address: str, port: int = PORT) -> None:
        super().__init__({"admin": node.password}, port=port, address=address, bmcuuid=uuid.UUID(node.uuid))
        self.node = node

    def get_power_state(self) -> str:
        return self.node.power_state(self.node.faults()).lower()

    def _control(self, reset_type: str) -> int:
        self.node.reset(reset_type, self.node.faults())
        return 0

    def power_off(self) -> int:
        return self._control("ForceOff")

    def power_on(self) -> int:
        return self._control("On")

    def power_cycle(self) -> int:
        return self._control("PowerCycle")

    def power_reset(self) -> int:
        return self._control("ForceRestart")

    def power_shutdown(self) -> int:
        return self._control("GracefulShutdown")

    def get_system_guid(self) -> uuid.UUID:
        return uuid.UUID(self.node.uuid)

    def send_device_id(self, session) -> None:
        """Get Device ID's 15 bytes (IPMI v2.0 table 20-2): manufacturer 3 bytes and product 2 bytes little-endian,
        firmware minor in BCD (ipmitool prints major.minor with the minor as hex)."""
        ident = self.node.model().get("bmc") or {}
        major, _, minor = str(ident.get("firmware_revision", "1.0")).partition(".")
        mfg, product = int(ident.get("manufacturer_id", 0)), int(ident.get("product_id", 0))
        aux = [int(str(b), 16) for b in ident.get("aux_firmware_revision", ["0"] * 4)]
        data = [int(ident.get("device_id", 32)), int(ident.get("device_revision", 1)), int(major) & 0x7F,
                int(minor or "0", 16), 0x02, 0xBF, mfg & 0xFF, (mfg >> 8) & 0xFF, (mfg >> 16) & 0x0F,
                product & 0xFF, (product >> 8) & 0xFF, *aux]
        session.send_ipmi_response(data=data)


def serve(nodes: list[BmcNode], addresses: list[str], port: int = PORT) -> list[NodeBmc]:
    """Start an IPMI endpoint per node at its BMC address, all served by one pyghmi event loop thread."""
    bmcs = [NodeBmc(node, address, port) for node, address in zip(nodes, addresses)]
    threading.Thread(target=Bmc.listen, kwargs={"timeout": 30}, name="ipmi", daemon=True).start()
    return bmcs
