"""How each sample's hand-read ``expected`` maps onto the contract's output.

The samples' key names and value spellings differ from the contract
(tests/data/samples/CONTRACT.md), which wins. Every difference is spelt out here,
per tool, so the parsers are never loosened to fit a sample:

- ``rename``: sample key -> contract key, applied at every depth;
- ``value``: sample key -> function turning the sample's spelling into the contract's;
- ``path``: sample key -> where the value sits in the parser's output;
- ``derive``: sample key -> function computing the sample's summary from the output
  (counts, lists of failing items) - these are views, not parser features;
- ``skip``: sample key -> why it cannot be compared (annotator's prose or judgement).
"""
from __future__ import annotations

import re

# The sample's free-text "tool" field -> the contract's TOOL name.
TOOL_OF = {
    "CUDA samples p2pBandwidthLatencyTest": "p2pBandwidthLatencyTest",
    "cat /proc/net/bonding/bond0": "bonding",
    "dcgmi diag -r 3 -v": "dcgmi-diag",
    "dcgmi diag -r 3": "dcgmi-diag",
    "dmesg | grep Xid": "dmesg-xid",
    # A terminal paste; its expected values are the Xid ones, so it is kernel-log input.
    "nvidia-smi + dmesg -T | grep NVRM + lsmod (terminal paste)": "dmesg-xid",
    "fio (normal text output)": "fio",
    "gpu-burn": "gpu-burn",
    "ibnetdiscover": "ibnetdiscover",
    "ibstat": "ibstat",
    "ibstatus": "ibstatus",
    "lspci -vv (LnkCap/LnkSta lines only)": "lspci",
    "lspci -vvv (single device block)": "lspci",
    "lspci -vvv (device blocks)": "lspci",
    "ibv_devinfo": "ibv_devinfo",
    "dmidecode -t bios -t system": "dmidecode",
    "ipmitool mc info": "ipmitool-mc-info",
    "cat /proc/modules": "proc-modules",
    "cat /proc/cmdline": "proc-cmdline",
    "nccl-tests all_gather_perf": "nccl-tests",
    "nccl-tests all_reduce_perf": "nccl-tests",
    "nccl-tests alltoall_perf (NCCL_DEBUG=INFO log excerpt)": "nccl-tests",
    "nvbandwidth -t device_to_device_memcpy_write_ce": "nvbandwidth",
    "nvidia-smi (default table)": "nvidia-smi",
    "nvidia-smi --query-gpu=index,utilization.gpu,temperature.gpu,power.draw --format=csv":
        "nvidia-smi-csv",
    "nvidia-smi -q -x (XML)": "nvidia-smi-qx",
    "nvidia-smi-qx": "nvidia-smi-qx",
    "nvidia-smi -q": "nvidia-smi-q",
    "nvidia-smi nvlink -s": "nvidia-smi-nvlink",
    "nvidia-smi topo -m": "nvidia-smi-topo",
    "perftest ib_send_lat": "perftest",
    "perftest ib_write_bw": "perftest",
}

YES_NO = {"Yes": True, "No": False}


def _na(value):
    """The contract's null for a printed "N/A"."""
    return None if value == "N/A" else value


def _offdiag(matrix: dict) -> list:
    """Off-diagonal cells of a {src: {dst: value}} matrix."""
    return [v for src, row in matrix.items() for dst, v in row.items() if src != dst]


def _min_max(matrix: dict) -> dict:
    cells = _offdiag(matrix)
    return {"min": min(cells), "max": max(cells)}


def _smi_gpu(gpu: dict) -> dict:
    """A sample's -q/-qx GPU record in contract terms."""
    out = dict(gpu)
    for key in ("width_current", "width_max"):
        if key in gpu:
            out[key] = int(gpu[key].rstrip("x"))
    if "remapped_rows" in gpu:
        remap = gpu["remapped_rows"]
        out["remapped_rows"] = None if remap == "N/A" else {k: YES_NO.get(v, v) for k, v in remap.items()}
    if "retired_pages" not in gpu:  # the Blackwell samples give bus id, name, fabric, recovery action
        return out
    retired = out.pop("retired_pages")
    if retired == "N/A":
        out["retired_pages_pending"] = None
    else:
        out["retired_pages"] = {k: YES_NO.get(v, v) for k, v in retired.items()}
        out["retired_pages_pending"] = out["retired_pages"]["pending"]
    return out


def _dcgmi_result(value) -> dict:
    """"Pass", "Pass - All" or {pass_gpus, fail_gpus} -> the contract's result record."""
    if isinstance(value, dict):
        status = "Fail" if value.get("fail_gpus") else "Pass"
        return {"status": status, "failed_gpus": value.get("fail_gpus", []),
                "passed_gpus": value.get("pass_gpus", [])}
    return {"status": value.split(" - ")[0], "detail": value}


def _nvlink_view(actual: dict) -> list:
    return [{"index": g["index"], "name": g["name"], "links_total": len(g["links"]),
             "links_active": sum(link["active"] for link in g["links"]),
             "inactive_links": [link["link"] for link in g["links"] if not link["active"]],
             "link_speed_GBps": max(link["speed_GBps"] or 0 for link in g["links"])}
            for g in actual["gpus"]]


def _narrow_end(link: dict) -> dict:
    """An ibnetdiscover cable seen from its end that printed 1x, as the sample spells it."""
    a_narrow = link["a_width_speed"].startswith("1x")
    me, peer = ("a", "b") if a_narrow else ("b", "a")
    return {"reported_by": link[me], "port": link[f"{me}_port"], "peer": link[peer], "peer_port": link[f"{peer}_port"],
            "width_speed": link[f"{me}_width_speed"], "peer_reports": link[f"{peer}_width_speed"]}


def _ibnet_switch(actual: dict, switch: dict) -> dict:
    """A switch with its counts of host cables, self-loops and cables to other switches."""
    mine = [lk for lk in actual["links"] if switch["guid"] in (lk["a"], lk["b"])]
    return {"desc": switch["description"], "ports": switch["ports"], "lid": switch["lid"],
            "host_ports": sum(lk["a"].startswith("H-") or lk["b"].startswith("H-") for lk in mine),
            "self_loop_cables": sum(lk["self_loop"] for lk in mine),
            "uplinks_to_other_switch": sum(not lk["self_loop"] and lk["a"][0] == lk["b"][0] == "S" for lk in mine)}


def _fatal_qp(actual: dict) -> list:
    return [w for w in actual["warnings"] if "async fatal event on QP" in w]


RULES: dict[str, dict] = {
    # The samples of these tools give their expected values in the contract's own key names.
    "ibv_devinfo": {}, "dmidecode": {}, "ipmitool-mc-info": {}, "proc-modules": {}, "proc-cmdline": {},
    "bonding": {
        "rename": {"bond_mii_status": "mii_status", "speed_mbps": "speed_Mbps"},
        "derive": {
            "slaves_up": lambda a: sum(s["mii_status"] == "up" for s in a["slaves"]),
            "slaves_total": lambda a: len(a["slaves"]),
            "slaves_in_active_aggregator": lambda a: sum(
                s["aggregator_id"] == a["active_aggregator_id"] for s in a["slaves"]),
        },
    },
    "dcgmi-diag": {
        "value": {
            "results": lambda r: {name: _dcgmi_result(v) for name, v in r.items()},
            "warning": lambda w: [w],
            "targeted_power_max_W": lambda d: {int(k): v for k, v in d.items()},
            "targeted_power_avg_W": lambda d: {int(k): v for k, v in d.items()},
            # The verbose sample has one GPU, index 0.
            "info": lambda d: {k: {0: v} for k, v in d.items()},
        },
        "path": {"warning": ("warnings",), "info": ("metrics",),
                 "targeted_power_max_W": ("metrics", "targeted_power_max_W"),
                 "targeted_power_avg_W": ("metrics", "targeted_power_avg_W")},
    },
    "dmesg-xid": {
        "value": {"xids": lambda xs: [{"xid": x["xid"], "pci": x["pci"]} for x in xs],
                  "nvidia_smi_error": lambda e: [e]},
        "path": {"nvidia_smi_error": ("nvidia_smi_errors",)},
        "skip": {"xids.meaning/detail/row": "annotator's descriptions, not values the text prints"},
    },
    "fio": {
        "path": {"job": ("jobs", 0, "name"), "rw": ("jobs", 0, "rw"), "bs": ("jobs", 0, "bs"),
                 "ioengine": ("jobs", 0, "ioengine"), "iodepth": ("jobs", 0, "iodepth"),
                 "numjobs": ("jobs", 0, "numjobs"), "err": ("jobs", 0, "err"),
                 "write_bw_MiBps": ("jobs", 0, "write_bw_MiBps"),
                 "write_bw_MBps": ("jobs", 0, "write_bw_MBps"),
                 "write_iops": ("jobs", 0, "write_iops"), "io": ("jobs", 0, "write_io"),
                 "runtime_ms": ("jobs", 0, "write_runtime_ms"),
                 "clat_avg_usec": ("jobs", 0, "write_clat_avg_usec"),
                 "clat_max_usec": ("jobs", 0, "write_clat_max_usec"),
                 "clat_p50_msec": ("jobs", 0, "write_clat_percentiles_ms", "50.00"),
                 "clat_p99_msec": ("jobs", 0, "write_clat_percentiles_ms", "99.00"),
                 "clat_p99_99_msec": ("jobs", 0, "write_clat_percentiles_ms", "99.99"),
                 "disk": ("disks", 0, "name"), "disk_util_pct": ("disks", 0, "util_pct")},
    },
    "gpu-burn": {
        "path": {"gpu_model": ("gpus", 0, "name")},
        "derive": {
            "verdicts": lambda a: {str(g["index"]): g["verdict"] for g in a["gpus"]},
            "errors_final": lambda a: [g["errors"] for g in a["gpus"]],
            "warning_gpus": lambda a: [g["index"] for g in a["gpus"] if g["warning"]],
            "final_gflops": lambda a: [g["gflops"] for g in a["gpus"]],
            "final_temps_C": lambda a: [g["temp_C"] for g in a["gpus"]],
            "max_temp_C": lambda a: max(g["temp_C"] for g in a["gpus"]),
        },
        "skip": {"exit_code": "the shell's `echo $?` after gpu_burn, not gpu_burn output"},
    },
    "ibnetdiscover": {
        "derive": {
            "switch_count": lambda a: len(a["switches"]),
            "ca_count": lambda a: len(a["cas"]),
            "host_count": lambda a: len({c["description"].split()[0] for c in a["cas"]}),
            "cables_total": lambda a: len(a["links"]),
            "self_loop_cables": lambda a: sum(lk["self_loop"] for lk in a["links"]),
            "leading_error_lines": lambda a: len(a["errors"]),
            "degraded_width_links": lambda a: sum(lk["width"] in ("1x", "2x") for lk in a["links"]),
            "links_1x": lambda a: [_narrow_end(lk) for lk in a["links"]
                                   if "1x" in (lk["a_width_speed"][:2], lk["b_width_speed"][:2])],
            "switches": lambda a: {s["guid"]: _ibnet_switch(a, s) for s in a["switches"]},
            "host_link_speeds": lambda a: {c["description"]: lk["width_speed"] for c in a["cas"]
                                           for lk in a["links"] if c["guid"] in (lk["a"], lk["b"])},
        },
    },
    "ibstat": {
        "rename": {"rate": "rate_Gbps"},
        "derive": {
            "ca_count": lambda a: len({p["ca"] for p in a["ports"]}),
            "ib_ports_active_400": lambda a: sum(
                p["link_layer"] == "InfiniBand" and p["state"] == "Active" and p["rate_Gbps"] == 400
                for p in a["ports"]),
            "ports_down": lambda a: [p["ca"] for p in a["ports"] if p["state"] == "Down"],
        },
    },
    "ibstatus": {
        "rename": {"device": "ca", "state": "state_raw", "phys_state": "physical_state_raw",
                   "rate": "rate_raw"},
        "derive": {
            "port_count": lambda a: len(a["ports"]),
            "ib_ports_200_4x_hdr": lambda a: sum(
                p["link_layer"] == "InfiniBand" and p["rate_Gbps"] == 200 and "4X HDR" in p["rate_raw"]
                for p in a["ports"]),
        },
    },
    "lspci": {
        "value": {"lnkcap_speed": lambda s: float(s.removesuffix("GT/s")),
                  "lnksta_speed": lambda s: float(s.removesuffix("GT/s")),
                  "lnkcap_width": lambda w: int(w.lstrip("x")),
                  "lnksta_width": lambda w: int(w.lstrip("x"))},
        "path": {"device": ("devices", 0, "bdf"),
                 "lnkcap_speed": ("devices", 0, "lnkcap_speed_GTps"),
                 "lnksta_speed": ("devices", 0, "lnksta_speed_GTps"),
                 "lnkcap_width": ("devices", 0, "lnkcap_width"),
                 "lnksta_width": ("devices", 0, "lnksta_width"),
                 "degraded": ("devices", 0, "downgraded"),
                 "degraded_reason": ("devices", 0, "downgraded_reason")},
    },
    "nccl-tests": {
        "derive": {
            "rows": lambda a: len(a["rows"]),
            "gpu_models": lambda a: sorted({d["name"] for d in a["devices"]}) or None,
            "out_of_bounds": lambda a: f"{a['out_of_bounds_values']} "
                                       f"{'FAILED' if a['out_of_bounds_failed'] else 'OK'}",
            "max_error": lambda a: {side: a["rows"][-1][side].get("max_error")
                                    for side in ("out_of_place", "in_place")},
            "warn_count": lambda a: len(a["warnings"]),
            "async_fatal_qp_events": lambda a: len(_fatal_qp(a)),
            "hcas_with_fatal_events": lambda a: sorted(
                {re.search(r"(mlx5_\d+)", w).group(1) for w in _fatal_qp(a)}),
            "fatal_communicator_errors": lambda a: sum(
                "communicator encountered a fatal error" in w for w in a["warnings"]),
            "error_code": lambda a: a["error_codes"][-1],
            "results_table_present": lambda a: bool(a["rows"]),
        },
        "skip": {"nranks_source": "annotator's note on how nranks was read"},
    },
    "nvbandwidth": {
        "path": {"testcase": ("tests", 0, "name"), "sum_line_present": ("tests", 0, "sum_printed")},
        "derive": {
            "gpu_count": lambda a: len(a["tests"][0]["matrix"]),
            "diag_value": lambda a: {r[s] for s, r in a["tests"][0]["matrix"].items()}.pop(),
            "offdiag_min_GBps": lambda a: min(_offdiag(a["tests"][0]["matrix"])),
            "offdiag_max_GBps": lambda a: max(_offdiag(a["tests"][0]["matrix"])),
            "offdiag_count": lambda a: len(_offdiag(a["tests"][0]["matrix"])),
        },
    },
    "nvidia-smi-nvlink": {
        "derive": {"gpus_present_in_text": lambda a: len(a["gpus"]), "gpus": _nvlink_view},
    },
    "p2pBandwidthLatencyTest": {
        "path": {"gpu_model": ("gpus", 0, "name")},
        "derive": {
            "all_peers_accessible": lambda a: all(v for row in a["peer_access"].values()
                                                  for v in row.values()),
            "p2p_connectivity_all_ones": lambda a: all(v == 1 for row in a["connectivity"].values()
                                                       for v in row.values()),
            "uni_p2p_enabled_offdiag_GBps": lambda a: _min_max(a["uni_p2p_enabled_GBps"]),
            "uni_p2p_disabled_offdiag_GBps": lambda a: _min_max(a["uni_p2p_disabled_GBps"]),
            "bi_p2p_enabled_offdiag_GBps": lambda a: _min_max(a["bi_p2p_enabled_GBps"]),
            "p2p_enabled_latency_gpu_offdiag_us": lambda a: _min_max(a["latency_p2p_enabled_gpu_us"]),
            "uni_p2p_enabled_row0": lambda a: list(a["uni_p2p_enabled_GBps"][0].values()),
        },
    },
    "nvidia-smi-q": {
        "value": {"gpus": lambda gs: [_smi_gpu(g) for g in gs]},
        "skip": {"faults": "annotator's judgement; parsers report values, evaluation judges"},
    },
    "nvidia-smi-qx": {
        "value": {"gpus": lambda gs: [_smi_gpu(g) for g in gs]},
        "derive": {"degraded_width": lambda a: any(g["width_current"] < g["width_max"]
                                                   for g in a["gpus"]),
                   "gpu_count": lambda a: len(a["gpus"])},
    },
    "nvidia-smi": {
        "rename": {"mem_used_MiB": "memory_used_MiB", "mem_total_MiB": "memory_total_MiB",
                   "fan": "fan_pct"},
        "value": {"gpus": lambda gs: [{k: _na(v) for k, v in g.items()} for g in gs]},
        "derive": {"gpu_count": lambda a: len(a["gpus"])},
    },
    "nvidia-smi-csv": {
        "rename": {"utilization_pct": "utilization.gpu", "temp_C": "temperature.gpu",
                   "power_W": "power.draw"},
        "value": {"columns": lambda cs: [re.sub(r"\s*\[.*\]$", "", c) for c in cs]},
        "derive": {"gpu_count": lambda a: len(a["rows"])},
    },
    "nvidia-smi-topo": {
        "value": {"affinity": lambda d: {g: {k: _na(v) for k, v in a.items()} for g, a in d.items()}},
        "derive": {
            "gpu_count": lambda a: sum(name.startswith("GPU") for name in a["matrix"]),
            "nic_count": lambda a: sum(not name.startswith("GPU") for name in a["matrix"]),
            "nvlink_bond_all_pairs": lambda a: {c for r, row in a["matrix"].items() for k, c in row.items()
                                                if r != k and r.startswith("GPU") and k.startswith("GPU")
                                                }.pop(),
        },
    },
    "perftest": {},
}
