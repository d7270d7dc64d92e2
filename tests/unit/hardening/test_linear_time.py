"""Every parser reads a 1 MiB line of each shape that makes a backtracking pattern blow up.

Nested or adjacent quantifiers over overlapping classes (``(.*?)\\s*$``, ``([^:]+?)\\s*:``,
``.*?X.*?Y``) take seconds to hours on one long line of blanks, digits, colons or repeated
tokens. The parsers are called directly (past ``parse_tool``'s line bound) after a lead-in
that takes them to their line patterns. The 2 s alarm is a guard against a hang, not a
measure of speed: a linear parse of 1 MiB takes milliseconds.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest

from provision.errors import ParseError
from provision.parsers import MAX_LINE_CHARS, parse_tool

from tests.unit.hardening._inputs import PARSERS

MIB = 2**20
GUARD_S = 2.0

# Shapes of the long line, each 1 MiB.
SHAPES = {
    "spaces": "a" + " " * MIB + "b",
    "leading-blanks": " \t" * (MIB // 2) + "x",
    "digits": "9" * MIB + "a",
    "colons": ":" * MIB,
    "colon-space": ": " * (MIB // 2),
    "word-space": "a " * (MIB // 2),
    "tokens": "1.0 " * (MIB // 4) + "x",
    "dots": "1." * (MIB // 2),
    "slashes": "1 2 3 " + "/" * MIB + " y",
    "repeated-keys": "io=1KB errors: (UUID: 1th=[ GPU 0: Link 0: " * (MIB // 42),
}
# What each parser must see first to reach the patterns that read such a line.
LEAD_INS = [
    "",
    "Bonding Mode: IEEE 802.3ad\nSlave Interface: eth0\n  Speed: ",
    "CA 'mlx5_0'\n\tPort 1:\n\t\tState: ",
    "hca_id: mlx5_0\n\tport:\t1\n\t\tstate: ",
    "[  1.0] NVRM: Xid (PCI:0000:01:00): 79, ",
    "x: (g=0): rw=write, bs=1M, ioengine=libaio, iodepth=1\nx: (groupid=0, jobs=1): err= 0: pid=1\n  write: ",
    "50.0%  proc'd: 1 (7150 Gflop/s) errors: 0 temps: ",
    "GPU 0: ",
    "# Rank  0 Group  0 Pid 1 on host device  0 [0x01] ",
    "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n 0 ",
    "Device 0: ",
    "   RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice : ",
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 ",
    "| Diagnostic | Result |\n| Memory | ",
    "NVIDIA-SMI 550.54 Driver Version: 550.54 CUDA Version: 12.4\n|====|\n| 0 ",
    "==============NVSMI LOG==============\nDriver Version : 550\nGPU 00000000:01:00.0\n    ",
    "index, temperature.gpu\n0, ",
    "\tGPU0\tGPU1\tNIC0\nGPU0\t",
    "0000:19:00.0 3D controller: NVIDIA\n\t\tLnkCap:\t",
    "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0\n     0 ",
    "<nvidia_smi_log><gpu id='x'><product_name>",
    "Cuda compilation tools, release 12.4, V",
]


class Hang(Exception):
    """The guard fired: the parse ran past GUARD_S."""


@contextmanager
def guard(what: str):
    def fire(*_):
        raise Hang(what)
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, GUARD_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_one_mib_line_of_any_shape_parses_or_is_refused_without_hanging(name):
    parse = PARSERS[name]
    for shape, line in SHAPES.items():
        for lead_in in LEAD_INS:
            try:
                with guard(f"{name} on a 1 MiB line of {shape} after {lead_in[:30]!r}"):
                    result = parse(lead_in + line)
            except ParseError:
                continue
            except Hang as hang:
                pytest.fail(f"{hang}: still parsing after {GUARD_S} s (a super-linear pattern)")
            assert isinstance(result, dict)


def test_parse_tool_refuses_a_line_over_its_bound_naming_the_bound():
    with pytest.raises(ParseError, match=rf"^x\.txt: a line is {MAX_LINE_CHARS + 1} characters, over the "
                                         rf"{MAX_LINE_CHARS} a tool's output line may have$"):
        parse_tool("bonding", "Bonding Mode: x\n" + "a" * (MAX_LINE_CHARS + 1), "x.txt")
