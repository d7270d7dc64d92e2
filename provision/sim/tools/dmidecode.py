#!/usr/bin/env python3
"""Simulated ``dmidecode`` for the model's BIOS and system (``-t bios``, ``-t system``, ``-s KEYWORD``).

Layout of dmidecode 3.4 (Debian 12's) as real hosts print it: the "# dmidecode 3.4", "Getting SMBIOS data from
sysfs." and "SMBIOS 3.5.0 present." header, then per structure "Handle 0x0000, DMI type 0, 26 bytes", its name
("BIOS Information", "System Information") and tab-indented fields (public dmidecode -t bios / -t system pastes;
dmidecode.c dmi_decode). ``-t bios`` shows types 0 and 13, ``-t system`` types 1, 12, 15, 23 and 32
(dmidecode(8), "-t": keyword -> types); the simulator has types 0, 1 and 32. Without ``-t``/``-s`` it prints
them all. ``-s`` prints one string (bios-vendor, bios-version, bios-release-date, system-manufacturer,
system-product-name, system-serial-number, system-uuid). The values are the model's (hwmodel: ``bios``,
``system``).
"""
from __future__ import annotations

import argparse
import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

HEADER = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.5.0 present.\n"
KEYWORD_TYPES = {"bios": (0, 13), "system": (1, 12, 15, 23, 32), "baseboard": (2, 10, 41), "chassis": (3,),
                 "processor": (4,), "memory": (5, 6, 16, 17), "cache": (7,), "connector": (8,), "slot": (9,)}
STRINGS = {"bios-vendor": ("bios", "vendor"), "bios-version": ("bios", "version"),
           "bios-release-date": ("bios", "release_date"), "system-manufacturer": ("system", "manufacturer"),
           "system-product-name": ("system", "product_name"), "system-serial-number": ("system", "serial_number"),
           "system-uuid": ("system", "uuid")}


def structures(model: dict) -> dict[int, str]:
    """DMI type -> its printed structure (handle line, name, fields)."""
    bios, system = model.get("bios") or {}, model.get("system") or {}
    return {
        0: ("Handle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n"
            f"\tVendor: {bios.get('vendor', 'Not Specified')}\n\tVersion: {bios.get('version', 'Not Specified')}\n"
            f"\tRelease Date: {bios.get('release_date', 'Not Specified')}\n\tAddress: 0xF0000\n"
            "\tRuntime Size: 64 kB\n\tROM Size: 64 MB\n\tCharacteristics:\n\t\tPCI is supported\n"
            "\t\tBIOS is upgradeable\n\t\tBIOS shadowing is allowed\n\t\tBoot from CD is supported\n"
            "\t\tSelectable boot is supported\n\t\tACPI is supported\n\t\tUSB legacy is supported\n"
            "\t\tBIOS boot specification is supported\n\t\tTargeted content distribution is supported\n"
            "\t\tUEFI is supported\n"
            f"\tBIOS Revision: {bios.get('revision', '5.32')}\n"),
        1: ("Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n"
            f"\tManufacturer: {system.get('manufacturer', 'Not Specified')}\n"
            f"\tProduct Name: {system.get('product_name', 'Not Specified')}\n\tVersion: Not Specified\n"
            f"\tSerial Number: {system.get('serial_number', 'Not Specified')}\n"
            f"\tUUID: {system.get('uuid', 'Not Settable')}\n\tWake-up Type: Power Switch\n"
            f"\tSKU Number: {system.get('product_name', 'Not Specified')}\n"
            f"\tFamily: {system.get('family', 'Not Specified')}\n"),
        32: "Handle 0x0020, DMI type 32, 11 bytes\nSystem Boot Information\n\tStatus: No errors detected\n",
    }


def main(argv: list[str]) -> int:
    """Run ``dmidecode ARGV``; returns the exit status."""
    p = argparse.ArgumentParser(prog="dmidecode")
    p.add_argument("-t", "--type", action="append", default=[])
    p.add_argument("-s", "--string")
    p.add_argument("-q", "--quiet", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("dmidecode", model)
    if args.string:
        where = STRINGS.get(args.string)
        if where is None:
            sys.stderr.write(f"Invalid string keyword: {args.string}\n")
            return 2
        print((model.get(where[0]) or {}).get(where[1], "Not Specified"))
        return 0
    wanted: set[int] = set()
    for keyword in args.type:
        for item in keyword.split(","):
            if item.isdigit():
                wanted.add(int(item))
            elif item in KEYWORD_TYPES:
                wanted.update(KEYWORD_TYPES[item])
            else:
                sys.stderr.write(f"Invalid type keyword: {item}\n")
                return 2
    chosen = [text for dmi_type, text in structures(model).items() if not wanted or dmi_type in wanted]
    sys.stdout.write(("" if args.quiet else HEADER + "\n") + "\n".join(chosen) + ("\n" if chosen else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
