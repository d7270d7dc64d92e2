"""Parse ``nvidia-smi -q`` text (the "==NVSMI LOG==" report).

The report is read as an indentation tree, so a key is always looked up under its
section: "Power Draw" is taken from "GPU Power Readings" (535+) or "Power Readings"
(older drivers), never from "Module Power Readings"; repeated keys never overwrite.

ECC naming across driver branches, volatile counters:
- 535+: "SRAM Uncorrectable" or the split "SRAM Uncorrectable Parity" + "SRAM
  Uncorrectable SEC-DED" (summed), "DRAM Uncorrectable";
- 450-530: "SRAM Uncorrectable", "DRAM Uncorrectable";
- older: "Double Bit" / "Device Memory" (DRAM) and "Double Bit" / "Total" minus
  "Device Memory" (on-chip SRAM).
Power "Power Draw", or "Instantaneous Power Draw" / "Average Power Draw" (545+).

Fabric ("Fabric": State, Status, CliqueId, ClusterUUID, Health/Summary, Health/Bandwidth),
"GPU Recovery Action", lost GPUs and the firmware and settings fields ("VBIOS Version", "Inforom
Version / Image Version", "GSP Firmware Version", "MIG Mode / Current", "ECC Mode / Current", "Current
Power Limit" or older "Power Limit"/"Enforced Power Limit", "Default"/"Max Power Limit", "Applications
Clocks" and "Default Applications Clocks" / Graphics, Memory) and PCIe "Replays Since Reset" / "Replay Number
Rollovers" as in ``smi_xml`` (same contract keys).

Units: temperature C, power W. "N/A" is None. Raises ParseError when no
"Driver Version : ..." line is present. ``complete`` is false when fewer GPU
sections than "Attached GPUs" are present or the last one stops early.
"""
from __future__ import annotations

import re

from provision.parsers import _smi_common as common
from provision.parsers._util import clean, integer, lines, non_negative, refuse, require_text

TOOL = "nvidia-smi-q"
TOOLS = (TOOL,)
_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


def parse(text: str) -> dict:
    """Parse ``nvidia-smi -q`` text into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi -q")
    top, sections = _split(lines(text))
    if "driver version" not in top:
        raise refuse("nvidia-smi -q", "no 'Driver Version' line")
    trees = [(bus_id, _tree(body)) for bus_id, body in sections]
    gpus = [common.checked(_gpu(bus_id, tree)) for bus_id, tree in trees]
    gpus += common.unreachable(text, gpus, lambda bus: _gpu(bus, {}))
    attached = non_negative(integer(top.get("attached gpus")), "Attached GPUs")
    # -q ends every GPU with "Processes"; a -d subset has none anywhere.
    last_closed = not trees or "processes" in trees[-1][1] or "processes" not in trees[0][1]
    return {
        "tool": TOOL,
        "complete": common.complete(gpus, attached, last_closed),
        "driver_version": clean(top.get("driver version")),
        "cuda_version": clean(top.get("cuda version")),
        "attached_gpus": attached,
        "gpus": gpus,
    }


def _split(rows: list[str]) -> tuple[dict, list[tuple[str, list[str]]]]:
    """Top-level "key : value" pairs and the (bus id, lines) of each GPU section."""
    top: dict[str, str] = {}
    sections: list[tuple[str, list[str]]] = []
    for row in rows:
        gpu = _GPU.match(row)
        if gpu:
            sections.append((gpu.group(1), []))
        elif sections and row[:1].isspace():
            sections[-1][1].append(row)
        else:
            pair = _key_value(row)
            if pair and not row[:1].isspace():
                top.setdefault(pair[0].lower(), (pair[1] or "").strip())
    return top, sections


def _tree(body: list[str]) -> dict:
    """Nested dict of one GPU section by indentation; keys lower-case; first key wins."""
    root: dict = {}
    stack: list[tuple[int, dict]] = [(-1, root)]
    for row in body:
        if not row.strip():
            continue
        indent = len(row) - len(row.lstrip())
        pair = _key_value(row)
        key = (pair[0] if pair else row.strip()).lower()
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if pair and pair[1] is not None and pair[1].strip():
            parent.setdefault(key, pair[1].strip())
            continue
        child = parent.setdefault(key, {})
        if isinstance(child, dict):
            stack.append((indent, child))
    return root


def _key_value(row: str) -> tuple[str, str | None] | None:
    """(key, value or None) of a "Key : value" line: the key ends at the first colon followed by
    a blank or the line's end ("Bus Id : 00000000:01:00.0"); None for a line without one.

    String operations: ``^(\\s*)(\\S.*?)\\s*:`` is quadratic on a long run of blanks.
    """
    text = row.lstrip()
    colon = text.find(":", 1)
    while colon >= 0:
        after = text[colon + 1:colon + 2]
        if not after or after.isspace():
            return text[:colon].rstrip(), text[colon + 2:] if after else None
        colon = text.find(":", colon + 1)
    return None


def _gpu(bus_id: str, tree: dict) -> dict:
    """The contract's record for one GPU section."""
    get = common.getter(tree)
    record = {
        "bus_id": get("pci", "bus id") or bus_id,
        "name": get("product name"),
        **common.ecc(get, "ecc errors", common.TEXT_ECC),
        "remapped_rows": common.remapped(get, "remapped rows", common.TEXT_REMAP),
        "retired_pages_pending": common.retired_pending(get, "retired pages", common.TEXT_RETIRED),
        "retired_pages": common.retired_pages(get, "retired pages", common.TEXT_RETIRED),
        "temp_C": common.number(get("temperature", "gpu current temp")),
        "power_W": common.first_number(get, common.TEXT_POWER),
        "pcie_gen_current": common.number(get("pci", "gpu link info", "pcie generation", "current")),
        "pcie_gen_max": common.number(get("pci", "gpu link info", "pcie generation", "max")),
        "width_current": common.number(get("pci", "gpu link info", "link width", "current")),
        "width_max": common.number(get("pci", "gpu link info", "link width", "max")),
        "pcie_replays": common.number(get("pci", "replays since reset")),
        "pcie_replay_rollovers": common.number(get("pci", "replay number rollovers")),
        "persistence_mode": get("persistence mode"),
        **common.settings(get, common.TEXT_SETTINGS),
        "recovery_action": common.recovery_action(get("gpu recovery action")),
        "fabric": common.fabric(get, "fabric", common.TEXT_FABRIC, isinstance(tree.get("fabric"), dict)),
        "lost": False,
    }
    return common.blank_lost(record) if common.lost(_leaves(tree), record["name"]) else record


def _leaves(tree: dict) -> list[str]:
    """Every value printed in a GPU section (iterative: a section can nest as deep as it has lines)."""
    out: list[str] = []
    stack = [tree]
    while stack:
        for value in stack.pop().values():
            if isinstance(value, dict):
                stack.append(value)
            else:
                out.append(value)
    return out
