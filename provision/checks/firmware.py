"""firmware: every GPU's VBIOS, InfoROM and GSP firmware, every HCA's firmware and board id, the node's BIOS, BMC,
kernel and driver, against the site's manifest and against the node's own other devices.

Tools (one step each): ``nvidia-smi -q -x`` (``gpus``; parser ``nvidia-smi-qx``: vbios_version,
inforom_image_version, gsp_firmware_version, driver_version; tested on the drivers 535 H100, 580 B200 and GB200
captures), ``ibv_devinfo`` (``hcas``; rdma-core's fw_ver and board_id per hca_id), ``dmidecode -t bios -t system``
(``bios``: SMBIOS type 0 "Version"; only the profile's HCAs are judged: a storage NIC or a DPU beside them is
another card with its own firmware line), ``ipmitool mc info`` (``bmc``: "Firmware Revision" of the BMC's Get Device ID
response, IPMI 2.0 section 20.1) and ``uname -r`` (``kernel``); where the inventory names the node's BMC over Redfish,
out of band, the BMC's firmware inventory (``bmc_firmware``: ``UpdateService/FirmwareInventory``, parser
``redfish-firmware``: BMC, BIOS, CPLD and on HGX the GPU and NVSwitch firmware the baseboard's HMC reports). What
each field is and how the two rules work: ``provision.checks.versions``.

Judges: with a site manifest (inventory variable ``provision_firmware``, per group: each field a version or a list
of allowed versions) every unit the manifest names (FIRMWARE_NOT_IN_MANIFEST); and the node's GPUs and HCAs against
each other: a GPU on another VBIOS than the node's other GPUs is named (FIRMWARE_ODD_ONE_OUT), a node split with no
majority is FIRMWARE_SPLIT. Mixed VBIOS on one node is a classic bring-up finding (facebookresearch/gcm's
vbios_mismatch health check; Imbue's cluster-health checks VBIOS, InfoROM, GSP and HCA firmware). The run's hosts
against each other: ``firmware_fleet``. A node whose versions all agree and that has no manifest passes with its
versions recorded (report.json keeps them, firmware_fleet compares them).
"""
from __future__ import annotations

from provision.checks import versions
from provision.checks.base import Budget, Check, Context, Data, Finding, Step
from provision.fabric.model import hca_names

ODD, SPLIT, MANIFEST = "FIRMWARE_ODD_ONE_OUT", "FIRMWARE_SPLIT", "FIRMWARE_NOT_IN_MANIFEST"


def steps(profile, host) -> list[Step]:
    out = [Step("gpus", ["nvidia-smi", "-q", "-x"], parser="nvidia-smi-qx")] if profile.has("gpu") else []
    if profile.has("hca"):
        out.append(Step("hcas", ["ibv_devinfo"], parser="ibv_devinfo"))
    out += [Step("bios", ["dmidecode", "-t", "bios", "-t", "system"], parser="dmidecode"),
            Step("bmc", ["ipmitool", "mc", "info"], parser="ipmitool-mc-info"),
            Step("kernel", ["uname", "-r"], parser="uname-r")]
    # out of band: the BMC's firmware inventory (BMC, BIOS, CPLD, HGX's GPUs), which Redfish has and IPMI does not
    if getattr(host, "has_bmc", False) and (getattr(host, "vars", None) or {}).get("provision_bmc_protocol") != "ipmi":
        out.append(Step("bmc_firmware", ["bmc", "firmware"], parser="redfish-firmware", via="bmc"))
    return out


def judge(ctx: Context) -> list[Finding]:
    found = versions.units(ctx.parsed, hca_names(ctx.profile) if ctx.profile.has("hca") else None)
    name = str(getattr(ctx.target, "name", "the node"))
    manifest = versions.manifest_of(ctx.profile.site)
    findings = versions.against_manifest(found, manifest, MANIFEST)
    devices = [("", u) for u in found if versions.FIELDS[u.field][0] != "node"]
    findings += versions.odd_ones(devices, name, ODD, SPLIT)
    # The node-level fields are recorded as facts (one unit each: nothing on the node to compare them with).
    findings += [Finding(device=u.device, metric=u.field, value=u.value, ok=True) for u in found
                 if versions.FIELDS[u.field][0] == "node" and u.field not in manifest]
    return findings


CHECK = Check(id="firmware", tool="nvidia-smi -q -x + ibv_devinfo + dmidecode + ipmitool mc info", steps=steps,
              judge=judge, order=33,
              budget=Budget(timeout_s=30, sets=("quick", "deep")),
              data=Data(metrics={}))
