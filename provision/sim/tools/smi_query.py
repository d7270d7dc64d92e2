"""``nvidia-smi -q`` (text) and ``-q -x`` (XML, DTD v12) for the simulated GPUs.

One tree per GPU feeds both renderers: each node is ``(text label, xml tag, value)`` where
value is a string or a list of nodes; a ``None`` label or tag leaves the node out of that
rendering. Labels, tags and order follow smi_q_h100x8_535_183, smi_q_a10_remap_pending_535_129
and smi_qx_t4_v11_width_x8 plus a v12 (R555) XML capture. Hopper and later split SRAM
uncorrectable errors into parity and SEC-DED counts (the H100 capture); earlier GPUs print one.

Driver 580 (the Blackwell line) prints DTD v13, tab-indented, with the elements of the real driver-580
captures in their order (tests/data/samples/nvidia_smi_qx_b200_8gpu_driver580_hgx.txt and
nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt, published scrubbed by NVIDIA in k8s-test-infra):
display_attached/display_active and addressing_mode after persistence_mode, c2c_mode and gpu_recovery_action
before gsp_firmware_version, average/instant power draw, and the whole <fabric> block (state, status,
cliqueId, clusterUuid, health: summary, bandwidth, route_recovery_in_progress, route_unhealthy,
access_timeout_recovery, incorrect_configuration, partition_assigned where the platform prints it). The -q
text labels of that block are nvidia-smi 580's as users paste them ("CliqueId", "ClusterUUID", "Health",
"Summary", "Route Recovery in progress", ..., "Partition Assigned": NVIDIA/gpu-operator issue 2511, driver
580.159.04; NVIDIA/k8s-dra-driver-gpu issue 626). Elements the simulator has no hardware for are left out,
never invented; the order of those printed is the captures'.

Firmware and settings come from the GPU's model (hwmodel ``_settings``): ``VBIOS Version``/<vbios_version> after the
minor number and ``Inforom Version``/<inforom_version><img_version> after it (H100 capture's labels, B200
capture's tags and order; N/A where the model has none), GSP firmware (the driver's version unless the model names
another), persistence (the daemon and the GPU's own setting), MIG and ECC current/pending, the power limits
(current and requested: the set limit; default, min, max) and the application clocks and their defaults.

A lost GPU (the model's ``lost``: the NVML error text) is printed the two ways nvidia-smi does: with
``lost_reads`` (NVML still holds a handle, every reading fails) its section's readings print the error text;
otherwise the GPU has no section and nvidia-smi names it in its "Unable to determine the device handle for
GPU<bus>: <error>" line (NVIDIA/k8s-test-infra nvidia-smi tests; users' reports of Xid 79).
"""
from __future__ import annotations

import time
from xml.sax.saxutils import escape

import simhw

# Architecture by product-name fragment (NVIDIA product pages).
ARCHITECTURES = (("B300", "Blackwell"), ("B200", "Blackwell"), ("H200", "Hopper"), ("H100", "Hopper"),
                 ("GH200", "Hopper"), ("L40", "Ada Lovelace"), ("L4", "Ada Lovelace"), ("4090", "Ada Lovelace"),
                 ("A100", "Ampere"), ("A10", "Ampere"), ("A30", "Ampere"), ("T4", "Turing"), ("V100", "Volta"))
# Bank-remap histogram maximum of an H100 80GB (smi_q_h100x8_535_183: "Max : 2560 bank(s)").
REMAP_BANKS = 2560
LABEL_WIDTH = 42
# The driver branch from which nvidia-smi prints the v13 layout of the Blackwell captures (module doc).
R580 = 580
# A GPU NVML cannot open: nvidia-smi's line (the GPU is named by its 4-digit-domain bus id, as users paste it).
HANDLE_ERROR = "Unable to determine the device handle for GPU{bus}: {error}"
LOST_HINT = {"GPU is lost": ".  Reboot the system to recover this GPU"}
# Health fields of the driver-580 <fabric><health> block, in the captures' order: model key, -q label.
FABRIC_HEALTH = (("summary", "Summary"), ("bandwidth", "Bandwidth"),
                 ("route_recovery_in_progress", "Route Recovery in progress"), ("route_unhealthy", "Route Unhealthy"),
                 ("access_timeout_recovery", "Access Timeout Recovery"),
                 ("incorrect_configuration", "Incorrect Configuration"), ("partition_assigned", "Partition Assigned"))


def architecture(model: str) -> str:
    """GPU architecture name as ``Product Architecture`` prints it."""
    return next((arch for key, arch in ARCHITECTURES if key in model), "Hopper")


def r580(ctx: dict) -> bool:
    """True where the loaded driver prints the driver-580 layout (the module doc)."""
    head = str(ctx["driver"]["version"]).split(".")[0]
    return head.isdigit() and int(head) >= R580


def _yn(flag: bool) -> str:
    return "Yes" if flag else "No"


def _ecc_scope(block: dict, split: bool, aggregate: bool) -> list:
    """ECC counters of one scope (volatile or aggregate)."""
    nodes = [("SRAM Correctable", "sram_correctable", str(block["sram_correctable"]))]
    if split:
        nodes += [("SRAM Uncorrectable Parity", "sram_uncorrectable_parity", "0"),
                  ("SRAM Uncorrectable SEC-DED", "sram_uncorrectable_secded", str(block["sram_uncorrectable"]))]
    else:
        nodes.append(("SRAM Uncorrectable", "sram_uncorrectable", str(block["sram_uncorrectable"])))
    nodes += [("DRAM Correctable", "dram_correctable", str(block["dram_correctable"])),
              ("DRAM Uncorrectable", "dram_uncorrectable", str(block["dram_uncorrectable"]))]
    if split and aggregate:
        nodes.append(("SRAM Threshold Exceeded", "sram_threshold_exceeded", "No"))
    return nodes


def _retired(gpu: dict) -> list:
    """Retired-pages block: counts on page-retirement boards, N/A on row-remap ones."""
    pages = gpu.get("retired_pages")
    single = "N/A" if pages is None else str(pages["single_bit"])
    double = "N/A" if pages is None else str(pages["double_bit"])
    pending = "N/A" if pages is None else _yn(pages["pending"])
    return [("Single Bit ECC", None, single), ("Double Bit ECC", None, double),
            (None, "multiple_single_bit_retirement", [(None, "retired_count", single), (None, "retired_pagelist", "")]),
            (None, "double_bit_retirement", [(None, "retired_count", double), (None, "retired_pagelist", "")]),
            ("Pending Page Blacklist", "pending_blacklist", pending), (None, "pending_retirement", pending)]


def _remapped(gpu: dict) -> list | str:
    """Remapped-rows block, ``N/A`` on page-retirement boards."""
    rows = gpu.get("remapped_rows")
    if rows is None:
        return "N/A"
    hist = [("Max", "row_remapper_histogram_max", f"{REMAP_BANKS} bank(s)")]
    hist += [(k, f"row_remapper_histogram_{k.lower()}", "0 bank(s)") for k in ("High", "Partial", "Low", "None")]
    return [("Correctable Error", "remapped_row_corr", str(rows["correctable"])),
            ("Uncorrectable Error", "remapped_row_unc", str(rows["uncorrectable"])),
            ("Pending", "remapped_row_pending", _yn(rows["pending"])),
            ("Remapping Failure Occurred", "remapped_row_failure", _yn(rows["failure"])),
            ("Bank Remap Availability Histogram", "row_remapper_histogram", hist)]


def _pci(gpu: dict) -> list:
    """PCI block, link generation and width from the model."""
    bus = gpu["bus_id"].split(":")[1]
    pcie = gpu["pcie"]
    return [("Bus", None, f"0x{bus}"), (None, "pci_bus", bus), ("Device", None, "0x00"), (None, "pci_device", "00"),
            ("Domain", None, "0x0000"), (None, "pci_domain", "0000"),
            ("Device Id", None, f"0x{simhw.pci_device_id(gpu).upper()}10DE"),
            (None, "pci_device_id", f"{simhw.pci_device_id(gpu).upper()}10DE"),
            ("Bus Id", "pci_bus_id", gpu["bus_id"]),
            ("GPU Link Info", "pci_gpu_link_info", [
                ("PCIe Generation", "pcie_gen", [
                    ("Max", "max_link_gen", str(pcie["gen_max"])),
                    ("Current", "current_link_gen", str(pcie["gen_current"])),
                    ("Device Current", "device_current_link_gen", str(pcie["gen_current"])),
                    ("Device Max", "max_device_link_gen", str(pcie["gen_max"])),
                    ("Host Max", "max_host_link_gen", "N/A")]),
                ("Link Width", "link_widths", [
                    ("Max", "max_link_width", f"{pcie['width_max']}x"),
                    ("Current", "current_link_width", f"{pcie['width_current']}x")])]),
            ("Replays Since Reset", "replay_counter", str(pcie.get("replays", 0))),
            ("Replay Number Rollovers", "replay_rollover_counter", str(pcie.get("replay_rollovers", 0))),
            ("Tx Throughput", "tx_util", "0 KB/s"), ("Rx Throughput", "rx_util", "0 KB/s")]


def _draw(gpu: dict, v13: bool) -> list:
    """Power draw: one reading, or driver 580's average and instantaneous ones (the v13 captures)."""
    draw = f"{gpu['power_W']:.2f} W"
    if not v13:
        return [("Power Draw", "power_draw", draw)]
    return [("Average Power Draw", "average_power_draw", draw),
            ("Instantaneous Power Draw", "instant_power_draw", draw)]


def _watts(gpu: dict, key: str) -> str:
    return f"{float(gpu.get(key, gpu['power_cap_W'])):.2f} W"


def _app_clocks(gpu: dict, key: str) -> list:
    """An <applications_clocks> or <default_applications_clocks> block (graphics and memory, the captures' order);
    a model without them: the maximum clocks, which both captures print as the application clocks."""
    clk = gpu["clocks"]
    apps = gpu.get(key) or {"graphics": clk["max_graphics"], "memory": clk["max_memory"]}
    return [("Graphics", "graphics_clock", f"{apps['graphics']} MHz"), ("Memory", "mem_clock", f"{apps['memory']} MHz")]


def _power_clocks(gpu: dict, v13: bool = False) -> list:
    """Temperature, power readings (current = requested = what nvidia-smi -pl set; default, min and max: the
    board's, as smi_q_h100x8_535_183 and the B200 capture print them) and clocks, then the application clocks and
    their defaults (between <clocks> and <max_clocks> in both captures)."""
    cap, clk = f"{simhw.power_limit_W(gpu):.2f} W", gpu["clocks"]
    return [
        ("Temperature", "temperature", [("GPU Current Temp", "gpu_temp", f"{gpu['temp_C']} C"),
                                        ("GPU Target Temperature", "gpu_target_temperature", "N/A")]),
        ("GPU Power Readings", "gpu_power_readings", [
            *_draw(gpu, v13),
            ("Current Power Limit", "current_power_limit", cap),
            ("Requested Power Limit", "requested_power_limit", cap),
            ("Default Power Limit", "default_power_limit", _watts(gpu, "default_power_limit_W")),
            ("Min Power Limit", "min_power_limit", _watts(gpu, "min_power_limit_W")),
            ("Max Power Limit", "max_power_limit", _watts(gpu, "max_power_limit_W"))]),
        ("Clocks", "clocks", [("Graphics", "graphics_clock", f"{clk['graphics']} MHz"),
                              ("SM", "sm_clock", f"{clk['sm']} MHz"), ("Memory", "mem_clock", f"{clk['memory']} MHz"),
                              ("Video", "video_clock", f"{clk['video']} MHz")]),
        ("Applications Clocks", "applications_clocks", _app_clocks(gpu, "applications_clocks_MHz")),
        ("Default Applications Clocks", "default_applications_clocks",
         _app_clocks(gpu, "default_applications_clocks_MHz")),
        ("Max Clocks", "max_clocks", [("Graphics", "graphics_clock", f"{clk['max_graphics']} MHz"),
                                      ("SM", "sm_clock", f"{clk['max_sm']} MHz"),
                                      ("Memory", "mem_clock", f"{clk['max_memory']} MHz"),
                                      ("Video", "video_clock", f"{clk['max_video']} MHz")])]


# Clocks event reasons as driver 535+ names them (older: clocks_throttle_reason_*), -q label -> XML key.
EVENT_REASONS = (("Idle", "gpu_idle"), ("Applications Clocks Setting", "applications_clocks_setting"),
                 ("SW Power Cap", "sw_power_cap"), ("HW Slowdown", "hw_slowdown"),
                 ("HW Thermal Slowdown", "hw_thermal_slowdown"), ("HW Power Brake Slowdown", "hw_power_brake_slowdown"),
                 ("Sync Boost", "sync_boost"), ("SW Thermal Slowdown", "sw_thermal_slowdown"),
                 ("Display Clock Setting", "display_clocks_setting"))


def _event_reasons(gpu: dict) -> list:
    """Active clock event reasons from the model (``clocks_event_reasons``, default idle)."""
    active = set(gpu.get("clocks_event_reasons", ["gpu_idle"]))
    return [(label, f"clocks_event_reason_{key}", "Active" if key in active else "Not Active")
            for label, key in EVENT_REASONS]


def _fabric(gpu: dict, v13: bool) -> list:
    """The <fabric> block: State and Status before driver 580 (N/A without a fabric), then the whole
    registration and its health as driver 580 prints it (the module doc)."""
    fab = gpu.get("fabric")
    if fab is None:
        return [("State", "state", "N/A"), ("Status", "status", "N/A")]
    nodes = [("State", "state", fab["state"]), ("Status", "status", fab["status"])]
    if not v13:
        return nodes
    done = fab["state"] == "Completed"  # NVML: the rest is read only once the probe completed
    health = fab.get("health") or {}
    nodes += [("CliqueId", "cliqueId", str(fab["clique_id"]) if done else "N/A"),
              ("ClusterUUID", "clusterUuid", fab["cluster_uuid"] if done else "N/A"),
              ("Health", "health", [(label, key, str(health[key]) if done else "N/A")
                                    for key, label in FABRIC_HEALTH if key in health])]
    return nodes


def _lost(nodes: list, error: str) -> list:
    """A lost GPU's readings: every value but its PCI identity printed as NVML's error text."""
    return [(label, tag, value if tag == "pci" or label == "Bus Id" else
             (_lost(value, error) if isinstance(value, list) else error)) for label, tag, value in nodes]


def gpu_tree(index: int, gpu: dict, ctx: dict) -> list:
    """All nodes of one GPU in the real tool's order."""
    v13 = r580(ctx)
    nodes = _tree(index, gpu, ctx, v13)
    return _lost(nodes, str(gpu["lost"])) if gpu.get("lost") and gpu.get("lost_reads") else nodes


def _tree(index: int, gpu: dict, ctx: dict, v13: bool) -> list:
    """All nodes of one readable GPU; ``v13``: driver 580's layout."""
    arch = architecture(gpu["model"])
    split = arch in ("Hopper", "Blackwell")
    used = gpu.get("memory_used_MiB", 0)
    c2c = bool(gpu.get("c2c"))
    display = ([("Display Mode", "display_mode", "Requested functionality has been deprecated"),
                ("Display Attached", "display_attached", "Yes"), ("Display Active", "display_active", "Disabled")]
               if v13 else [("Display Mode", "display_mode", "Disabled")])
    return [
        ("Product Name", "product_name", gpu["model"]), ("Product Brand", "product_brand", "NVIDIA"),
        ("Product Architecture", "product_architecture", arch),
        *display,
        ("Persistence Mode", "persistence_mode", simhw.persistence_mode(gpu, ctx["persistence"] == "Enabled")),
        *([("Addressing Mode", "addressing_mode", "ATS" if c2c else "None")] if v13 else []),
        ("MIG Mode", "mig_mode", [("Current", "current_mig", simhw.mode(gpu, "mig_mode", "current")),
                                  ("Pending", "pending_mig", simhw.mode(gpu, "mig_mode", "pending"))]),
        ("Serial Number", "serial", gpu["serial"]), ("GPU UUID", "uuid", gpu["uuid"]),
        ("Minor Number", "minor_number", str(index)),
        ("VBIOS Version", "vbios_version", str(gpu.get("vbios_version") or "N/A")),
        ("Inforom Version", "inforom_version", [
            ("Image Version", "img_version", str(gpu.get("inforom_image_version") or "N/A"))]),
        *([("C2C Mode", "c2c_mode", "Enabled" if c2c else "Disabled"),
           ("GPU Recovery Action", "gpu_recovery_action", str(gpu.get("recovery_action", "None")))] if v13 else []),
        ("GSP Firmware Version", "gsp_firmware_version",
         str(gpu.get("gsp_firmware_version") or ctx["driver"]["version"])),
        ("PCI", "pci", _pci(gpu)), ("Fan Speed", "fan_speed", "N/A"), ("Performance State", "performance_state", "P0"),
        ("Clocks Event Reasons", "clocks_event_reasons", _event_reasons(gpu)),
        ("FB Memory Usage", "fb_memory_usage", [
            ("Total", "total", f"{gpu['memory_total_MiB']} MiB"), ("Used", "used", f"{used} MiB"),
            ("Free", "free", f"{gpu['memory_total_MiB'] - used} MiB")]),
        ("Compute Mode", "compute_mode", "Default"),
        ("Utilization", "utilization", [("Gpu", "gpu_util", "0 %"), ("Memory", "memory_util", "0 %")]),
        ("ECC Mode", "ecc_mode", [("Current", "current_ecc", simhw.mode(gpu, "ecc_mode", "current", "Enabled")),
                                  ("Pending", "pending_ecc", simhw.mode(gpu, "ecc_mode", "pending", "Enabled"))]),
        ("ECC Errors", "ecc_errors", [
            ("Volatile", "volatile", _ecc_scope(gpu["ecc"]["volatile"], split, False)),
            ("Aggregate", "aggregate", _ecc_scope(gpu["ecc"]["aggregate"], split, True))]),
        ("Retired Pages", "retired_pages", _retired(gpu)), ("Remapped Rows", "remapped_rows", _remapped(gpu)),
        *_power_clocks(gpu, v13),
        ("Fabric", "fabric", _fabric(gpu, v13)),
        ("Processes", None, "None"), (None, "processes", ""),
    ]


def _text_nodes(nodes: list, depth: int) -> list[str]:
    """Text lines of ``nodes``: ``label : value`` with the colon at column 42."""
    lines = []
    for label, _tag, value in nodes:
        if label is None:
            continue
        head = "    " * depth + label
        if isinstance(value, list):
            lines += [head] + _text_nodes(value, depth + 1)
        else:
            lines.append(f"{head:<{LABEL_WIDTH}}: {value}")
    return lines


def render_text(pairs: list[tuple[int, dict]], ctx: dict) -> str:
    """``nvidia-smi -q``."""
    drv = ctx["driver"]
    lines = ["==============NVSMI LOG==============", "",
             f"{'Timestamp':<{LABEL_WIDTH}}: {time.strftime('%a %b %d %H:%M:%S %Y')}",
             f"{'Driver Version':<{LABEL_WIDTH}}: {drv['version']}",
             f"{'CUDA Version':<{LABEL_WIDTH}}: {drv['cuda_version']}", "",
             f"{'Attached GPUs':<{LABEL_WIDTH}}: {ctx['attached']}"]
    for index, gpu in pairs:
        if unreachable(gpu):
            continue
        lines += [f"GPU {gpu['bus_id']}"] + _text_nodes(gpu_tree(index, gpu, ctx), 1) + [""]
    return "".join(handle_errors(pairs)) + "\n".join(lines) + "\n"


def unreachable(gpu: dict) -> bool:
    """A lost GPU NVML holds no handle for: nvidia-smi prints no section for it."""
    return bool(gpu.get("lost")) and not gpu.get("lost_reads")


def handle_errors(pairs: list[tuple[int, dict]]) -> list[str]:
    """nvidia-smi's lines for the GPUs it cannot open (the module doc)."""
    out = []
    for _index, gpu in pairs:
        if unreachable(gpu):
            error = str(gpu["lost"])
            bus = gpu["bus_id"][4:] if len(gpu["bus_id"].split(":")[0]) == 8 else gpu["bus_id"]
            out.append(HANDLE_ERROR.format(bus=bus, error=error) + LOST_HINT.get(error, "") + "\n")
    return out


def _xml_nodes(nodes: list, depth: int) -> list[str]:
    """XML lines of ``nodes``, four spaces per level."""
    pad, lines = "    " * depth, []
    for _label, tag, value in nodes:
        if tag is None:
            continue
        if isinstance(value, list):
            lines += [f"{pad}<{tag}>"] + _xml_nodes(value, depth + 1) + [f"{pad}</{tag}>"]
        elif value == "":
            lines += [f"{pad}<{tag}>", f"{pad}</{tag}>"]
        else:
            lines.append(f"{pad}<{tag}>{escape(value)}</{tag}>")
    return lines


def render_xml(pairs: list[tuple[int, dict]], ctx: dict) -> str:
    """``nvidia-smi -q -x``."""
    drv = ctx["driver"]
    v13 = r580(ctx)
    lines = ['<?xml version="1.0" ?>', f'<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_{"v13" if v13 else "v12"}.dtd">',
             "<nvidia_smi_log>",
             f"    <timestamp>{time.strftime('%a %b %d %H:%M:%S %Y')}</timestamp>",
             f"    <driver_version>{escape(drv['version'])}</driver_version>",
             f"    <cuda_version>{escape(drv['cuda_version'])}</cuda_version>",
             f"    <attached_gpus>{ctx['attached']}</attached_gpus>"]
    for index, gpu in pairs:
        if unreachable(gpu):
            continue
        lines += [f'    <gpu id="{gpu["bus_id"]}">'] + _xml_nodes(gpu_tree(index, gpu, ctx), 2) + ["    </gpu>"]
    if v13:
        lines = [_retab(line) for line in lines]  # the 580 captures: one tab a level
    return "".join(handle_errors(pairs)) + "\n".join(lines + ["", "</nvidia_smi_log>"]) + "\n"


def _retab(line: str) -> str:
    """A line's leading four-space levels as tabs."""
    body = line.lstrip(" ")
    return "\t" * ((len(line) - len(body)) // 4) + body
