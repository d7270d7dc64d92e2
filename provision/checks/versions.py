"""Firmware and software versions as the firmware checks read them, and the two ways they are judged.

What is read (``FIELDS``, each at one level: per GPU, per HCA or per node):

- per GPU, from ``nvidia-smi -q -x`` (NVML's device queries, https://docs.nvidia.com/deploy/nvidia-smi/): ``vbios``
  (VBIOS Version), ``inforom`` (InfoROM Image Version), ``gsp`` (GSP Firmware Version, N/A where the GPU runs no GSP);
- per HCA, from ``ibv_devinfo`` (rdma-core; the kernel's ``/sys/class/infiniband/<hca>/{fw_ver,board_id}``):
  ``hca_fw`` (fw_ver) and ``hca_board_id`` (board_id, the PSID: which firmware image the card takes);
- per node: ``bios`` (``dmidecode -t bios``: BIOS Version), ``bmc`` (``ipmitool mc info``: Firmware Revision),
  ``kernel`` (``uname -r``), ``driver`` (nvidia-smi's driver_version).

Judged two ways:

- against the site's manifest (``provision_firmware`` in the inventory, per group: each field a version or a list of
  allowed versions, for rolling updates; ``manifest_of``): a value it does not allow fails FIRMWARE_NOT_IN_MANIFEST;
- against the majority (``odd_ones``): among the units of one field (a node's GPUs; a profile's GPUs across the run),
  the value more than half of them report is the majority, and every unit with another value is named with its value
  and the majority's (FIRMWARE_ODD_ONE_OUT). Without such a value (4 and 4, or 3, 3 and 2) no unit can be called the
  odd one: the split is a finding of the whole group (FIRMWARE_SPLIT), never a guess. aznhc's VBIOS check passes a
  node when any one GPU matches its list; here every GPU is judged.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from provision.checks import faults
from provision.errors import ParseError
from provision.results.model import Finding

# field -> (level, what it is), in the order reports show them.
FIELDS = {
    "vbios": ("GPU", "VBIOS version"),
    "inforom": ("GPU", "InfoROM image version"),
    "gsp": ("GPU", "GSP firmware version"),
    "hca_fw": ("HCA", "HCA firmware version"),
    "hca_board_id": ("HCA", "HCA board id (PSID)"),
    "bios": ("node", "BIOS version"),
    "bmc": ("node", "BMC firmware revision"),
    "kernel": ("node", "kernel release"),
    "driver": ("node", "NVIDIA driver version"),
    # From the BMC, out of band (Redfish UpdateService/FirmwareInventory, DMTF DSP0268 SoftwareInventory), each
    # member classed by its Id and Name (``firmware_class``): on an HGX board the GPU and NVSwitch entries are what
    # the baseboard's HMC reports (NVIDIA DGX H100/B200 BMC Redfish: HGX_FW_GPU_SXM_N, HGX_FW_NVSwitch_N)
    "bmc_fw": ("node", "BMC firmware (the BMC's firmware inventory)"),
    "bios_fw": ("node", "BIOS firmware (the BMC's firmware inventory)"),
    "cpld": ("node", "CPLD firmware, every CPLD's as Id=version (the BMC's firmware inventory)"),
    "gpu_fw": ("GPU", "GPU firmware (the HGX HMC's, through the BMC)"),
    "nvswitch_fw": ("NVSwitch", "NVSwitch firmware (the HGX HMC's, through the BMC)"),
    "hmc_fw": ("node", "HGX baseboard management controller (HMC) firmware (through the BMC)"),
}
# firmware_class: the first of these words in a firmware inventory member's Id or Name (lower case) gives its field;
# a member that names none is another component's, recorded, not compared (a NIC's, a PSU's, a retimer's)
# (an HGX InfoROM entry is the GPU's InfoROM image, judged with nvidia-smi's; HGX_FW_BMC is the baseboard's HMC, not
# the node's BMC). The parts that guard or join another are classed first, as no field: an ERoT (HGX_FW_ERoT_GPU_SXM_1,
# HGX_FW_ERoT_NVSwitch_0, HGX_FW_ERoT_BMC_0: the external root of trust of that part), a PCIe switch, a retimer or an
# FPGA runs firmware of its own, not the part's it names (NVIDIA HGX H100 firmware inventory ids, nvfwupd).
CLASSES: tuple[tuple[str, str | None], ...] = (
    ("erot", None), ("pcieswitch", None), ("retimer", None), ("fpga", None), ("inforom", "inforom"),
    ("nvswitch", "nvswitch_fw"), ("gpu", "gpu_fw"), ("cpld", "cpld"),
    ("hgx_fw_bmc", "hmc_fw"), ("hmc", "hmc_fw"), ("bios", "bios_fw"), ("uefi", "bios_fw"), ("bmc", "bmc_fw"))
MANIFEST_VAR = "provision_firmware"


@dataclass(frozen=True)
class Unit:
    """One versioned thing: ``field``'s value on ``device`` (``GPU3 00000000:5D:00.0``, ``mlx5_3``, ``node``)."""

    field: str
    device: str
    value: str | None


def units(parsed: dict[str, dict], hcas: tuple[str, ...] | list[str] | None = None) -> list[Unit]:
    """The versions of one node's firmware outputs (step key -> parse result: ``gpus``, ``hcas``, ``bios``, ``bmc``,
    ``kernel``, ``bmc_firmware``: the BMC's firmware inventory), every field of ``FIELDS`` for each of its units; a
    value the tool printed as N/A is None. ``hcas``: the RDMA devices judged (the profile's: a storage NIC or a
    BlueField DPU beside them is another card, with its own firmware line and PSID); None for every one ibv_devinfo
    lists. Raises ParseError when an output lacks what the check reads."""
    out: list[Unit] = []
    smi = parsed.get("gpus")
    if smi is not None:
        for i, gpu in enumerate(smi.get("gpus") or []):
            device = f"GPU{i} {gpu.get('bus_id')}"
            out += [Unit("vbios", device, _text(gpu.get("vbios_version"))),
                    Unit("inforom", device, _text(gpu.get("inforom_image_version"))),
                    Unit("gsp", device, _text(gpu.get("gsp_firmware_version")))]
        out.append(Unit("driver", "node", _text(smi.get("driver_version"))))
    if parsed.get("hcas") is not None:
        if "cas" not in parsed["hcas"]:
            raise ParseError("ibv_devinfo output holds no hca_id block")
        for ca in parsed["hcas"]["cas"]:
            if hcas is not None and ca["ca"] not in hcas:
                continue
            out += [Unit("hca_fw", ca["ca"], _text(ca.get("fw_ver"))),
                    Unit("hca_board_id", ca["ca"], _text(ca.get("board_id")))]
    if "bios" in parsed:
        out.append(Unit("bios", "node", _text((parsed["bios"].get("bios") or {}).get("version"))))
    if "bmc" in parsed:
        out.append(Unit("bmc", "node", _text(parsed["bmc"].get("firmware_revision"))))
    if "kernel" in parsed:
        out.append(Unit("kernel", "node", _text(parsed["kernel"].get("kernel"))))
    return out + _inventoried(parsed.get("bmc_firmware") or {})


def _inventoried(parsed: dict) -> list[Unit]:
    """The units of the BMC's firmware inventory (parser ``redfish-firmware``), each member classed by its Id and
    Name (``firmware_class``); a member of no class is left out."""
    out, cplds = [], []
    for member in parsed.get("firmware") or []:
        field = firmware_class(f"{member.get('id') or ''} {member.get('name') or ''}")
        device = str(member.get("id") or member.get("name"))
        if field == "cpld":  # a node's CPLDs are different parts: one unit of them all, compared across nodes whole
            cplds.append(f"{device}={_text(member.get('version'))}")
        elif field is not None:
            out.append(Unit(field, "node" if FIELDS[field][0] == "node" else device, _text(member.get("version"))))
    return out + ([Unit("cpld", "node", ", ".join(sorted(cplds)))] if cplds else [])


def firmware_class(text: str) -> str | None:
    """The ``FIELDS`` field of a BMC firmware inventory member from its Id and Name (``CLASSES``: the first word
    found), or None."""
    low = text.lower()
    return next((field for word, field in CLASSES if word in low), None)


def _text(value: object) -> str | None:
    text = str(value).strip() if value is not None else ""
    return None if text in ("", "N/A") else text


def manifest_of(site: dict) -> dict[str, tuple[str, ...]]:
    """The site's manifest (``profile.site["firmware"]``, from ``provision_firmware``, checked against
    site.schema.json as the host's profile is built: known fields, each a version or a non-empty list of them):
    field -> allowed versions."""
    raw = site.get("firmware") or {}
    return {field: tuple(allowed) if isinstance(allowed, (list, tuple)) else (allowed,)
            for field, allowed in raw.items()}


def against_manifest(found: list[Unit], manifest: dict[str, tuple[str, ...]], fault: str) -> list[Finding]:
    """One finding per unit whose field the manifest names: its value among the allowed ones (a unit that printed
    no value fails too: the manifest asks for one); ``fault`` the code of one that is not."""
    out = []
    for unit in found:
        allowed = manifest.get(unit.field)
        if allowed is None:
            continue
        ok = unit.value in allowed or (unit.field == "cpld" and unit.value is not None and all(
            part.partition("=")[2] in allowed for part in unit.value.split(", ")))  # each CPLD's version allowed
        out.append(Finding(device=unit.device, metric=unit.field, value=unit.value, ok=ok,
                           expected=allowed[0] if len(allowed) == 1 else list(allowed), fault=fault,
                           action=faults.action(fault),
                           detail=f"{FIELDS[unit.field][1]} not in the site's {MANIFEST_VAR}" if not ok else ""))
    return out


def majority(values: list[str]) -> tuple[str | None, Counter]:
    """(the value more than half of ``values`` hold, or None; the count of each value)."""
    counts = Counter(values)
    if not counts:
        return None, counts
    value, count = counts.most_common(1)[0]
    return (value if count * 2 > len(values) else None), counts


def odd_ones(found: list[tuple[str, Unit]], scope: str, odd: str, split: str) -> list[Finding]:
    """Per field, the units (host, unit) against their majority (``majority``): a passing finding per unit that
    agrees, ``odd`` (the fault code) per unit that differs, and per field with no majority a ``split`` finding for each
    host of the group (the whole group's finding: every host it covers is named, none guessed to be the odd one).
    ``scope`` says what was compared ("node01", "the run's 64 h100-sxm5-80g-ndr hosts"). Units that printed no value
    are left out. A field with a single unit is not judged."""
    out: list[Finding] = []
    for field, (level, what) in FIELDS.items():
        rows = [(host, u) for host, u in found if u.field == field and u.value is not None]
        if len(rows) < 2:
            continue
        want, counts = majority([u.value for _, u in rows if u.value is not None])
        if want is None:  # the whole group's finding: once per host it covers, never one host guessed
            shown = ", ".join(f"{v} x{n}" for v, n in counts.most_common())
            out += [Finding(device=f"{level}s", metric=field, value=shown, ok=False, fault=split,
                            action=faults.action(split), host=host,
                            detail=f"{what}: no version held by more than half of the {len(rows)} {level}s of "
                                   f"{scope}") for host in dict.fromkeys(h for h, _ in rows)]
            continue
        for host, unit in rows:
            ok = unit.value == want
            out.append(Finding(device=unit.device, metric=field, value=unit.value, ok=ok, expected=want, host=host,
                               fault=odd, action=faults.action(odd),
                               detail="" if ok else f"{what}: the other {counts[want]} of {len(rows)} {level}s of "
                                                    f"{scope} run {want}"))
    return out


def distribution(found: list[tuple[str, Unit]]) -> dict[str, list[tuple[str, int, list[str]]]]:
    """field -> [(value, units holding it, their hosts)], most common value first; a unit that printed no value
    counts as ``N/A``."""
    out: dict[str, list[tuple[str, int, list[str]]]] = {}
    for field in FIELDS:
        rows = [(host, u.value or "N/A") for host, u in found if u.field == field]
        counts = Counter(value for _, value in rows)
        out[field] = [(value, n, sorted({h for h, v in rows if v == value})) for value, n in counts.most_common()]
    return {f: rows for f, rows in out.items() if rows}
