"""A simulated node's hardware model, built from a hardware profile.

The model is a plain, YAML-serialisable dict written to ``/etc/provision-sim/hardware.yaml``
inside each simulated node; the simulated tools (``provision/sim/tools/``) compute their
output from it. Faults are injected by editing the model (``faults``, per-device fields,
``kernel_log``), never by telling a tool what to print.

Units are in the key names (``_MiB``, ``_W``, ``_C``, ``_Gbps``, ``_GBps``, ``_Mbps``).
Layout follows an NVIDIA HGX/DGX board: GPUs and HCAs two per PCIe switch, four switches,
two NUMA nodes (DGX H100 user guide, "System topology").
"""
from __future__ import annotations

import functools
import hashlib
import uuid
from pathlib import Path

import yaml

# Real DGX H100 GPU PCIe bus numbers (tests/data/samples/smi_table_h100x8_550.txt).
GPU_BUSES = (0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB)
# One HCA next to each GPU on the same PCIe switch, one bus below it.
HCA_BUSES = tuple(bus - 1 for bus in GPU_BUSES)
# Idle clocks of an H100 SXM5 in MHz (smi_q_h100x8_535_183.txt); other models reuse them.
IDLE_CLOCKS_MHZ = {"graphics": 345, "sm": 345, "memory": 2619, "video": 765,
                   "max_graphics": 1980, "max_sm": 1980, "max_memory": 2619, "max_video": 1545}
# Idle power draw and temperature ranges of an idle H100 SXM5 (smi_table_h100x8_550.txt).
IDLE_POWER_W = (69.0, 75.0)
IDLE_TEMP_C = (33, 40)
# ConnectX generation -> PCI device id as ibstat prints it in "CA type" (ibstat_h100_mixed_down_ports.txt).
CA_TYPES = {"ConnectX-7": "MT4129", "ConnectX-6 Dx": "MT4125", "ConnectX-6": "MT4123"}
# DGX H100: 2x Xeon Platinum 8480C, 56 cores each, 2 threads per core (DGX H100 user guide).
CPU = {"numa_nodes": 2, "cores_per_numa": 56, "threads_per_core": 2}
# A Grace host (GB200 compute tray: 2 Grace CPUs): 72 Arm Neoverse V2 cores per Grace CPU, one thread per core
# (NVIDIA Grace CPU datasheet; profile gb200-nvl72: 2 Grace CPUs per tray, arm64).
GRACE_CPU = {"numa_nodes": 2, "cores_per_numa": 72, "threads_per_core": 1, "arch": "aarch64"}
SWITCHES = 4
# The <fabric><health> block of driver 580 as a healthy GPU prints it, per platform (health fields as printed:
# "N/A" where the platform does not report one). HGX B200 through its NVSwitches: summary Healthy, bandwidth
# and routes N/A, no partition field (tests/data/samples/nvidia_smi_qx_b200_8gpu_driver580_hgx.txt); a GB200
# tray in an NVLink domain: bandwidth Full, routes False, partition_assigned N/A
# (nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt). Both published scrubbed by NVIDIA in k8s-test-infra.
FABRIC_HEALTH_NVSWITCH = {"summary": "Healthy", "bandwidth": "N/A", "route_recovery_in_progress": "N/A",
                          "route_unhealthy": "N/A", "access_timeout_recovery": "False",
                          "incorrect_configuration": "N/A"}
FABRIC_HEALTH_DOMAIN = {"summary": "Healthy", "bandwidth": "Full", "route_recovery_in_progress": "False",
                        "route_unhealthy": "False", "access_timeout_recovery": "False",
                        "incorrect_configuration": "N/A", "partition_assigned": "N/A"}
# An NVSwitch board's GPUs form no multi-node cluster: cliqueId 0 and an all-zero clusterUuid (the B200 capture).
NO_CLUSTER = "00000000-0000-0000-0000-000000000000"
# The cliqueId the NVLink switch trays' Fabric Manager gives the default partition of a rack's first NVLink
# domain (the GB200 capture prints 2); the simulator numbers the next domains on from it.
FIRST_CLIQUE = 2
NOISE_PCT = 2.0
# Healthy figures per profile name (figures.yaml), and the rack's site settings, whose
# provision_storage is the storage bond the simulated kernel shows (site.yml).
FIGURES = Path(__file__).with_name("figures.yaml")
SITE = Path(__file__).with_name("site.yml")


@functools.cache
def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _digest(*parts: object) -> bytes:
    """Stable bytes derived from ``parts`` (deterministic per hostname and device)."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()


def _pick(lo: float, hi: float, *parts: object) -> float:
    """A deterministic value in [lo, hi] chosen by ``parts``."""
    frac = int.from_bytes(_digest(*parts)[:4], "big") / 0xFFFFFFFF
    return lo + (hi - lo) * frac


def _bus_id(profile: dict, index: int) -> str:
    """A GPU's bus id: the profile's board layout (``gpu.bus_ids``) when it gives one."""
    fixed = profile["gpu"].get("bus_ids") or []
    return fixed[index] if index < len(fixed) else f"00000000:{_bus(index, GPU_BUSES):02X}:00.0"


def _bus(index: int, table: tuple[int, ...]) -> int:
    """PCIe bus number of device ``index``; beyond the DGX table, spread over the bus space."""
    return table[index] if index < len(table) else (0x10 + index * 0x0E) % 0xF0


def _switch(index: int, count: int) -> int:
    """PCIe switch (0..3) a device sits behind: two devices per switch on an 8-device board."""
    per = max(1, -(-count // SWITCHES))
    return min(SWITCHES - 1, index // per)


def _numa(switch: int) -> int:
    """NUMA node of a PCIe switch: the first half of the switches hang off socket 0."""
    return switch * CPU["numa_nodes"] // SWITCHES


def _counters() -> dict:
    """A zeroed ECC counter block, as nvidia-smi reports per volatile/aggregate scope."""
    return {"sram_correctable": 0, "sram_uncorrectable": 0, "dram_correctable": 0, "dram_uncorrectable": 0}


def _nvlink(gpu: dict) -> dict:
    """NVLink block: all links active; empty when the profile has no NVLink."""
    nv = gpu.get("nvlink") or {}
    links = int(nv.get("links", 0))
    return {"version": nv.get("version"), "speed_GBps": float(nv.get("speed_GBps", 0.0)),
            "links": [{"link": i, "active": True} for i in range(links)]}


def nvlink_domain(profile: dict, node_index: int) -> int | None:
    """The NVLink domain (0-based) of the rack's node ``node_index``: consecutive nodes grouped by the profile's
    ``nvlink_domain.nodes`` (18 trays of a GB200 NVL72 rack); None where the profile has no NVLink domain."""
    domain = profile.get("nvlink_domain")
    return node_index // max(1, int(domain["nodes"])) if domain else None


def _fabric(profile: dict, node_index: int) -> dict | None:
    """The GPU's NVLink fabric registration (nvmlGpuFabricInfo) once training completed: an NVLink-domain tray
    shares its domain's clique and cluster UUID with the domain's other trays; an NVSwitch board's GPUs have no
    cluster. None where the GPUs meet through no NVLink fabric."""
    domain = nvlink_domain(profile, node_index)
    if domain is not None:
        return {"state": "Completed", "status": "Success", "clique_id": FIRST_CLIQUE + domain,
                "cluster_uuid": str(uuid.UUID(bytes=_digest("nvlink-domain", domain)[:16])),
                "health": dict(FABRIC_HEALTH_DOMAIN)}
    if profile["gpu"].get("nvswitch"):
        return {"state": "Completed", "status": "Success", "clique_id": 0, "cluster_uuid": NO_CLUSTER,
                "health": dict(FABRIC_HEALTH_NVSWITCH)}
    return None


def _c2c(gpu: dict) -> bool:
    """True where the GPU reaches its host over NVLink-C2C: a Grace superchip (GH200, GB200, GB300), whose
    product name starts "NVIDIA G" (the GB200 capture: c2c_mode Enabled, addressing_mode ATS; the B200's
    Disabled and None). A profile's ``gpu.c2c`` wins."""
    return bool(gpu.get("c2c", str(gpu["model"]).startswith("NVIDIA G")))


def _memory_errors(gpu: dict) -> dict:
    """Remapped rows (HBM, Ampere and later) or retired pages (older boards), healthy."""
    if gpu.get("memory_error_mechanism", "row_remapping") == "page_retirement":
        return {"remapped_rows": None, "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False}}
    return {"remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
            "retired_pages": None}


def _gpu(profile: dict, hostname: str, index: int, node_index: int = 0) -> dict:
    """One healthy GPU of ``profile`` on ``hostname``."""
    gpu = profile["gpu"]
    pcie = gpu.get("pcie", {"gen": 4, "width": 16})
    switch = _switch(index, int(gpu["count"]))
    serial = str(int.from_bytes(_digest(hostname, "gpu-serial", index)[:8], "big"))[-13:].rjust(13, "0")
    return {
        "index": index, "model": gpu["model"],
        "bus_id": _bus_id(profile, index),
        "serial": serial, "uuid": f"GPU-{uuid.UUID(bytes=_digest(hostname, 'gpu', index)[:16])}",
        "memory_total_MiB": int(gpu["memory_total_MiB"]), "memory_used_MiB": 0,
        "power_cap_W": float(gpu["power_cap_W"]),
        "power_W": round(_pick(*IDLE_POWER_W, hostname, "power", index), 2),
        "temp_C": round(_pick(*IDLE_TEMP_C, hostname, "temp", index)),
        "clocks": dict(IDLE_CLOCKS_MHZ),
        "pcie": {"gen_current": pcie["gen"], "gen_max": pcie["gen"],
                 "width_current": pcie["width"], "width_max": pcie["width"], "replays": 0},
        "nvlink": _nvlink(gpu), "nvswitch": bool(gpu.get("nvswitch", False)),
        "fabric": _fabric(profile, node_index), "c2c": _c2c(gpu),
        # The driver's own recovery action (gpu_recovery_action, R565+): "None" while the GPU needs none.
        "recovery_action": "None", "lost": False,
        "ecc": {"volatile": _counters(), "aggregate": _counters()},
        **_memory_errors(gpu),
        "present": True, "fallen_off_bus": False,
        "numa_node": _numa(switch), "pcie_switch": switch,
    }


def _guid(hostname: str, index: int) -> str:
    """A Mellanox-OUI (94:6d:ae) node GUID, deterministic per host and HCA."""
    tail = _digest(hostname, "hca", index)[:3].hex()
    return f"0x946dae0300{tail}"


def _hca(profile: dict, hostname: str, node_index: int, index: int) -> dict:
    """One healthy HCA port of ``profile``; LIDs are unique across the rack."""
    hca = profile["hca"]
    pcie = hca.get("pcie", {"gen": 4, "width": 16})
    switch = _switch(index, int(hca["count"]))
    guid = _guid(hostname, index)
    return {
        "name": f"mlx5_{index}", "port": 1, "state": "Active", "physical_state": "LinkUp",
        "rate_Gbps": int(hca["rate_Gbps"]), "link_layer": hca.get("link_layer", "InfiniBand"),
        "model": hca.get("model", "ConnectX-7"), "ca_type": CA_TYPES.get(hca.get("model"), "MT4129"),
        "fw_ver": str(_yaml(FIGURES).get(profile.get("name"), {}).get("hca_fw_ver", "28.39.1002")),
        "node_guid": guid, "port_guid": guid,
        "lid": 0x10 + node_index * int(hca["count"]) + index, "sm_lid": 1,
        "pcie": {"bdf": f"0000:{_bus(index, HCA_BUSES):02x}:00.0", "gen_current": pcie["gen"],
                 "gen_max": pcie["gen"], "width_current": pcie["width"], "width_max": pcie["width"]},
        "numa_node": _numa(switch), "pcie_switch": switch,
    }


def _mac(hostname: str, *parts: object) -> str:
    """A locally administered MAC address, deterministic per host and ``parts``."""
    raw = bytearray(_digest(hostname, "mac", *parts)[:6])
    raw[0] = (raw[0] & 0xFC) | 0x02
    return ":".join(f"{b:02x}" for b in raw)


def _storage(st: dict, hostname: str) -> dict:
    """The storage network bond of the site facts ``st``: all slaves up in one LACP aggregator
    facing one switch."""
    if not st:
        return {"bond": None}
    partner = _mac("leaf-switch", st.get("bond", "bond0"))
    slaves = [{"name": f"ens1f{i}", "mii_status": "up", "speed_Mbps": int(st.get("slave_speed_Mbps", 25000)),
               "aggregator_id": 1, "partner_mac": partner, "perm_hwaddr": _mac(hostname, "slave", i)}
              for i in range(int(st.get("slaves", 2)))]
    return {"bond": {"name": st.get("bond", "bond0"), "mode": st.get("mode", "802.3ad"),
                     "system_mac": slaves[0]["perm_hwaddr"] if slaves else _mac(hostname, "bond"),
                     "slaves": slaves}}


def build(profile: dict, hostname: str, node_index: int) -> dict:
    """The healthy hardware model of node ``hostname`` (``node_index`` 0-based in the rack)."""
    gpu_count = int((profile.get("gpu") or {}).get("count", 0))
    hca_count = int((profile.get("hca") or {}).get("count", 0))
    hca = profile.get("hca") or {}
    return {
        "hostname": hostname, "profile": profile.get("name"),
        "cpu": dict(GRACE_CPU if gpu_count and _c2c(profile["gpu"]) else CPU),
        "gpus": [_gpu(profile, hostname, i, node_index) for i in range(gpu_count)],
        "hcas": [_hca(profile, hostname, node_index, i) for i in range(hca_count)],
        "nominal": {"hca_rate_Gbps": hca.get("rate_Gbps"),
                    "gpu_pcie": dict((profile.get("gpu") or {}).get("pcie") or {}),
                    "hca_pcie": dict(hca.get("pcie") or {})},
        "storage": _storage(_yaml(SITE).get("provision_storage") or {}, hostname),
        "kernel_log": [],
        "performance": dict(_yaml(FIGURES).get(profile.get("name")) or {}),
        "noise_pct": NOISE_PCT,
        "faults": {},
    }


def dump(model: dict) -> str:
    """The model as YAML text, the content of ``/etc/provision-sim/hardware.yaml``."""
    return yaml.dump(model, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=False)  # libyaml's emitter: PyYAML's own took ~0.5 s per node
