"""``PARSERS`` and ``parse_tool``: names, one-line errors, and refusal of other tools' output."""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from provision import parsers
from provision.errors import ParseError
from provision.parsers import PARSERS, parse_tool

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
CONTRACT_TOOLS = {"nvidia-smi", "nvidia-smi-q", "nvidia-smi-qx", "nvidia-smi-csv", "nvidia-smi-topo",
                  "nvidia-smi-nvlink", "nccl-tests", "perftest", "ibstat", "ibstatus", "ibv_devinfo",
                  "dcgmi-diag", "nvbandwidth", "p2pBandwidthLatencyTest", "gpu-burn", "dmesg-xid",
                  "lspci", "bonding", "fio", "ibnetdiscover", "nvidia-smi-driver", "nvcc", "package-query",
                  "nvidia-imex-ctl", "imex-channels", "dcgmi-mndiag", "dmidecode", "ipmitool-mc-info", "uname-r",
                  "proc-cmdline", "proc-modules", "grep-h", "redfish-status", "redfish-sel", "redfish-sensors",
                  "redfish-firmware"}
# grep -H finding nothing prints nothing: its empty output is a result, not a refusal.
EMPTY_IS_OUTPUT = {"grep-h"}

# Sample stem prefix -> the tools that may accept it. ibstat/ibstatus/ibv_devinfo share
# one parser; the Xid paste holds nvidia-smi's own "Unable to determine the device
# handle" error, which is nvidia-smi output.
ACCEPTED_BY = {
    "bond0": {"bonding"}, "dcgmi": {"dcgmi-diag"}, "dmesg_xid48": {"dmesg-xid"},
    "dmesg_xid79": {"dmesg-xid", "nvidia-smi"}, "fio": {"fio"}, "gpu_burn": {"gpu-burn"},
    "ib_": {"perftest"}, "ibnetdiscover": {"ibnetdiscover"},
    "ibstat": {"ibstat", "ibstatus", "ibv_devinfo"}, "lspci": {"lspci"},
    "nccl": {"nccl-tests"}, "nvbandwidth": {"nvbandwidth"}, "nvlink": {"nvidia-smi-nvlink"},
    "p2p": {"p2pBandwidthLatencyTest"}, "smi_q_": {"nvidia-smi-q"}, "smi_query_csv": {"nvidia-smi-csv"},
    "smi_qx": {"nvidia-smi-qx"}, "smi_table": {"nvidia-smi"}, "topo": {"nvidia-smi-topo"},
    "nvidia_smi_qx": {"nvidia-smi-qx"}, "ibv_devinfo": {"ibstat", "ibstatus", "ibv_devinfo"},
    "dmidecode": {"dmidecode"}, "ipmitool_mc": {"ipmitool-mc-info"}, "proc_modules": {"proc-modules"},
    "proc_cmdline": {"proc-cmdline"},
}


def test_parsers_cover_the_contract() -> None:
    assert set(PARSERS) == CONTRACT_TOOLS


def test_parsers_come_from_the_modules_declarations() -> None:
    for tool, parse in PARSERS.items():
        module = importlib.import_module(parse.__module__)
        assert tool in module.TOOLS and parse is getattr(module, "PARSES", {}).get(tool, module.parse)


def _module(name: str, tools: object) -> ModuleType:
    module = ModuleType(f"provision.parsers.{name}")
    module.TOOLS = tools  # type: ignore[attr-defined]  # a stand-in parser module built at run time
    module.parse = lambda text: {"tool": name}  # type: ignore[attr-defined]
    return module


def test_a_tool_claimed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'ibstat' is claimed by both provision.parsers.a and provision.parsers.b"):
        parsers._registry([_module("a", ("ibstat",)), _module("b", ("lspci", "ibstat"))])


@pytest.mark.parametrize("tools", [None, (), "ibstat", ["ibstat"], (1,)])
def test_a_parser_module_must_declare_its_tools(tools: object) -> None:
    with pytest.raises(ValueError, match="provision.parsers.a needs TOOLS"):
        parsers._registry([_module("a", tools)])


def test_unknown_tool_lists_known_tools() -> None:
    with pytest.raises(ParseError) as caught:
        parse_tool("nvidia-smi-xml", "x", "out.txt")
    message = str(caught.value)
    assert message.startswith("out.txt: unknown tool 'nvidia-smi-xml'")
    assert "nvidia-smi-qx" in message and "\n" not in message


def test_error_names_source_and_what_is_missing() -> None:
    with pytest.raises(ParseError) as caught:
        parse_tool("nvidia-smi-q", "just some text\n", "results.txt")
    assert str(caught.value) == "results.txt: not nvidia-smi -q output: no 'Driver Version' line"


@pytest.mark.parametrize("tool", sorted(CONTRACT_TOOLS))
def test_empty_and_prose_refused(tool: str) -> None:
    for text in ("", "   \n", "Hello,\nthis is a note about the rack, not tool output.\n"):
        if tool in EMPTY_IS_OUTPUT and not text.strip():
            assert parse_tool(tool, text, "note.txt")["files"] == {}
            continue
        with pytest.raises(ParseError) as caught:
            parse_tool(tool, text, "note.txt")
        assert str(caught.value).startswith("note.txt: not ") and "\n" not in str(caught.value)


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.txt")), ids=lambda p: p.stem)
def test_other_tools_refuse_sample(path: Path) -> None:
    accepted = next(tools for prefix, tools in ACCEPTED_BY.items() if path.stem.startswith(prefix))
    text = path.read_text()
    for tool in sorted(CONTRACT_TOOLS - accepted):
        with pytest.raises(ParseError):
            parse_tool(tool, text, path.name)
    for tool in accepted:
        assert parse_tool(tool, text, path.name)["tool"] in accepted | {tool}
