"""Simulated dmesg."""
from __future__ import annotations

import re

import dmesg

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def test_kernel_log_lines_are_printed_with_timestamps(sim):
    sim.model["kernel_log"].append(XID)
    sim.model["hcas"][0]["pcie"]["width_current"] = 8
    sim.write()
    status, out, _ = sim.run(dmesg, [])
    lines = out.splitlines()
    assert status == 0 and all(re.match(r"^\[\s*\d+\.\d{6}\] ", line) for line in lines)
    assert lines[-1].endswith(XID)
    assert "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05" in out
    assert "limited by 32.0 GT/s PCIe x8 link" in out
    _, out, _ = sim.run(dmesg, ["-T"])
    assert re.match(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ", out.splitlines()[-1])
    assert out.splitlines()[-1].endswith(XID)
