"""Port states, rate names and GUID formats shared by the simulated InfiniBand tools.

Numeric codes are the verbs enums (``enum ibv_port_state``, ``IBV_PORT_*``; physical states
from the IBTA spec, vol. 1, PortPhysicalState). Rate names: InfiniBand 4X lanes at
EDR 25, HDR 50, NDR 100, XDR 200 Gb/s per lane (IBTA roadmap).
"""
from __future__ import annotations

# ibstat state name -> (number, ibstatus word, ibv_devinfo word)
PORT_STATES = {"Down": (1, "DOWN", "PORT_DOWN"), "Initializing": (2, "INIT", "PORT_INIT"),
               "Armed": (3, "ARMED", "PORT_ARMED"), "Active": (4, "ACTIVE", "PORT_ACTIVE")}
# ibstat physical state name -> (number, ibv_devinfo word)
PHYS_STATES = {"Sleep": (1, "SLEEP"), "Polling": (2, "POLLING"), "Disabled": (3, "DISABLED"),
               "LinkUp": (5, "LINK_UP"), "LinkErrorRecovery": (6, "LINK_ERROR_RECOVERY")}
# rate in Gb/s -> (ibstatus name, lanes, per-lane Gb/s, ibv_devinfo active_speed code)
RATES = {800: ("4X XDR", 4, 200.0, 256), 400: ("4X NDR", 4, 100.0, 128), 200: ("4X HDR", 4, 50.0, 64),
         100: ("4X EDR", 4, 25.0, 32), 56: ("4X FDR", 4, 14.0, 16), 40: ("4X QDR", 4, 10.0, 4),
         50: ("2X HDR", 2, 25.0, 32), 25: ("1X EDR", 1, 25.0, 32), 10: ("4X SDR", 4, 2.5, 1)}
# ibv_devinfo active_width codes (verbs: IBV_WIDTH_1X=1, 4X=2, 8X=4, 12X=8, 2X=16)
WIDTH_CODES = {1: 1, 2: 16, 4: 2}


def port_state(hca: dict) -> tuple[int, str, str]:
    """(number, ibstatus word, ibv_devinfo word) of the HCA's port state."""
    return PORT_STATES.get(hca.get("state", "Active"), (1, "DOWN", "PORT_DOWN"))


def phys_state(hca: dict) -> tuple[int, str]:
    """(number, ibv_devinfo word) of the HCA's physical port state."""
    return PHYS_STATES.get(hca.get("physical_state", "LinkUp"), (3, "DISABLED"))


def rate_info(rate_Gbps: int) -> tuple[str, int, float, int]:
    """(name, lanes, per-lane Gb/s, speed code) for a port rate."""
    return RATES.get(int(rate_Gbps), (f"4X {rate_Gbps}G", 4, rate_Gbps / 4, 128))


def guid_colon(guid: str) -> str:
    """``0x946dae0300cde72c`` -> ``946d:ae03:00cd:e72c`` (ibv_devinfo and GID format)."""
    raw = guid[2:] if guid.startswith("0x") else guid
    raw = raw.rjust(16, "0")
    return ":".join(raw[i:i + 4] for i in range(0, 16, 4))


def sorted_hcas(model: dict) -> list[dict]:
    """HCAs in the order libibverbs lists them (by name, as strings: mlx5_0, mlx5_1, mlx5_10)."""
    return sorted(model.get("hcas", []), key=lambda h: h["name"])
