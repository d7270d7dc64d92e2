#!/usr/bin/env python3
"""``/proc/net/bonding/<bond>`` text for the node's storage bond, and a CLI printing it.

Layout of the Linux bonding driver's /proc file (drivers/net/bonding/bond_procfs.c) as in
bond0_8023ad_healthy_2x10g_lacp_pdu_details. In 802.3ad mode the active aggregator is the
one with the most slaves up; a slave whose MII is down reports speed ``Unknown``.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import simhw  # noqa: E402

MODES = {"802.3ad": "IEEE 802.3ad Dynamic link aggregation", "active-backup": "fault-tolerance (active-backup)",
         "balance-xor": "load balancing (xor)", "balance-rr": "load balancing (round-robin)"}
# LACP actor/partner keys and port state of a healthy aggregated port (bonding capture).
ACTOR_KEY, PARTNER_KEY, PORT_STATE = 21, 69, 61


def _aggregator(slaves: list[dict]) -> tuple[int | None, int]:
    """(active aggregator id, ports in it): the aggregator with most slaves up."""
    counts = Counter(s["aggregator_id"] for s in slaves if s["mii_status"] == "up")
    return counts.most_common(1)[0] if counts else (None, 0)


def _slave(s: dict, lacp: bool, system_mac: str, number: int) -> list[str]:
    """One ``Slave Interface`` section."""
    up = s["mii_status"] == "up"
    lines = ["", f"Slave Interface: {s['name']}", f"MII Status: {s['mii_status']}",
             f"Speed: {s['speed_Mbps']} Mbps" if up else "Speed: Unknown",
             "Duplex: full" if up else "Duplex: Unknown", f"Link Failure Count: {s.get('link_failures', 0)}",
             f"Permanent HW addr: {s.get('perm_hwaddr', '00:00:00:00:00:00')}", "Slave queue ID: 0"]
    if lacp:
        lines += [f"Aggregator ID: {s['aggregator_id']}", "Actor Churn State: none", "Partner Churn State: none",
                  "Actor Churned Count: 0", "Partner Churned Count: 0",
                  "details actor lacp pdu:", "    system priority: 65535", f"    system mac address: {system_mac}",
                  f"    port key: {ACTOR_KEY}", "    port priority: 255", f"    port number: {number}",
                  f"    port state: {PORT_STATE if up else 69}",
                  "details partner lacp pdu:", "    system priority: 32768",
                  f"    system mac address: {s['partner_mac']}", f"    oper key: {PARTNER_KEY}",
                  "    port priority: 32768", f"    port number: {number}",
                  f"    port state: {PORT_STATE if up else 1}"]
    return lines


def render(model: dict, name: str | None = None) -> str | None:
    """The /proc/net/bonding text of bond ``name`` (default: the model's bond), None if absent."""
    bond = (model.get("storage") or {}).get("bond")
    if not bond or (name and name != bond["name"]):
        return None
    lacp, slaves = bond["mode"] == "802.3ad", bond["slaves"]
    agg, ports = _aggregator(slaves)
    lines = ["Ethernet Channel Bonding Driver: v6.1.0-27-amd64", "",
             f"Bonding Mode: {MODES.get(bond['mode'], bond['mode'])}", "Transmit Hash Policy: layer3+4 (1)",
             f"MII Status: {'up' if ports else 'down'}", "MII Polling Interval (ms): 100",
             "Up Delay (ms): 0", "Down Delay (ms): 0", "Peer Notification Delay (ms): 0"]
    if lacp:
        partner = next((s["partner_mac"] for s in slaves if s["aggregator_id"] == agg), "00:00:00:00:00:00")
        lines += ["", "802.3ad info", "LACP active: on", "LACP rate: fast", "Min links: 0",
                  "Aggregator selection policy (ad_select): stable", "System priority: 65535",
                  f"System MAC address: {bond.get('system_mac', '00:00:00:00:00:00')}", "Active Aggregator Info:",
                  f"\tAggregator ID: {agg if agg is not None else 0}", f"\tNumber of ports: {ports}",
                  f"\tActor Key: {ACTOR_KEY}", f"\tPartner Key: {PARTNER_KEY}", f"\tPartner Mac Address: {partner}"]
    for number, s in enumerate(slaves, 1):
        lines += _slave(s, lacp, bond.get("system_mac", "00:00:00:00:00:00"), number)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Print ``/proc/net/bonding/BOND`` (default the model's bond); exit 1 if there is none."""
    p = argparse.ArgumentParser(prog="bonding")
    p.add_argument("bond", nargs="?")
    args = p.parse_args(argv)
    text = render(simhw.load(), args.bond)
    if text is None:
        print(f"cat: /proc/net/bonding/{args.bond or 'bond0'}: No such file or directory", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
