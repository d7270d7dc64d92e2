#!/usr/bin/env python3
"""Simulated ``dmesg``: a few boot lines for the node's hardware plus ``kernel_log`` lines.

Timestamps are ``[seconds.micro]`` (``[%5lu.%06lu]`` as the kernel prints them) or, with
``-T``/``--ctime``, ``[Thu Apr  4 18:03:56 2024]`` (dmesg_xid79_fallen_off_bus_smi_unknown_error).
``kernel_log`` entries are strings (the message, placed after boot) or ``{time_s, msg}``.
PCIe links trained below their capability log the kernel's "available PCIe bandwidth" line
(drivers/pci/pci.c, pcie_report_downtraining).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

# Debian 12 kernel banner (linux-image-6.1.0-27-amd64).
KERNEL = ("Linux version 6.1.0-27-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, "
          "GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01)")
# Seconds after boot at which kernel_log strings without a time start, and their spacing.
EVENTS_START_S = 3600.0
EVENTS_STEP_S = 0.012345


def _pcie_line(bdf: str, pcie: dict) -> str | None:
    """The kernel's downtraining report for a device, None when the link is at full speed."""
    if (pcie["gen_current"], pcie["width_current"]) == (pcie["gen_max"], pcie["width_max"]):
        return None
    now = simhw.pcie_Gbps(pcie["gen_current"], pcie["width_current"]) / simhw.PCIE_PROTOCOL_EFFICIENCY
    best = simhw.pcie_Gbps(pcie["gen_max"], pcie["width_max"]) / simhw.PCIE_PROTOCOL_EFFICIENCY
    gt_now, gt_best = simhw.PCIE_GTPS[pcie["gen_current"]], simhw.PCIE_GTPS[pcie["gen_max"]]
    return (f"pci {bdf}: {now:.3f} Gb/s available PCIe bandwidth, limited by {gt_now:.1f} GT/s PCIe "
            f"x{pcie['width_current']} link at {bdf} (capable of {best:.3f} Gb/s with {gt_best:.1f} GT/s "
            f"PCIe x{pcie['width_max']} link)")


def boot_lines(model: dict) -> list[tuple[float, str]]:
    """``(seconds, message)`` boot lines derived from the model."""
    out = [(0.0, KERNEL), (0.0, "Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-27-amd64 ro quiet")]
    for i, gpu in enumerate(model.get("gpus", [])):
        bdf = "0000:" + gpu["bus_id"].split(":", 1)[1].lower()
        out.append((1.2 + i * 0.001, f"pci {bdf}: [10de:{simhw.pci_device_id(gpu)}] type 00 class 0x030200"))
        line = _pcie_line(bdf, gpu["pcie"])
        if line:
            out.append((1.3 + i * 0.001, line))
    for i, hca in enumerate(model.get("hcas", [])):
        out.append((4.5 + i * 0.01, f"mlx5_core {hca['pcie']['bdf']}: firmware version: {hca['fw_ver']}"))
        line = _pcie_line(hca["pcie"]["bdf"], hca["pcie"])
        if line:
            out.append((4.6 + i * 0.01, line))
    drv = simhw.driver()
    if drv:
        out.append((12.1, "nvidia: loading out-of-tree module taints kernel."))
        out.append((12.3, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {drv['version']}  "
                          "Release Build  (dvs-builder@U16-I3-B03-4-3)"))
    return out


def events(model: dict) -> list[tuple[float, str]]:
    """``kernel_log`` entries as ``(seconds, message)``."""
    out = []
    for i, entry in enumerate(model.get("kernel_log") or []):
        if isinstance(entry, dict):
            out.append((float(entry["time_s"]), entry["msg"]))
        else:
            out.append((EVENTS_START_S + i * EVENTS_STEP_S, str(entry)))
    return out


def stamp(seconds: float, fmt: str, boot: float) -> str:
    """Timestamp prefix in the requested format."""
    if fmt == "ctime":
        return "[" + time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(boot + seconds)) + "] "
    if fmt == "iso":
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(boot + seconds)) + f",{int(seconds % 1 * 1e6):06d} "
    if fmt == "notime":
        return ""
    return f"[{int(seconds):>5}.{round(seconds % 1 * 1e6) % 1000000:06d}] "


def main(argv: list[str]) -> int:
    """Run ``dmesg ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="dmesg")
    p.add_argument("-T", "--ctime", action="store_true")
    p.add_argument("--time-format", choices=["ctime", "reltime", "delta", "notime", "iso", "raw"])
    p.add_argument("-t", "--notime", action="store_true")
    p.add_argument("-k", "--kernel", action="store_true")
    p.add_argument("-x", "--decode", action="store_true")
    p.add_argument("-l", "--level")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("dmesg", model)
    fmt = "notime" if args.notime else ("ctime" if args.ctime else (args.time_format or "raw"))
    lines = sorted(boot_lines(model) + events(model), key=lambda item: item[0])
    boot = time.time() - (lines[-1][0] + 60.0 if lines else 60.0)
    for seconds, msg in lines:
        sys.stdout.write(stamp(seconds, fmt, boot) + msg + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
