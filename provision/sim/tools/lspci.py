#!/usr/bin/env python3
"""Simulated ``lspci`` for the node's GPUs and HCAs (pciutils output).

The one-line listing and the ``-vv`` block follow lspci_vvv_h100_gen5_x16_ok; the block is
cut to the lines burn-in reads (NUMA node, Express capability with LnkCap/LnkSta, driver). The model's PCIe
bridges (hwmodel ``pcie_bridges``: per switch a CPU root port, the PEX890xx upstream port and a downstream port per
device, nodefacts.py) are listed too, as ``PCI bridge`` functions with their ``Bus:`` line, their Express port
type and their ACS capability and control (pciutils lspci.c, ls-caps.c, ls-ecaps.c at
0f5b941aa5cf8b1b126ff3e4176b1c32b2158289); a GPU or HCA sits on its downstream port's secondary bus. ``-d``
filters them out by vendor like any device (NVIDIA 10de and Mellanox 15b3 keep only the endpoints).
``LnkSta`` says ``(downgraded)`` when the trained speed or width is below ``LnkCap``
(lspci_lnk_4090_riser_gen1). Options: ``-s [[domain:]bus:]dev.fn``, ``-d vendor:[device]``,
``-v``/``-vv``/``-vvv``, ``-D``, ``-n``, ``-nn`` (accepted).
"""
from __future__ import annotations

import argparse
import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

# Mellanox ConnectX PCI device ids and names (PCI ID repository, vendor 15b3).
HCA_IDS = {"MT4129": ("1021", "MT2910 Family [ConnectX-7]"), "MT4125": ("101d", "MT2892 Family [ConnectX-6 Dx]"),
           "MT4123": ("101b", "MT28908 Family [ConnectX-6]")}


# The Express capability's port type per bridge role, as lspci -vv prints it (pciutils ls-caps.c cap_express:
# "Root Port (Slot%c)", "Upstream Port", "Downstream Port (Slot%c)"; a GPU board's switch ports drive slots).
PORT_TYPES = {"root": "Root Port (Slot+)", "upstream": "Upstream Port", "downstream": "Downstream Port (Slot+)"}


def _bridges(model: dict) -> list[dict]:
    """The model's PCIe bridges (root ports, switch ports) as lspci devices; a bridge whose device fell off the bus
    stays (the port is still there)."""
    links = {f"gpu{g['index']}": g["pcie"] for g in model.get("gpus", [])}
    links.update({h["name"]: h["pcie"] for h in model.get("hcas", [])})
    # a switch's upstream link and its root port's: the fastest of its devices' (the board's lanes)
    top: dict[int, int] = {}
    for bridge in model.get("pcie_bridges") or []:
        link = links.get(bridge.get("device_of"))
        if link:
            top[bridge["switch"]] = max(top.get(bridge["switch"], 1), int(link["gen_max"]))
    out = []
    for bridge in model.get("pcie_bridges") or []:
        vendor, device, name = bridge["id"]
        gen = top.get(bridge["switch"], 5)
        # a downstream port shares its device's link (a downtrained device shows on both ends)
        link = links.get(bridge.get("device_of")) or {"gen_current": gen, "gen_max": gen, "width_current": 16,
                                                      "width_max": 16}
        out.append({"bdf": bridge["bdf"], "vendor": vendor, "device": device, "line": f"PCI bridge: {name}",
                    "subsystem": name.split(" (rev")[0], "numa": bridge.get("numa_node", 0), "driver": "pcieport",
                    "port_type": PORT_TYPES[bridge["role"]], "bridge": bridge, "pcie": link})
    return out


def devices(model: dict) -> list[dict]:
    """PCI functions of the node: its PCIe bridges, GPUs still on the bus and HCAs, sorted by address."""
    out = _bridges(model)
    for gpu in model.get("gpus", []):
        if gpu.get("present", True) and not gpu.get("fallen_off_bus"):
            dev = simhw.pci_device_id(gpu)
            out.append({"bdf": "0000:" + gpu["bus_id"].split(":", 1)[1].lower(), "vendor": "10de", "device": dev,
                        "line": f"3D controller: NVIDIA Corporation Device {dev} (rev a1)", "pcie": gpu["pcie"],
                        "numa": gpu.get("numa_node", 0), "driver": "nvidia"})
    for hca in model.get("hcas", []):
        dev, name = HCA_IDS.get(hca.get("ca_type"), HCA_IDS["MT4129"])
        out.append({"bdf": hca["pcie"]["bdf"], "vendor": "15b3", "device": dev,
                    "line": f"Infiniband controller: Mellanox Technologies {name}", "pcie": hca["pcie"],
                    "numa": hca.get("numa_node", 0), "driver": "mlx5_core"})
    return sorted(out, key=lambda d: d["bdf"])


def _gts(gen: int) -> str:
    """Link speed as lspci prints it: ``2.5GT/s``, ``32GT/s``."""
    return f"{simhw.PCIE_GTPS[int(gen)]:g}GT/s"


def link_lines(pcie: dict) -> list[str]:
    """LnkCap and LnkSta lines of the Express capability."""
    speed_ok = "downgraded" if pcie["gen_current"] < pcie["gen_max"] else "ok"
    width_ok = "downgraded" if pcie["width_current"] < pcie["width_max"] else "ok"
    return [f"\t\tLnkCap:\tPort #0, Speed {_gts(pcie['gen_max'])}, Width x{pcie['width_max']}, ASPM L1, "
            "Exit Latency L1 <4us",
            "\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+",
            f"\t\tLnkSta:\tSpeed {_gts(pcie['gen_current'])} ({speed_ok}), Width x{pcie['width_current']} ({width_ok})",
            "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-"]


def _flags(flags: dict) -> str:
    return " ".join(f"{flag}{'+' if on else '-'}" for flag, on in flags.items())


def bus_line(bridge: dict) -> str:
    """A bridge's ``Bus:`` line (lspci.c show_htype1: "Bus: primary=%02x, secondary=%02x, subordinate=%02x,
    sec-latency=%d")."""
    return (f"\tBus: primary={bridge['primary']:02x}, secondary={bridge['secondary']:02x}, "
            f"subordinate={bridge['subordinate']:02x}, sec-latency=0")


def block(dev: dict, verbose: int, domain: bool) -> str:
    """One device: the listing line, and with ``-v`` its details (order of lspci.c show_verbose: subsystem,
    NUMA node, a bridge's Bus: line, the capabilities, then the kernel driver)."""
    addr = dev["bdf"] if domain else dev["bdf"][5:]
    lines = [f"{addr} {dev['line']}"]
    bridge = dev.get("bridge")
    if verbose:
        subsystem = dev.get("subsystem") or ("NVIDIA Corporation Device 16c1" if dev["vendor"] == "10de"
                                             else "Mellanox Technologies Device 0023")
        lines += [f"\tSubsystem: {subsystem}", f"\tNUMA node: {dev['numa']}"]
        if bridge:
            lines.append(bus_line(bridge))
    if verbose >= 2:
        port = dev.get("port_type", "Endpoint")
        lines += [f"\tCapabilities: [60] Express (v2) {port}, MSI 00"] + link_lines(dev["pcie"])
        if bridge and bridge.get("acs_cap"):  # ls-ecaps.c cap_acs: ACSCap and ACSCtl, seven flags each, on -vv
            lines += ["\tCapabilities: [148 v1] Access Control Services", f"\t\tACSCap:\t{_flags(bridge['acs_cap'])}",
                      f"\t\tACSCtl:\t{_flags(bridge['acs_ctl'])}"]
    if verbose:
        lines += [f"\tKernel driver in use: {dev['driver']}", ""]
    return "\n".join(lines) + "\n"


def matches(dev: dict, slot: str | None, ident: str | None) -> bool:
    """``-s`` and ``-d`` filters."""
    if slot:
        want = slot.lower() if slot.count(":") == 2 else "0000:" + slot.lower()
        if not dev["bdf"].startswith(want.rstrip(".")):
            return False
    if ident:
        vendor, _, device = ident.lower().partition(":")
        if (vendor and vendor != dev["vendor"]) or (device and device != dev["device"]):
            return False
    return True


def main(argv: list[str]) -> int:
    """Run ``lspci ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="lspci")
    p.add_argument("-v", action="count", default=0)
    p.add_argument("-s")
    p.add_argument("-d")
    p.add_argument("-D", action="store_true")
    p.add_argument("-n", action="count", default=0)
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("lspci", model)
    chosen = [d for d in devices(model) if matches(d, args.s, args.d)]
    sys.stdout.write("".join(block(d, args.v, args.D) for d in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
