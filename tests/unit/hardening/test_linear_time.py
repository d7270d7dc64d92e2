"""Every parser reads a 1 MiB line of each shape that makes a backtracking pattern blow up.

Nested or adjacent quantifiers over overlapping classes (``(.*?)\\s*$``, ``([^:]+?)\\s*:``,
``.*?X.*?Y``) take seconds to hours on one long line of blanks, digits, colons or repeated
tokens. The parsers are called directly (past ``parse_tool``'s line bound) after a lead-in
that takes them to their line patterns; the checks' own parsers, which read only what
``parse_tool`` admitted, get lines just under ``MAX_LINE_CHARS``.

The guard against a hang counts this process's CPU time (``ITIMER_PROF``), never the wall clock, so a
busy machine cannot fail it: waiting for a CPU costs no CPU time. GUARD_CPU_S is generous: the slowest
linear parse here took 1.5 CPU s (perftest, a 1 MiB line of tokens after its lead-in; every case 29 CPU s
in all, measured on the 2-core CI machine), while the super-linear patterns these inputs provoke take
minutes to hours.
"""
from __future__ import annotations

import signal
import time
from contextlib import contextmanager

import pytest

from provision.errors import ParseError
from provision.parsers import MAX_LINE_CHARS, parse_tool

from tests.unit.hardening._inputs import PARSERS

MIB = 2**20
GUARD_CPU_S = 10.0

# Shapes of the long line, n characters each.
SHAPES = {
    "spaces": lambda n: "a" + " " * n + "b",
    "leading-blanks": lambda n: " \t" * (n // 2) + "x",
    "digits": lambda n: "9" * n + "a",
    "colons": lambda n: ":" * n,
    "colon-space": lambda n: ": " * (n // 2),
    "word-space": lambda n: "a " * (n // 2),
    "tokens": lambda n: "1.0 " * (n // 4) + "x",
    "dots": lambda n: "1." * (n // 2),
    "slashes": lambda n: "1 2 3 " + "/" * n + " y",
    "repeated-keys": lambda n: "io=1KB errors: (UUID: 1th=[ GPU 0: Link 0: " * (n // 42),
}
# What a parser must see first to reach the patterns that read such a line.
LEAD_INS = {
    "bond": "Bonding Mode: IEEE 802.3ad\nSlave Interface: eth0\n  Speed: ",
    "ibstat": "CA 'mlx5_0'\n\tPort 1:\n\t\tState: ",
    "ibstatus": "Infiniband device 'mlx5_0' port 1 status:\n\tstate: ",
    "ibv_devinfo": "hca_id: mlx5_0\n\tport:\t1\n\t\tstate: ",
    "xid": "[  1.0] NVRM: Xid (PCI:0000:01:00): 79, ",
    "fio": "x: (g=0): rw=write, bs=1M, ioengine=libaio, iodepth=1\nx: (groupid=0, jobs=1): err= 0: pid=1\n  write: ",
    "progress": "50.0%  proc'd: 1 (7150 Gflop/s) errors: 0 temps: ",
    "gpu": "GPU 0: ",
    "link": "GPU 0: NVIDIA A100 (UUID: GPU-1)\n\t Link 0: ",
    "rank": "# Rank  0 Group  0 Pid 1 on host device  0 [0x01] ",
    "nccl_row": "#  size  count  type  redop  root  time  algbw  busbw #wrong\n  1024 256 float sum -1 ",
    "running": "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n 0 ",
    "device": "Device 0: ",
    "perftest": "   RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice : ",
    "bytes": " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 ",
    "dcgmi": "| Diagnostic | Result |\n| Memory | ",
    "table": "NVIDIA-SMI 550.54 Driver Version: 550.54 CUDA Version: 12.4\n|====|\n| 0 ",
    "query": "==============NVSMI LOG==============\nDriver Version : 550\nGPU 00000000:01:00.0\n    ",
    "csv": "index, temperature.gpu\n0, ",
    "topo": "\tGPU0\tGPU1\tNIC0\nGPU0\t",
    "lspci": "0000:19:00.0 3D controller: NVIDIA\n\t\tLnkCap:\t",
    "p2p": "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
           "   D\\D     0\n     0 ",
    "p2p_device": "Device: 0, ",
    "xml": "<nvidia_smi_log><gpu id='x'><product_name>",
    "nvcc": "Cuda compilation tools, release 12.4, V",
    "package": "libnccl2 ",
    "ibnet_switch": '#\n# Topology file: x\nSwitch\t36 "S-e41d2d030003e470"\t\t# "',
    "imex_node": "Nodes:\nNode #0   - ",
    "mndiag_meta": "Multi-node diagnostic failed.\n|-----  Metadata  ----------+" + "-" * 48 + "|\n| ",
    "mndiag_host": "Successfully ran multi-node diagnostic.\n|-----  Host Details  ------+" + "-" * 48 + "|\n"
                   "| Host 0                    | Pass" + " " * 43 + "|\n| ",
    "imex_matrix": "Nodes:\nNode #0   - 10.0.0.1 - READY\n\n Nodes From\\To  0\n       0        ",
    "dmi_bios": "# dmidecode 3.5\nHandle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n\tVersion: ",
    "ipmi_mc": "Device ID                 : 32\nFirmware Revision         : ",
    "ipmi_aux": "Firmware Revision         : 1.74\nAux Firmware Rev Info     :\n    ",
    "proc_module": "nvidia 54300672 67 ",
    "grep_path": "/sys/kernel/iommu_groups/7/type:",
    "redfish_status": '{"protocol": "redfish", "what": "status", "system": {"PowerState": "',
    "redfish_sel": '{"protocol": "redfish", "what": "sel", "entries": [{"Severity": "Critical", "Message": "',
    "redfish_sensors": '{"protocol": "redfish", "what": "sensors", "sensors": [{"Id": "t", "Reading": ',
    "redfish_firmware": '{"protocol": "redfish", "what": "firmware", "firmware": [{"Id": "BMC", "Version": "',
    "ibnet_port": 'Switch 36 "S-e41d2d030003e470" # "x" base port 0 lid 1 lmc 0\n[1]\t"S-e41d2d030003e470"[2]\t# ',
}
# Parser -> its lead-ins (each parser also reads the bare line).
READS = {
    "bonding": ["bond"],
    "ibstat": ["ibstat", "ibstatus", "ibv_devinfo"], "ibstatus": ["ibstatus"], "ibv_devinfo": ["ibv_devinfo"],
    "dmesg-xid": ["xid"], "fio": ["fio"],
    "gpu-burn": ["progress", "gpu"], "dcgmi-diag": ["dcgmi"],
    "nvidia-smi-nvlink": ["gpu", "link"],
    "nccl-tests": ["rank", "nccl_row"],
    "nvbandwidth": ["running", "device"],
    "perftest": ["perftest", "bytes"],
    "nvidia-smi": ["table"], "nvidia-smi-q": ["query"], "nvidia-smi-csv": ["csv"],
    "nvidia-smi-topo": ["topo"], "lspci": ["lspci"],
    "p2pBandwidthLatencyTest": ["p2p", "p2p_device"], "nvidia-smi-qx": ["xml"],
    "nvcc": ["nvcc"], "package-query": ["package"], "nvidia-smi-driver": [],
    "ibnetdiscover": ["ibnet_switch", "ibnet_port"],
    "nvidia-imex-ctl": ["imex_node", "imex_matrix"], "imex-channels": [],
    "dcgmi-mndiag": ["mndiag_meta", "mndiag_host"],
    "dmidecode": ["dmi_bios"], "ipmitool-mc-info": ["ipmi_mc", "ipmi_aux"], "uname-r": [], "proc-cmdline": [],
    "proc-modules": ["proc_module"], "grep-h": ["grep_path"],
    "redfish-status": ["redfish_status"], "redfish-sel": ["redfish_sel"], "redfish-sensors": ["redfish_sensors"],
    "redfish-firmware": ["redfish_firmware"],
}


class Hang(Exception):
    """The guard fired: the parse used more than its CPU seconds."""


@contextmanager
def guard(what: str, cpu_s: float = GUARD_CPU_S):
    """Raise Hang once this process has used ``cpu_s`` CPU seconds (user and system) inside the block."""
    def fire(*_):
        raise Hang(what)
    previous = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def test_the_guard_fires_on_cpu_time_spent_and_not_on_time_waited():
    with pytest.raises(Hang):
        with guard("a busy loop", cpu_s=0.2):
            while True:
                pass
    with guard("a sleep", cpu_s=0.2):
        time.sleep(0.5)  # half a second waited, no CPU used: what a busy machine adds


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_one_mib_line_of_any_shape_parses_or_is_refused_without_hanging(name):
    parse = PARSERS[name]
    size = MIB
    for shape, make in SHAPES.items():
        line = make(size)
        for lead_in in [""] + [LEAD_INS[key] for key in READS[name]]:
            try:
                with guard(f"{name} on a {len(line)}-character line of {shape} after {lead_in[:30]!r}"):
                    result = parse(lead_in + line)
            except ParseError:
                continue
            except Hang as hang:
                pytest.fail(f"{hang}: still parsing after {GUARD_CPU_S} CPU s (a super-linear pattern)")
            assert isinstance(result, dict)


# Many-line texts of 256 KiB that made a parser quadratic in its number of lines: a list copied
# or scanned per line (a CA's fields per port, a slice of the rest per table, `in` on a list of
# codes or columns), or ``^[^:]*`` / ``^\s*`` under re.M running from every line start to the end.
K = 2**18
MANY_LINES = {
    "ca-fields-then-ports": ("CA 'x'\n" + "".join(f"k{i}: v\n" for i in range(K // 20)) + "\tPort 1:\n" * (K // 20),
                             ["ibstat", "ibstatus", "ibv_devinfo"]),
    "distinct-nccl-codes": ("".join(f"NCCL WARN x -> {i}\n" for i in range(K // 20)),
                            ["nccl-tests"]),
    "result-headers": ("#bytes\n" * (K // 7), ["perftest"]),
    "lnkcap-lines": ("LnkCap: x\n" * (K // 10), ["lspci"]),
    "lines-without-colons": ("a\n" * (K // 4), sorted(PARSERS)),
    "empty-lines": ("\n" * (K // 4) + "| Diagnostic | Result |", sorted(PARSERS)),
    "topo-columns": ("GPU0\t" + "\t".join(f"GPU{i}" for i in range(1, K // 12)) + "\n" + "x\n" * (K // 4),
                     ["nvidia-smi-topo"]),
    "dcgmi-continuations": ("| Diagnostic | Result |\n| Memory | Pass |\n" + "|  | x |\n" * (K // 9),
                            ["dcgmi-diag"]),
    "deep-xml": ("<nvidia_smi_log>" + "<a>" * (K // 3), ["nvidia-smi-qx"]),
}


@pytest.mark.parametrize("shape", sorted(MANY_LINES))
def test_many_lines_parse_or_are_refused_without_hanging(shape):
    text, names = MANY_LINES[shape]
    for name in names:
        try:
            with guard(f"{name} on {shape}"):
                assert isinstance(PARSERS[name](text), dict)
        except ParseError:
            continue
        except Hang as hang:
            pytest.fail(f"{hang}: still parsing after {GUARD_CPU_S} CPU s (quadratic in the number of lines)")


def test_every_parser_has_its_lead_ins():
    assert sorted(READS) == sorted(PARSERS)


def test_parse_tool_refuses_a_line_over_its_bound_naming_the_bound():
    with pytest.raises(ParseError, match=rf"^x\.txt: a line is {MAX_LINE_CHARS + 1} characters, over the "
                                         rf"{MAX_LINE_CHARS} a tool's output line may have$"):
        parse_tool("bonding", "Bonding Mode: x\n" + "a" * (MAX_LINE_CHARS + 1), "x.txt")
