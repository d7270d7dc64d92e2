"""The firmware checks' two rules (provision/checks/versions.py), on parse results in the parsers' contract shape:
the odd one out against a clear majority, a split with none, the site's manifest; at rack scale (64 nodes, one GPU
of one node on another VBIOS and one HCA of another on other firmware: exactly those two named)."""
from pathlib import Path

import pytest

from provision import profiles
from provision.checks import firmware, firmware_fleet, versions
from provision.checks.base import Context, Group
from provision.errors import ProfileError
from provision.inventory import Host

H100 = profiles.load("h100-sxm5-80g-ndr")
VBIOS, INFOROM, HCA_FW = "96.00.74.00.01", "G520.0200.00.05", "28.39.1002"


def outputs(vbios=None, hca_fw=None, bios="1.5.0"):
    """One node's firmware outputs: ``vbios``/``hca_fw`` {index: version} override the healthy ones."""
    gpus = [{"bus_id": f"00000000:{b:02X}:00.0", "vbios_version": (vbios or {}).get(i, VBIOS),
             "inforom_image_version": INFOROM, "gsp_firmware_version": "550.127.05"}
            for i, b in enumerate((0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB))]
    cas = [{"ca": f"mlx5_{i}", "fw_ver": (hca_fw or {}).get(i, HCA_FW), "board_id": "MT_0000000838", "ports": []}
           for i in range(8)]
    return {"gpus": {"driver_version": "550.127.05", "gpus": gpus}, "hcas": {"cas": cas},
            "bios": {"bios": {"version": bios}}, "bmc": {"firmware_revision": "3.10"},
            "kernel": {"kernel": "6.1.0-28-amd64"}}


def host(name, **variables):
    return Host(name, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr", vars=variables)


def fleet(nodes):
    parsed = {f"{name}/{key}": out for name, parsed in nodes.items() for key, out in parsed.items()}
    group = Group(tuple(host(n) for n in nodes))
    return firmware_fleet.judge(Context(parsed, H100, group))


def failing(findings):
    return [f for f in findings if not f.ok]


def test_64_nodes_name_exactly_the_gpu_and_the_hca_on_other_firmware():
    nodes = {f"node{i:02d}": outputs() for i in range(1, 65)}
    nodes["node17"] = outputs(vbios={3: "96.00.99.00.01"})
    nodes["node42"] = outputs(hca_fw={5: "28.40.1000"})
    bad = failing(fleet(nodes))
    assert [(f.host, f.device, f.metric, f.value, f.expected, f.fault) for f in bad] == [
        ("node17", "GPU3 00000000:5D:00.0", "vbios", "96.00.99.00.01", VBIOS, "FIRMWARE_ODD_ONE_OUT"),
        ("node42", "mlx5_5", "hca_fw", "28.40.1000", HCA_FW, "FIRMWARE_ODD_ONE_OUT")]
    assert "the other 511 of 512 GPUs of the run's 64 h100-sxm5-80g-ndr hosts run 96.00.74.00.01" in bad[0].detail
    rows = {(f.metric, f.value): (f.device, f.detail) for f in fleet(nodes) if f.metric.endswith("_distribution")}
    assert rows[("vbios_distribution", VBIOS)] == ("511 GPUs", "node[01-64]")
    assert rows[("vbios_distribution", "96.00.99.00.01")] == ("1 GPU", "node17")
    assert rows[("hca_fw_distribution", "28.40.1000")] == ("1 HCA", "node42")


def test_two_versions_in_equal_numbers_are_a_split_of_the_whole_group_not_a_guess():
    nodes = {"n1": outputs(bios="1.5.0"), "n2": outputs(bios="1.6.0")}
    splits = failing(fleet(nodes))
    assert [(f.metric, f.host, f.fault) for f in splits] == [("bios", "n1", "FIRMWARE_SPLIT"),
                                                            ("bios", "n2", "FIRMWARE_SPLIT")]  # each host named
    assert splits[0].value == "1.5.0 x1, 1.6.0 x1"


def test_a_split_fails_every_host_of_the_group_even_beside_an_odd_one():
    nodes = {f"node{i:02d}": outputs(bios="1.5.0" if i <= 32 else "1.6.0") for i in range(1, 65)}
    nodes["node17"] = outputs(bios="1.5.0", vbios={3: "96.00.99.00.01"})
    bad = failing(fleet(nodes))
    assert {f.host for f in bad if f.fault == "FIRMWARE_SPLIT"} == set(nodes)
    assert [f.host for f in bad if f.fault == "FIRMWARE_ODD_ONE_OUT"] == ["node17"]


def test_a_rolling_update_the_manifest_allows_is_no_odd_one_out():
    manifest = {"provision_firmware": {"hca_fw": [HCA_FW, "28.40.1000"]}}
    profile = profiles.for_host("h100-sxm5-80g-ndr", manifest, "n1")
    nodes = {f"node{i:02d}": outputs(hca_fw={j: "28.40.1000" for j in range(8)} if i <= 4 else None)
             for i in range(1, 11)}  # 4 of 10 nodes updated
    parsed = {f"{name}/{key}": out for name, p in nodes.items() for key, out in p.items()}
    findings = firmware_fleet.judge(Context(parsed, profile, Group(tuple(host(n, **manifest) for n in nodes))))
    assert failing(findings) == []
    assert ("hca_fw_distribution", "28.40.1000") in {(f.metric, f.value) for f in findings}


def test_only_the_profiles_hcas_are_compared_not_a_storage_nic_or_a_dpu():
    node = outputs()
    node["hcas"]["cas"] += [{"ca": "mlx5_8", "fw_ver": "32.41.1000", "board_id": "MT_0000000884", "ports": []},
                            {"ca": "mlx5_9", "fw_ver": "26.40.1000", "board_id": "MT_0000001070", "ports": []}]
    assert failing(firmware.judge(Context(node, H100, host("n1")))) == []
    assert failing(fleet({"n1": node, "n2": outputs()})) == []


def test_a_host_with_no_outputs_is_named_as_left_out():
    parsed = {f"n1/{key}": out for key, out in outputs().items()}
    findings = firmware_fleet.judge(Context(parsed, H100, Group((host("n1"), host("n2")))))
    assert [(f.metric, f.value) for f in findings if f.metric == "left_out"] == [("left_out", "n2")]


def test_mixed_vbios_on_one_node_fails_that_node_even_when_one_gpu_matches_the_manifest():
    mixed = outputs(vbios={i: "96.00.99.00.01" for i in range(4)})  # 4 and 4: aznhc passes it, one GPU matching
    node = host("n1", provision_firmware={"vbios": VBIOS})
    profile = profiles.for_host("h100-sxm5-80g-ndr", node.vars, "n1")
    bad = failing(firmware.judge(Context(mixed, profile, node)))
    assert sorted({f.fault for f in bad}) == ["FIRMWARE_NOT_IN_MANIFEST", "FIRMWARE_SPLIT"]
    assert [f.device for f in bad if f.fault == "FIRMWARE_NOT_IN_MANIFEST"] == [
        "GPU0 00000000:19:00.0", "GPU1 00000000:3B:00.0", "GPU2 00000000:4C:00.0", "GPU3 00000000:5D:00.0"]


def test_a_manifest_lists_the_versions_a_rolling_update_allows():
    node = host("n1", provision_firmware={"hca_fw": ["28.39.1002", "28.40.1000"], "bios": "1.5.0"})
    profile = profiles.for_host("h100-sxm5-80g-ndr", node.vars, "n1")
    rolling = outputs(hca_fw={i: "28.40.1000" for i in range(6)})  # 6 of 8 updated: both allowed
    findings = firmware.judge(Context(rolling, profile, node))
    assert not [f for f in findings if not f.ok and f.fault == "FIRMWARE_NOT_IN_MANIFEST"]
    assert [f.device for f in failing(findings)] == ["mlx5_6", "mlx5_7"]  # the node's own odd ones, still named
    old_bios = firmware.judge(Context(outputs(bios="1.4.0"), profile, node))
    [bad] = failing(old_bios)
    assert (bad.metric, bad.value, bad.expected) == ("bios", "1.4.0", "1.5.0")


@pytest.mark.parametrize("manifest, message", [
    ({"vbois": "1"}, "provision_firmware.vbois: unknown key (known: bios, bios_fw, bmc, bmc_fw, cpld, driver, gpu_fw"),
    ({"vbios": []}, "provision_firmware.vbios"),
    ({"bmc": 3.10}, "provision_firmware.bmc: 3.1 is a number to YAML: quote the version"),
    ({"hca_fw": ["28.39.1002", 28.4]}, "provision_firmware.hca_fw: 28.4 is a number to YAML"),
])
def test_a_bad_manifest_is_one_line_naming_the_host_and_field(manifest, message):
    with pytest.raises(ProfileError) as caught:
        profiles.for_host("h100-sxm5-80g-ndr", {"provision_firmware": manifest}, "n7")
    assert "host n7" in str(caught.value) and message in str(caught.value), str(caught.value)


def test_every_field_has_a_level_and_a_description():
    assert all(level in ("GPU", "HCA", "NVSwitch", "node") and what for level, what in versions.FIELDS.values())


def test_the_manifests_schema_names_exactly_the_fields_the_checks_read():
    import json

    schema = json.loads((Path(profiles.__file__).with_name("site.schema.json")).read_text())
    assert set(schema["properties"]["provision_firmware"]["properties"]) == set(versions.FIELDS)
