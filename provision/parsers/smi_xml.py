"""Parse ``nvidia-smi -q -x`` XML (DTD ``nvsmi_device_v10`` to ``v13``).

Field paths by schema generation:
- ECC: v10 ``double_bit/device_memory`` (+ ``total`` for on-chip SRAM); v11
  ``sram_uncorrectable``/``dram_uncorrectable``; v12+ ``sram_uncorrectable_parity``
  + ``sram_uncorrectable_secded`` (summed) and ``dram_uncorrectable``.
- Power: ``power_readings/power_draw`` (v11 and older); ``gpu_power_readings/
  power_draw`` (v12) or ``instant_power_draw``/``average_power_draw`` (v13); never
  ``module_power_readings``.
- Row remapper: ``remapped_rows/remapped_row_*``; ``<remapped_rows>N/A`` is None.
- PCIe replays: ``pci/replay_counter`` (``pcie_replays``) and ``pci/replay_rollover_counter``
  (``pcie_replay_rollovers``), both counted since the driver loaded or the GPU was reset.
- Fabric (R550+): ``fabric/state``, ``status``, ``cliqueId``, ``clusterUuid``, ``health/summary``
  (R570+), ``health/bandwidth``; ``fabric`` is None where the GPU has no ``<fabric>`` element.
  ``recovery_action`` is ``gpu_recovery_action`` (R565+) as printed ("None", "GPU Reset", ...).
- Firmware and settings: ``vbios_version``, ``inforom_image_version`` (``inforom_version/img_version``),
  ``gsp_firmware_version``, ``mig_mode_current``, ``ecc_mode_current`` ("Enabled"/"Disabled"; N/A is
  None), ``power_limit_W`` (``gpu_power_readings/current_power_limit``, v11 and older
  ``power_readings/power_limit`` or ``enforced_power_limit``), ``default_power_limit_W``,
  ``max_power_limit_W``, ``applications_clocks_MHz`` and ``default_applications_clocks_MHz``
  ({"graphics", "memory"} from ``graphics_clock``/``mem_clock``, or None).
- A lost GPU: a field printed "GPU is lost", or "Unknown Error" for the product name, gives
  ``lost`` true and None for every field printed as an error; a GPU named only in an "Unable to
  determine the device handle for GPU...: GPU is lost|Unknown Error" line beside the XML is a
  record of its own (bus id as printed, ``lost`` true).

Units: temperature C, power W. A document cut short is parsed as far as it goes
with ``complete`` false. Raises ParseError when the text holds no
``<nvidia_smi_log>`` element.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from provision.parsers import _smi_common as common
from provision.parsers._util import clean, integer, non_negative, refuse, require_text

TOOL = "nvidia-smi-qx"
TOOLS = (TOOL,)


def parse(text: str) -> dict:
    """Parse ``nvidia-smi -q -x`` XML into the contract's dict (see module doc)."""
    require_text(text, "nvidia-smi -q -x")
    root, closed = _root(text)
    gpus = [common.checked(_gpu(element)) for element in root.findall("gpu")]
    gpus += common.unreachable(text, gpus, lambda bus: _gpu(ET.Element("gpu", id=bus)))
    attached = non_negative(integer(root.findtext("attached_gpus")), "attached_gpus")
    match = re.search(r"nvsmi_device_(v\d+)", text)
    return {
        "tool": TOOL,
        "complete": common.complete(gpus, attached, closed),
        "schema": match.group(1) if match else None,
        "driver_version": clean(root.findtext("driver_version")),
        "cuda_version": clean(root.findtext("cuda_version")),
        "attached_gpus": attached,
        "gpus": gpus,
    }


def _root(text: str) -> tuple[ET.Element, bool]:
    """The ``<nvidia_smi_log>`` element and whether the document closed properly.

    A pull parser keeps the elements read before a truncation or a syntax error.
    """
    start = text.find("<nvidia_smi_log")
    if start < 0:
        raise refuse("nvidia-smi -q -x", "no <nvidia_smi_log> element")
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start",))
    root: ET.Element | None = None
    closed = True
    try:
        parser.feed(text[start:])
        root = _first_element(parser, root)
        parser.close()
    except (ET.ParseError, UnicodeEncodeError):  # cut short, malformed, or a lone surrogate expat cannot take
        closed = False
    root = _first_element(parser, root)
    if root is None:
        raise refuse("nvidia-smi -q -x", "the <nvidia_smi_log> element is unreadable")
    return root, closed


def _first_element(parser: ET.XMLPullParser[ET.Element], root: ET.Element | None) -> ET.Element | None:
    """``root``, or else the first element the parser has started since; drains its events."""
    for event in parser.read_events():
        element = event[-1]
        if root is None and isinstance(element, ET.Element):
            root = element
    return root


def _getter(element: ET.Element) -> common.Getter:
    """``get(*path)``: the stripped text at a path below ``element``, else None."""
    def get(*path: str) -> str | None:
        found = element.find("/".join(path))
        if found is None or len(found):
            return None
        return (found.text or "").strip()
    return get


def _gpu(element: ET.Element) -> dict:
    """The contract's record for one ``<gpu>`` element."""
    get = _getter(element)
    link = ("pci", "pci_gpu_link_info")
    record = {
        "bus_id": element.get("id") or get("pci", "pci_bus_id"),
        "name": get("product_name"),
        **common.ecc(get, "ecc_errors", common.XML_ECC),
        "remapped_rows": common.remapped(get, "remapped_rows", common.XML_REMAP),
        "retired_pages_pending": common.retired_pending(get, "retired_pages", common.XML_RETIRED),
        "retired_pages": common.retired_pages(get, "retired_pages", common.XML_RETIRED),
        "temp_C": common.number(get("temperature", "gpu_temp")),
        "power_W": common.first_number(get, common.XML_POWER),
        "pcie_gen_current": common.number(get(*link, "pcie_gen", "current_link_gen")),
        "pcie_gen_max": common.number(get(*link, "pcie_gen", "max_link_gen")),
        "width_current": common.number(get(*link, "link_widths", "current_link_width")),
        "width_max": common.number(get(*link, "link_widths", "max_link_width")),
        "pcie_replays": common.number(get("pci", "replay_counter")),
        "pcie_replay_rollovers": common.number(get("pci", "replay_rollover_counter")),
        "persistence_mode": get("persistence_mode"),
        **common.settings(get, common.XML_SETTINGS),
        "clocks_event_reasons_active": _active_reasons(element),
        "recovery_action": common.recovery_action(get("gpu_recovery_action")),
        "fabric": common.fabric(get, "fabric", common.XML_FABRIC, element.find("fabric") is not None),
        "lost": False,
    }
    values = [node.text or "" for node in element.iter() if not len(node)]
    return common.blank_lost(record) if common.lost(values, record["name"]) else record


def _active_reasons(element: ET.Element) -> list[str] | None:
    """Active clock event (throttle) reasons, e.g. ["gpu_idle", "hw_slowdown"]; None if not printed.

    Driver 535+ writes ``<clocks_event_reasons>``/``clocks_event_reason_*``; older drivers
    ``<clocks_throttle_reasons>``/``clocks_throttle_reason_*``.
    """
    for block, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                          ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        found = element.find(block)
        if found is not None:
            return [child.tag[len(prefix):] for child in found
                    if child.tag.startswith(prefix) and (child.text or "").strip() == "Active"]
    return None
