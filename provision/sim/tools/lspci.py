#!/usr/bin/env python3
"""Simulated ``lspci`` for the node's GPUs and HCAs (pciutils output).

The one-line listing and the ``-vv`` block follow lspci_vvv_h100_gen5_x16_ok; the block is
cut to the lines burn-in reads (NUMA node, Express capability with LnkCap/LnkSta, driver).
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


def devices(model: dict) -> list[dict]:
    """PCI functions of the node: GPUs still on the bus and HCAs, sorted by address."""
    out = []
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


def block(dev: dict, verbose: int, domain: bool) -> str:
    """One device: the listing line, and with ``-v`` its details."""
    addr = dev["bdf"] if domain else dev["bdf"][5:]
    lines = [f"{addr} {dev['line']}"]
    if verbose:
        lines += ["\tSubsystem: NVIDIA Corporation Device 16c1" if dev["vendor"] == "10de"
                  else "\tSubsystem: Mellanox Technologies Device 0023",
                  f"\tNUMA node: {dev['numa']}"]
    if verbose >= 2:
        lines += ["\tCapabilities: [60] Express (v2) Endpoint, MSI 00"] + link_lines(dev["pcie"])
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
