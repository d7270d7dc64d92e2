"""The BMC's firmware inventory in the firmware judgment (issue 37): the firmware check asks for it out of band where
the inventory names a Redfish BMC (IPMI has none); its BMC, BIOS, HMC and CPLD versions meet the site manifest, and
firmware_fleet names the host left on older firmware. Captures: tests/data/bmc/*.firmware.json (SOURCES.md: the
simulated BMC, healthy and with ``firmware_stale``, read by the real client)."""
from pathlib import Path

from provision import parsers, profiles
from provision.checks import firmware, firmware_fleet, versions
from provision.checks.base import Context, Group
from provision.inventory import Host

DATA = Path(__file__).resolve().parents[2] / "data" / "bmc"
H100 = "h100-sxm5-80g-ndr"


def inventory(name: str) -> dict:
    return parsers.parse_tool("redfish-firmware", (DATA / f"{name}.firmware.json").read_text())


def host(name: str, **more) -> Host:
    return Host(name, "127.0.9.1", 22, "root", None, None, H100, vars=more)


def test_the_bmc_inventory_is_asked_of_a_redfish_bmc_only():
    profile = profiles.load(H100)
    steps = firmware.steps(profile, host("n1", provision_bmc_address="127.0.9.2"))
    assert steps[-1].key == "bmc_firmware" and steps[-1].via == "bmc"
    assert "bmc_firmware" not in [s.key for s in firmware.steps(profile, host("n1"))]
    ipmi = host("n1", provision_bmc_address="127.0.9.2", provision_bmc_protocol="ipmi")
    assert "bmc_firmware" not in [s.key for s in firmware.steps(profile, ipmi)]


def test_each_component_is_classed_and_a_nodes_cplds_are_one_unit():
    units = {(u.field, u.device): u.value for u in versions.units({"bmc_firmware": inventory("sim_h100_healthy")})}
    assert units[("bmc_fw", "node")] == "24.09" and units[("bios_fw", "node")] == "1.6.7"
    assert units[("hmc_fw", "node")] == "HGX-22.10-1-rc77"  # HGX_FW_BMC_0 is the baseboard's HMC, not the BMC
    assert units[("cpld", "node")] == "CPLDMB_0=0.2.1.8, CPLDMID_0=0.2.1.1"
    assert units[("gpu_fw", "HGX_FW_GPU_SXM_3")] == "96.00.74.00.01"
    assert units[("inforom", "HGX_InfoROM_GPU_SXM_3")] == "G520.0200.00.05"
    assert units[("nvswitch_fw", "HGX_FW_NVSwitch_2")] == "96.10.69.00.01"


def test_the_fleet_names_the_host_left_on_older_firmware():
    parsed = {f"n{i}/bmc_firmware": inventory("sim_h100_healthy") for i in (1, 2, 3)}
    parsed["n4/bmc_firmware"] = inventory("sim_h100_firmware_stale")
    group = Group(tuple(host(f"n{i}") for i in (1, 2, 3, 4)))
    findings = firmware_fleet.judge(Context(parsed, profiles.load(H100), group))
    odd = {(f.host, f.metric): f.value for f in findings if not f.ok}
    assert odd == {("n4", "bmc_fw"): "24.03", ("n4", "bios_fw"): "1.5.2",
                   ("n4", "cpld"): "CPLDMB_0=0.2.1.6, CPLDMID_0=0.2.0.7"}
    assert all(f.fault == firmware_fleet.ODD for f in findings if not f.ok)


def test_the_manifest_judges_the_bmcs_versions_each_cpld_on_its_own():
    manifest = {"bmc_fw": ("24.09",), "cpld": ("0.2.1.8", "0.2.1.1")}
    healthy = versions.units({"bmc_firmware": inventory("sim_h100_healthy")})
    stale = versions.units({"bmc_firmware": inventory("sim_h100_firmware_stale")})
    assert all(f.ok for f in versions.against_manifest(healthy, manifest, firmware.MANIFEST))
    failed = {f.metric: f.value for f in versions.against_manifest(stale, manifest, firmware.MANIFEST) if not f.ok}
    assert failed == {"bmc_fw": "24.03", "cpld": "CPLDMB_0=0.2.1.6, CPLDMID_0=0.2.0.7"}


def test_the_parts_that_guard_or_join_another_are_not_that_part():
    # NVIDIA HGX H100 FirmwareInventory ids (nvfwupd): an ERoT, a PCIe switch, a retimer, an FPGA run their own firmware
    for member in ("HGX_FW_ERoT_GPU_SXM_1", "HGX_FW_ERoT_NVSwitch_0", "HGX_FW_ERoT_BMC_0", "HGX_FW_PCIeSwitch_0",
                   "HGX_FW_PCIeRetimer_3", "HGX_FW_FPGA_0"):
        assert versions.firmware_class(member) is None, member
    assert versions.firmware_class("HGX_FW_GPU_SXM_1") == "gpu_fw"
    assert versions.firmware_class("HostBMC_0") == "bmc_fw"
