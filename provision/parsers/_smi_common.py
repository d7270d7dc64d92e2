"""What ``nvidia-smi -q`` text and ``-q -x`` XML share: the paths of each field
across driver branches and how the ECC, row-remap and page-retirement fields fold
into the contract's keys. A ``get(*path)`` callable hides text tree versus XML.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from provision.parsers._util import is_digits, non_negative, num, temperature, to_int, yes_no

Getter = Callable[..., "str | None"]
number = num

# Candidate paths below "ECC Errors"/<ecc_errors> -> volatile|aggregate, newest first.
TEXT_ECC = {
    "scopes": ("volatile", "aggregate"),
    "dram": [("dram uncorrectable",), ("double bit", "device memory")],
    "sram": [("sram uncorrectable",)],
    "sram_split": [("sram uncorrectable parity",), ("sram uncorrectable sec-ded",)],
    "total": ("double bit", "total"),
}
XML_ECC = {
    "scopes": ("volatile", "aggregate"),
    "dram": [("dram_uncorrectable",), ("double_bit", "device_memory")],
    "sram": [("sram_uncorrectable",)],
    "sram_split": [("sram_uncorrectable_parity",), ("sram_uncorrectable_secded",)],
    "total": ("double_bit", "total"),
}
TEXT_REMAP = ("correctable error", "uncorrectable error", "pending", "remapping failure occurred")
XML_REMAP = ("remapped_row_corr", "remapped_row_unc", "remapped_row_pending", "remapped_row_failure")
TEXT_RETIRED = {"pending": ["pending page blacklist", "pending page retirement", "pending"],
                "single_bit": ("single bit ecc",), "double_bit": ("double bit ecc",)}
XML_RETIRED = {"pending": ["pending_blacklist", "pending_retirement"],
               "single_bit": ("multiple_single_bit_retirement", "retired_count"),
               "double_bit": ("double_bit_retirement", "retired_count")}
TEXT_POWER = [(section, key) for section in ("gpu power readings", "power readings")
              for key in ("power draw", "instantaneous power draw", "average power draw")]
XML_POWER = [(section, key) for section in ("gpu_power_readings", "power_readings")
             for key in ("power_draw", "instant_power_draw", "average_power_draw")]


def getter(tree: dict) -> Getter:
    """``get(*path)`` over a nested dict of strings; None when absent or a section."""
    def get(*path: str) -> str | None:
        node = tree
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node if isinstance(node, str) else None
    return get


def first_number(get: Getter, paths: Sequence[tuple[str, ...]]) -> int | float | None:
    """The first path that holds a number."""
    for path in paths:
        value = num(get(*path))
        if value is not None:
            return value
    return None


def ecc(get: Getter, base: str, names: dict) -> dict:
    """Uncorrectable DRAM and SRAM counters, volatile and aggregate."""
    out = {}
    for scope in names["scopes"]:
        dram = first_number(get, [(base, scope, *p) for p in names["dram"]])
        out[f"ecc_uncorrected_{scope}"] = dram
        out[f"sram_uncorrected_{scope}"] = _sram(get, (base, scope), names, dram)
    return out


def _sram(get: Getter, prefix: tuple, names: dict, dram: int | float | None) -> int | float | None:
    """SRAM uncorrectable: one field, the parity + SEC-DED pair, or old total minus DRAM."""
    single = first_number(get, [(*prefix, *p) for p in names["sram"]])
    if single is not None:
        return single
    split = [num(get(*prefix, *p)) for p in names["sram_split"]]
    if any(v is not None for v in split):
        return sum(v for v in split if v is not None)
    total = num(get(*prefix, *names["total"]))
    old_dram = num(get(*prefix, *names["dram"][-1]))
    if total is not None and old_dram is not None:
        return total - old_dram
    return None


def remapped(get: Getter, base: str, keys: tuple) -> dict | None:
    """Row-remapper counters, or None where the GPU has no row remapping ("N/A")."""
    corr, unc, pending, failure = (get(base, key) for key in keys)
    record = {"correctable": num(corr), "uncorrectable": num(unc),
              "pending": yes_no(pending), "failure": yes_no(failure)}
    return None if all(v is None for v in record.values()) else record


def retired_pending(get: Getter, base: str, names: dict) -> bool | None:
    """True if a page retirement is pending, False if "No", None where "N/A"."""
    flags = [yes_no(get(base, key)) for key in names["pending"]]
    if True in flags:
        return True
    return False if False in flags else None


def retired_pages(get: Getter, base: str, names: dict) -> dict | None:
    """Retired-page counts and pending flag, or None where all are "N/A"."""
    record = {"single_bit": num(get(base, *names["single_bit"])),
              "double_bit": num(get(base, *names["double_bit"])),
              "pending": retired_pending(get, base, names)}
    return None if all(v is None for v in record.values()) else record


# Contract keys that are counts, link facts or power: never negative.
NOT_NEGATIVE = ("ecc_uncorrected_volatile", "ecc_uncorrected_aggregate", "sram_uncorrected_volatile",
                "sram_uncorrected_aggregate", "power_W", "pcie_gen_current", "pcie_gen_max", "width_current",
                "width_max", "pcie_replays", "pcie_replay_rollovers")


def checked(gpu: dict) -> dict:
    """``gpu`` unless a value is impossible (ParseError): a temperature outside ``TEMP_RANGE_C``,
    a negative counter, link generation, width or power."""
    where = f"GPU {str(gpu.get('bus_id'))[:24]}"
    temperature(gpu.get("temp_C"), f"{where} temperature")
    for key in NOT_NEGATIVE:
        non_negative(gpu.get(key), f"{where} {key}")
    for part in ("remapped_rows", "retired_pages"):
        for key, value in (gpu.get(part) or {}).items():
            if not isinstance(value, bool):
                non_negative(value, f"{where} {part}.{key}")
    return gpu


def complete(gpus: list[dict], attached: int | None, last_closed: bool) -> bool:
    """All "Attached GPUs" are present and the last one reached its end."""
    return attached is not None and len(gpus) == attached and last_closed


# nvmlErrorString() texts nvidia-smi prints in place of a value it cannot read from a GPU.
LOST_TEXTS = ("gpu is lost", "unknown error")
# Contract key -> path below "Fabric"/<fabric> (driver 550+; "Summary" 570+).
TEXT_FABRIC = {"state": ("state",), "status": ("status",), "clique_id": ("cliqueid",),
               "cluster_uuid": ("clusteruuid",), "health_summary": ("health", "summary"),
               "bandwidth": ("health", "bandwidth")}
XML_FABRIC = {"state": ("state",), "status": ("status",), "clique_id": ("cliqueId",),
              "cluster_uuid": ("clusterUuid",), "health_summary": ("health", "summary"),
              "bandwidth": ("health", "bandwidth")}


def _printed(text: str | None) -> str | None:
    """A value as printed; None where absent, "N/A" or an error text."""
    if text is None or not text.strip() or text.strip().upper() == "N/A" or is_lost_text(text):
        return None
    return text.strip()


def is_lost_text(text: str | None) -> bool:
    return text is not None and text.strip().lower() in LOST_TEXTS


def fabric(get: Getter, base: str, paths: dict, present: bool) -> dict | None:
    """The GPU's fabric block (state, status, clique id as an int, cluster UUID and health as
    printed; N/A is None), or None where the GPU prints no fabric block. ParseError for a clique
    id over ``MAX_NUMBER_CHARS`` digits."""
    if not present:
        return None
    record: dict = {key: _printed(get(base, *path)) for key, path in paths.items()}
    clique = record["clique_id"]
    record["clique_id"] = to_int(clique, "clique id") if clique is not None and is_digits(clique) else None
    return record


def recovery_action(text: str | None) -> str | None:
    """The driver's GPU recovery action as printed ("None", "GPU Reset", ...); None if N/A or absent."""
    return _printed(text)


def lost(values: list[str], name: str | None) -> bool:
    """True where nvidia-smi printed "GPU is lost" for any field of this GPU, or "Unknown Error"
    in place of its product name (NVML could not read the GPU at all)."""
    return is_lost_text(name) or any(v.strip().lower() == LOST_TEXTS[0] for v in values if v)


def blank_lost(gpu: dict) -> dict:
    """A lost GPU's record: every field printed as an error text is None, ``lost`` true."""
    return {k: (None if isinstance(v, str) and is_lost_text(v) else v) for k, v in gpu.items()} | {"lost": True}


# "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error" (nvidia-smi's line for a
# GPU that NVML cannot open; "GPU 0000:0C:00.0: GPU is lost.  Reboot the system ..." once it fell off the bus).
HANDLE_ERROR = re.compile(r"Unable to determine the device handle for GPU\s?"
                          r"([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?): "
                          r"(GPU is lost|Unknown Error)")


def unreachable(text: str, gpus: list[dict], blank: Callable[[str], dict]) -> list[dict]:
    """Records for GPUs nvidia-smi names in an "Unable to determine the device handle" line and
    prints no section for: ``blank(bus id as printed)`` (every field None) with ``lost`` true."""
    seen = {_short_bus(g.get("bus_id") or "") for g in gpus}
    out: list[dict] = []
    for match in HANDLE_ERROR.finditer(text):
        bus = match.group(1)
        if _short_bus(bus) not in seen:
            seen.add(_short_bus(bus))
            out.append(blank(bus) | {"lost": True, "lost_reason": match.group(2)})
    return out


def _short_bus(bus: str) -> str:
    """"00000000:A1:00.0" and "0000:a1:00.0" -> "a1:00.0" plus the domain's value."""
    parts = bus.lower().split(":")
    if len(parts) == 3:
        parts[0] = parts[0].lstrip("0")
    return ":".join(parts)


# Firmware and settings fields (issue 33): paths per format, newest first. The text report prints
# "Inforom Version / Image Version", "MIG Mode / Current", "ECC Mode / Current", "Applications Clocks /
# Graphics, Memory"; the XML the same under <inforom_version><img_version>, <mig_mode><current_mig>,
# <ecc_mode><current_ecc>, <applications_clocks><graphics_clock>/<mem_clock>. Power limits: 535+
# "GPU Power Readings"/<gpu_power_readings> "Current Power Limit"/<current_power_limit>; older drivers
# "Power Readings"/<power_readings> "Power Limit"/<power_limit> or "Enforced Power Limit"/<enforced_power_limit>.
TEXT_SETTINGS = {
    "vbios": ("vbios version",), "inforom": ("inforom version", "image version"),
    "gsp": ("gsp firmware version",), "mig": ("mig mode", "current"), "ecc_mode": ("ecc mode", "current"),
    "power_limit": [(s, k) for s in ("gpu power readings", "power readings")
                    for k in ("current power limit", "power limit", "enforced power limit")],
    "default_power_limit": [(s, "default power limit") for s in ("gpu power readings", "power readings")],
    "max_power_limit": [(s, "max power limit") for s in ("gpu power readings", "power readings")],
    "clocks": ("applications clocks", ("graphics",), ("memory",)),
    "default_clocks": ("default applications clocks", ("graphics",), ("memory",)),
}
XML_SETTINGS = {
    "vbios": ("vbios_version",), "inforom": ("inforom_version", "img_version"),
    "gsp": ("gsp_firmware_version",), "mig": ("mig_mode", "current_mig"), "ecc_mode": ("ecc_mode", "current_ecc"),
    "power_limit": [(s, k) for s in ("gpu_power_readings", "power_readings")
                    for k in ("current_power_limit", "power_limit", "enforced_power_limit")],
    "default_power_limit": [(s, "default_power_limit") for s in ("gpu_power_readings", "power_readings")],
    "max_power_limit": [(s, "max_power_limit") for s in ("gpu_power_readings", "power_readings")],
    "clocks": ("applications_clocks", ("graphics_clock",), ("mem_clock",)),
    "default_clocks": ("default_applications_clocks", ("graphics_clock",), ("mem_clock",)),
}


def settings(get: Getter, names: dict) -> dict:
    """Firmware versions, MIG and ECC modes, power limits (W) and application clocks (MHz) of one GPU;
    None where the field is absent or printed as "N/A"."""
    return {
        "vbios_version": _printed(get(*names["vbios"])),
        "inforom_image_version": _printed(get(*names["inforom"])),
        "gsp_firmware_version": _printed(get(*names["gsp"])),
        "mig_mode_current": _mode(get(*names["mig"])),
        "ecc_mode_current": _mode(get(*names["ecc_mode"])),
        "power_limit_W": _watts(get, names["power_limit"], "power limit"),
        "default_power_limit_W": _watts(get, names["default_power_limit"], "default power limit"),
        "max_power_limit_W": _watts(get, names["max_power_limit"], "max power limit"),
        "applications_clocks_MHz": _clocks(get, names["clocks"]),
        "default_applications_clocks_MHz": _clocks(get, names["default_clocks"]),
    }


def _mode(text: str | None) -> str | None:
    """"Enabled"/"Disabled" as printed; None for "N/A", an error text or any other word."""
    value = _printed(text)
    return value if value in ("Enabled", "Disabled") else None


def _watts(get: Getter, paths: Sequence[tuple[str, ...]], what: str) -> float | None:
    value = first_number(get, paths)
    return None if value is None else float(non_negative(value, what, "W"))


def _clocks(get: Getter, names: tuple) -> dict | None:
    """{"graphics": MHz, "memory": MHz}, or None unless both are printed as numbers."""
    base, graphics, memory = names
    values = [num(get(base, *graphics)), num(get(base, *memory))]
    if any(v is None for v in values):
        return None
    return {"graphics": int(non_negative(values[0], "applications graphics clock", "MHz")),
            "memory": int(non_negative(values[1], "applications memory clock", "MHz"))}
