"""A simulated node's hardware model, built from a hardware profile.

The model is a plain, YAML-serialisable dict written to ``/etc/provision-sim/hardware.yaml``
inside each simulated node; the simulated tools (``provision/sim/tools/``) compute their
output from it. Faults are injected by editing the model (``faults``, per-device fields,
``kernel_log``), never by telling a tool what to print.

Firmware and settings (VBIOS, InfoROM, persistence, MIG, ECC, power limits, application clocks per GPU; board id
and MTU per HCA) and the platform facts (BIOS, system, BMC, kernel command line, governor, IOMMU mode, loaded
modules, the PCIe bridges above each device: ``nodefacts``) are part of the model, each with its source.

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

from provision.sim import nodefacts

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
# GPU firmware by product-name fragment: (VBIOS, InfoROM image) as the real captures print them (nvidia-smi -q
# "VBIOS Version" and "Inforom Version / Image Version"; -q -x <vbios_version>, <inforom_version><img_version>):
# H100 SXM5 smi_q_h100x8_535_183.txt, B200 nvidia_smi_qx_b200_8gpu_driver580_hgx.txt, GB200
# nvidia_smi_qx_gb200_4gpu_driver580_fabric_completed.txt, A10 smi_q_a10_remap_pending_535_129.txt, T4
# smi_qx_t4_v11_width_x8.txt (all tests/data/samples/). A model with no published capture (H200, A100, RTX 4090)
# has none: nvidia-smi prints N/A rather than an invented version. Keys match whole words of the product name.
GPU_FIRMWARE = (("GB200", "97.00.B9.00.69", "G548.0201.00.06"), ("B200", "97.00.FA.00.09", "G525.0220.00.03"),
                ("H100", "96.00.74.00.01", "G520.0200.00.05"), ("A10", "94.02.5C.00.04", "G133.0215.00.06"),
                ("T4", "90.04.84.00.06", "G183.0200.00.02"))
# The lowest power limit nvidia-smi -pl accepts on an H100 SXM5 ("Min Power Limit : 200.00 W",
# smi_q_h100x8_535_183.txt; the B200 capture's <min_power_limit> is 200.00 W too); other models reuse it.
MIN_POWER_LIMIT_W = 200.0
# HCA board id (PSID, ibv_devinfo "board_id:") by (ConnectX model, rate): a ConnectX-7 single-port OSFP NDR card
# MCX75310AAS-NEAT is MT_0000000838 (mlxfwmanager's "PSID: MT_0000000838" beside "NVIDIA ConnectX-7 HHHL Adapter
# card; 400GbE / NDR IB ... Single-port OSFP", and ibv_devinfo's "board_id: MT_0000000838" on CX-7 hosts, public
# ibv_devinfo pastes); a ConnectX-6 HDR single-port QSFP56 MCX653105A-HDAT is MT_0000000223 (NVIDIA's ConnectX-6
# firmware download table, PSID column). Others: None (ibv_devinfo then prints no board_id line, as for a device
# whose driver does not report one).
HCA_PSIDS = {("ConnectX-7", 400): "MT_0000000838", ("ConnectX-6", 200): "MT_0000000223"}
# The IB MTU of a healthy NDR/HDR port: ibv_devinfo "max_mtu: 4096 (5)" and "active_mtu: 4096 (5)" (the ConnectX-7
# hosts' ibv_devinfo in tests/data/samples/ibv_devinfo_cx7_board_id_mtu1024.txt print both; the simulator printed
# 4096 before it had the field).
IB_MTU = 4096
# Healthy figures per profile name, each with its source (figures.yaml), and the rack's site settings, whose
# provision_storage is the storage bond the simulated kernel shows (site.yml).
FIGURES = Path(__file__).with_name("figures.yaml")
SITE = Path(__file__).with_name("site.yml")


@functools.cache
def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def figures(profile_name: str | None) -> dict:
    """The healthy figures of profile ``profile_name`` (figures.yaml), without their ``sources``: what the
    simulated tools read. Empty for a profile the simulator has no figures for."""
    row = _yaml(FIGURES).get(profile_name) or {}
    return {key: value for key, value in row.items() if key != "sources"}


def figure_sources(profile_name: str) -> dict:
    """Each figure's source in figures.yaml: figure -> (source text, estimate)."""
    out = {}
    for key, given in ((_yaml(FIGURES).get(profile_name) or {}).get("sources") or {}).items():
        given = given if isinstance(given, dict) else {"source": given}
        out[key] = (str(given.get("source") or ""), given.get("estimate") is True)
    return out


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


def _firmware(model: str) -> tuple[str | None, str | None]:
    """(VBIOS, InfoROM image) of GPU product ``model`` (GPU_FIRMWARE), (None, None) without a capture."""
    words = model.split()  # whole words: "A10" is not "A100-SXM4-80GB", "B200" not "GB200"
    return next(((vbios, image) for key, vbios, image in GPU_FIRMWARE
                 if any(w == key or w.startswith(key + "-") for w in words)), (None, None))


def _settings(gpu: dict) -> dict:
    """A healthy GPU's firmware and settings, as a provisioned node keeps them (module doc: each with its source).
    ``gsp_firmware_version`` None: the GSP firmware is the one the loaded driver ships, printed as the driver's
    version ("GSP Firmware Version : 535.183.01" beside "Driver Version : 535.183.01" in smi_q_h100x8_535_183).
    Persistence on (nvidia-persistenced runs; the tool also needs the daemon), MIG off and ECC on as in the H100 and
    B200 captures; power limit = default = max = the profile's cap ("700.00 W" x3 in the H100 capture, "1000.00 W"
    in the B200's); application clocks = default = the maximum clocks (1980/2619 MHz in the H100 capture, 1965/3996
    in the B200's: both at the max clocks)."""
    vbios, image = _firmware(str(gpu["model"]))
    cap = float(gpu["power_cap_W"])
    apps = {"graphics": IDLE_CLOCKS_MHZ["max_graphics"], "memory": IDLE_CLOCKS_MHZ["max_memory"]}
    return {"vbios_version": vbios, "inforom_image_version": image, "gsp_firmware_version": None,
            "persistence_mode": "Enabled", "mig_mode": {"current": "Disabled", "pending": "Disabled"},
            "ecc_mode": {"current": "Enabled", "pending": "Enabled"},
            "power_limit_W": cap, "default_power_limit_W": cap, "max_power_limit_W": cap,
            "min_power_limit_W": min(MIN_POWER_LIMIT_W, cap),
            "applications_clocks_MHz": dict(apps), "default_applications_clocks_MHz": dict(apps)}


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
                 "width_current": pcie["width"], "width_max": pcie["width"], "replays": 0,
                 "replay_rollovers": 0},
        "nvlink": _nvlink(gpu), "nvswitch": bool(gpu.get("nvswitch", False)),
        "fabric": _fabric(profile, node_index), "c2c": _c2c(gpu),
        # The driver's own recovery action (gpu_recovery_action, R565+): "None" while the GPU needs none.
        "recovery_action": "None", "lost": False,
        "ecc": {"volatile": _counters(), "aggregate": _counters()},
        **_memory_errors(gpu),
        "present": True, "fallen_off_bus": False,
        "numa_node": _numa(switch), "pcie_switch": switch,
        **_settings(gpu),
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
        "fw_ver": str(figures(profile.get("name")).get("hca_fw_ver", "28.39.1002")),
        "board_id": HCA_PSIDS.get((hca.get("model", "ConnectX-7"), int(hca["rate_Gbps"]))),
        "active_mtu": IB_MTU, "max_mtu": IB_MTU,
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
    cpu = dict(GRACE_CPU if gpu_count and _c2c(profile["gpu"]) else CPU)
    gpus = [_gpu(profile, hostname, i, node_index) for i in range(gpu_count)]
    hcas = [_hca(profile, hostname, node_index, i) for i in range(hca_count)]
    gpu_devices = [(f"gpu{g['index']}", int(g["bus_id"].split(":")[1], 16), g["pcie_switch"], g["numa_node"])
                   for g in gpus]
    hca_devices = [(h["name"], int(h["pcie"]["bdf"].split(":")[1], 16), h["pcie_switch"], h["numa_node"])
                   for h in hcas]
    return {
        "hostname": hostname, "profile": profile.get("name"),
        "cpu": cpu,
        "gpus": gpus,
        "hcas": hcas,
        "nominal": {"hca_rate_Gbps": hca.get("rate_Gbps"),
                    "gpu_pcie": dict((profile.get("gpu") or {}).get("pcie") or {}),
                    "hca_pcie": dict(hca.get("pcie") or {})},
        "storage": _storage(_yaml(SITE).get("provision_storage") or {}, hostname),
        "kernel_log": [],
        **nodefacts.node(profile, hostname, str(cpu.get("arch", "x86_64"))),
        "pcie_bridges": nodefacts.bridges(gpu_devices, hca_devices) if gpu_count or hca_count else [],
        "performance": figures(profile.get("name")),
        "noise_pct": NOISE_PCT,
        "faults": {},
    }


def dump(model: dict) -> str:
    """The model as YAML text, the content of ``/etc/provision-sim/hardware.yaml``."""
    return yaml.dump(model, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=False)  # libyaml's emitter: PyYAML's own took ~0.5 s per node
