#!/usr/bin/env python3
"""Simulated ``ipmitool`` for the node's BMC: ``ipmitool mc info`` only (IPMI Get Device ID) from the model's
``bmc``; any other command exits 1 with ipmitool's command list (its "Commands:" usage list, as public pastes of
``ipmitool`` with no argument show it after "No command provided!").

``mc info`` layout of ipmitool 1.8 (ipmi_mc.c ipmi_mc_get_deviceid): left-aligned labels padded to 26 columns, a
" : " separator, "Additional Device Support :" with four-space-indented items, and "Aux Firmware Rev Info     : "
followed by four indented hex bytes (a public HP iLO paste and ipmitool's source agree on these labels).
"""
from __future__ import annotations

import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

NO_COMMAND = "No command provided!\n"
COMMANDS = ("Commands:\n"
            "\traw           Send a RAW IPMI request and print response\n"
            "\ti2c           Send an I2C Master Write-Read command and print response\n"
            "\tspd           Print SPD info from remote I2C device\n"
            "\tlan           Configure LAN Channels\n"
            "\tchassis       Get chassis status and set power state\n"
            "\tpower         Shortcut to chassis power commands\n"
            "\tevent         Send pre-defined events to MC\n"
            "\tmc            Management Controller status and global enables\n"
            "\tsdr           Print Sensor Data Repository entries and readings\n"
            "\tsensor        Print detailed sensor information\n"
            "\tfru           Print built-in FRU and scan SDR for FRU locators\n"
            "\tsel           Print System Event Log (SEL)\n"
            "\tuser          Configure Management Controller users\n"
            "\tchannel       Configure Management Controller channels\n"
            "\tsession       Print session information\n"
            "\tdcmi          Data Center Management Interface\n")
OPTIONS_WITH_VALUE = {"-I", "-H", "-U", "-P", "-p", "-L", "-y", "-k", "-C", "-f", "-t", "-b", "-T", "-B"}
SUPPORT = ("Sensor Device", "SDR Repository Device", "SEL Device", "FRU Inventory Device", "IPMB Event Receiver",
           "IPMB Event Generator", "Chassis Device")


def _line(label: str, value: object) -> str:
    return f"{label:<26}: {value}\n"


def mc_info(bmc: dict) -> str:
    """``ipmitool mc info`` of the model's BMC."""
    out = [_line("Device ID", bmc.get("device_id", 32)), _line("Device Revision", bmc.get("device_revision", 1)),
           _line("Firmware Revision", bmc.get("firmware_revision", "1.0")),
           _line("IPMI Version", bmc.get("ipmi_version", "2.0")),
           _line("Manufacturer ID", bmc.get("manufacturer_id", 0)),
           _line("Manufacturer Name", bmc.get("manufacturer_name", "Unknown")),
           _line("Product ID", f"{bmc.get('product_id', 0)} ({int(bmc.get('product_id', 0)):#06x})"),
           _line("Product Name", bmc.get("product_name", "Unknown")),
           _line("Device Available", "yes"), _line("Provides Device SDRs", "yes"),
           "Additional Device Support :\n"] + [f"    {item}\n" for item in SUPPORT]
    aux = bmc.get("aux_firmware_revision")
    if aux:
        out += ["Aux Firmware Rev Info     : \n"] + [f"    {byte}\n" for byte in aux]
    return "".join(out)


def main(argv: list[str]) -> int:
    """Run ``ipmitool ARGV``; returns the exit status."""
    args, skip = [], False
    for arg in argv:  # ipmitool's own options (-I open, -H host ...) come before the command: accepted
        if skip or arg.startswith("-"):
            skip = not skip and arg in OPTIONS_WITH_VALUE
            continue
        args.append(arg)
    model = simhw.load()
    simhw.hang_if_faulted("ipmitool", model)
    if args[:2] == ["mc", "info"] and model.get("bmc"):
        sys.stdout.write(mc_info(model["bmc"]))
        return 0
    sys.stderr.write((NO_COMMAND if not args else "") + COMMANDS)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
