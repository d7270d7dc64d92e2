"""References declared once (issue 35 item 4): a check's default rows < site_references.yaml < the profile's own rows
< the inventory (provision.profiles.layers), each row knowing its layer, printed per host by ``provision checks
--references HOST -i INVENTORY``.

The oracle of the equivalence test is tests/data/references/merged_before.json, every bundled profile's merged
references as ``profiles.load(name).references`` gave them before the layers (written by
tools/references_snapshot.py): a host with no overrides still sees every one of those rows, field for field."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from provision import checks, cli, profiles
from provision.checks import references
from provision.errors import ProfileError
from provision.profiles import layers
from provision.profiles.layers import DefaultRows
from tools import references_snapshot

BEFORE = json.loads((Path(__file__).parents[1] / "data" / "references" / "merged_before.json").read_text())
H100 = "h100-sxm5-80g-ndr"
OVERRIDES = "provision_reference_overrides"

# A site's check of the GPUs' ECC, with a default row: it applies only where the GPU memory counts its errors.
SITE_ECC = '''
"""site_ecc: a site's own ECC check (a test)."""
from provision.checks.base import Check


CHECK = Check(id="site_ecc", tool="nvidia-smi", order=26, steps=lambda profile, host: [], judge=lambda ctx: [],
              needs=("gpu", "ecc"), metrics={"retired_pages": "pages", "remapped_rows": "rows"},
              references={"retired_pages": {"value": 60.0, "lower": None, "upper": 0.0, "unit": "pages", "params": {},
                                            "source": "NVIDIA's page retirement limit (a test)"}})
'''


def rows(profile: profiles.Profile) -> dict:
    """check -> metric -> every field of the row, as plain JSON (as the snapshot writes them)."""
    return json.loads(json.dumps({check: {metric: dataclasses.asdict(row) for metric, row in metrics.items()}
                                  for check, metrics in profile.references.items()}))


@pytest.fixture
def site_check(tmp_path, monkeypatch):
    (tmp_path / "site_ecc.py").write_text(SITE_ECC)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", profiles.names())
def test_a_host_without_overrides_sees_every_row_it_saw_before_the_layers(name):
    """Each row of the oracle, field for field; a row the oracle lacks is a check's default of a check added since."""
    before, now = BEFORE[name], rows(profiles.for_host(name, {}, "n1"))
    profile = profiles.load(name)
    for check, metrics in before.items():
        for metric, row in metrics.items():
            got = dict(now.get(check, {}).get(metric) or {})
            if profile.reference_layer(check, metric) == layers.default_layer(check):  # moved out of the profile:
                # one source for every SKU now, which still cites each configuration file the profile's cited
                cited = re.findall(r"conf/[\w.]+\.conf", row["source"])
                assert cited and all(c in got.pop("source") for c in cited), f"{name}: {check}.{metric}"
                row = {k: v for k, v in row.items() if k != "source"}
            assert got == row, f"{name}: references.{check}.{metric}"
    added = {(c, m, profile.reference_layer(c, m)) for c in now for m in now[c] if m not in before.get(c, {})}
    assert all(c not in before and layer == layers.default_layer(c) for c, _m, layer in added), added
    assert profiles.for_host(name, {}, "n1") is profile  # no host values: the loaded view itself


def test_the_oracle_covers_every_bundled_profile_and_the_tool_writes_it():
    assert sorted(BEFORE) == profiles.names()
    assert set(references_snapshot.snapshot()) == set(BEFORE)


def test_each_row_names_its_layer():
    h100 = profiles.load(H100)
    own = f"profile {H100} ({profiles.DATA_DIR / f'{H100}.yaml'})"
    assert h100.reference_layer("ib_write_bw", "bw_avg_Gbps") == own
    assert h100.reference_layer("storage", "write_bw_MiBps") == "site_references.yaml"
    assert h100.reference_layer("ib_write_bw", "nope") is None
    host = profiles.for_host(H100, {OVERRIDES: {"ib_write_bw": {"bw_avg_Gbps": {"value": 360.0}}}}, "n7")
    assert host.reference_layer("ib_write_bw", "bw_avg_Gbps") == \
        f"inventory: provision_reference_overrides (overridden: value; over {own})"  # every such host's view
    assert profiles.load(H100).with_overrides({"ib_write_bw": {"bw_avg_Gbps": {"value": 360.0}}}, "host n7") \
        .reference_layer("ib_write_bw", "bw_avg_Gbps").startswith("inventory: host n7 provision_reference_overrides (")
    assert host.reference_layer("storage", "write_bw_MiBps") == "site_references.yaml"


def test_a_check_default_joins_only_the_profiles_the_check_applies_to(site_check):
    h100, rtx = profiles.for_host(H100, {}, "n1"), profiles.for_host("rtx4090-pcie", {}, "n1")
    assert not rtx.has("ecc") and rtx.reference("site_ecc", "retired_pages") is None
    assert h100.reference("site_ecc", "retired_pages").value == 60.0
    assert h100.reference_layer("site_ecc", "retired_pages") == "check site_ecc default"
    assert profiles.load(H100).reference("site_ecc", "retired_pages") is not None  # load has it too
    references.validate(h100)


def test_each_layer_replaces_a_lower_ones_row_whole():
    """A check's row lies under site_references.yaml's and the profile's of the same check and metric; a row that
    needs a site fact (storage) joins the host that has it."""
    row = {"value": 1.0, "lower": -0.5, "upper": None, "unit": "Gb/s", "params": {}, "source": "a check's (a test)"}
    defaults = (DefaultRows("ib_write_bw", ("hca",), {"bw_avg_Gbps": row, "bw_peak_Gbps": row}),
                DefaultRows("storage", ("storage",), {"write_bw_MiBps": row, "read_bw_MiBps": row}))
    h100 = profiles.load(H100, defaults)
    assert h100.reference("ib_write_bw", "bw_avg_Gbps") == profiles.load(H100, ()).reference("ib_write_bw",
                                                                                             "bw_avg_Gbps")
    assert h100.reference("ib_write_bw", "bw_peak_Gbps").lower == -0.5  # no higher layer has it
    assert h100.reference_layer("ib_write_bw", "bw_peak_Gbps") == "check ib_write_bw default"
    assert h100.reference("storage", "read_bw_MiBps") is None  # no site facts: no storage
    storage = {"bond": "bond0", "mode": "802.3ad", "slaves": 2, "slave_speed_Mbps": 25000,
               "checkpoint_path": "/mnt/checkpoint"}
    site = profiles.for_host(H100, {"provision_storage": storage}, "n1", defaults)
    assert site.reference_layer("storage", "read_bw_MiBps") == "check storage default"
    assert site.reference_layer("storage", "write_bw_MiBps") == "site_references.yaml"
    assert site.reference("storage", "write_bw_MiBps").value == 6000.0


def test_the_inventory_adds_a_complete_row_for_a_site_check(site_check):
    row = {"value": 100.0, "lower": None, "upper": 0.0, "unit": "rows", "source": "our vendor's RMA limit"}
    host = profiles.for_host(H100, {OVERRIDES: {"site_ecc": {"remapped_rows": row}}}, "gpu07")
    assert host.reference("site_ecc", "remapped_rows") == profiles.Reference(100.0, None, 0.0, "rows",
                                                                             "our vendor's RMA limit", {})
    assert host.reference_layer("site_ecc", "remapped_rows") == "inventory: provision_reference_overrides (added)"
    assert host.reference_layer("site_ecc", "retired_pages") == "check site_ecc default"
    references.validate(host)


def test_the_inventory_adds_a_complete_row_for_a_package_check():
    """b200-hgx has no gpu_health temperature row; a site that knows its B200s' slowdown adds one."""
    row = {"value": 85.0, "lower": None, "upper": 0.0, "unit": "C", "params": {}, "estimate": True,
           "source": "site: 2 C below the 87 C slowdown our nodes report"}
    assert profiles.load("b200-hgx").reference("gpu_health", "temp_C") is None
    host = profiles.for_host("b200-hgx", {OVERRIDES: {"gpu_health": {"temp_C": row}}}, "gpu01")
    assert dataclasses.asdict(host.reference("gpu_health", "temp_C")) == row
    assert host.reference_layer("gpu_health", "temp_C").endswith("(added)")
    references.validate(host)


def test_an_added_row_of_a_check_that_does_not_exist_is_refused_by_the_checks():
    row = {"value": 1.0, "lower": None, "upper": 0.0, "unit": "x", "source": "s"}
    host = profiles.for_host(H100, {OVERRIDES: {"nope_check": {"m": row}}}, "gpu01")
    with pytest.raises(ProfileError, match=r"references.nope_check: no such check"):
        references.validate(host)


@pytest.mark.parametrize("fields,missing", [
    ({"value": 85.0}, "lower, upper, unit, source"),
    ({"value": 85.0, "unit": "C", "source": "site"}, "lower, upper"),
])
def test_an_incomplete_new_row_is_refused_in_one_line_naming_what_it_lacks(fields, missing):
    with pytest.raises(ProfileError) as info:
        profiles.for_host("b200-hgx", {OVERRIDES: {"gpu_health": {"temp_C": fields}}}, "gpu01")
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("host gpu01: provision_reference_overrides.gpu_health.temp_C: no such reference in "
                           f"profile b200-hgx, and not a complete new row: missing {missing} (")


def test_a_misspelt_override_still_names_the_reference_it_may_mean():
    with pytest.raises(ProfileError, match=r"^host gpu01: provision_reference_overrides.ib_write_bw.bw_avg_Gbs: no "
                                           r"such reference in profile h100-sxm5-80g-ndr \(did you mean bw_avg_Gbps"
                                           r"\?\)$"):
        profiles.for_host(H100, {OVERRIDES: {"ib_write_bw": {"bw_avg_Gbs": {"value": 360}}}}, "gpu01")


def test_a_check_whose_default_row_is_wrong_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    (tmp_path / "site_ecc.py").write_text(SITE_ECC.replace('"unit": "pages"', '"unit": "page"'))
    with pytest.raises(ProfileError, match=r"^check site_ecc \(Check.references\): references.site_ecc.retired_pages."
                                           r"unit: must be 'pages', not 'page'$"):
        references.validate(profiles.load(H100))
    (tmp_path / "site_ecc.py").write_text(SITE_ECC.replace('"unit": "pages", ', ''))
    with pytest.raises(ProfileError, match=r"^check site_ecc \(Check.references\): references.site_ecc."
                                           r"retired_pages: missing key 'unit'$"):
        profiles.load(H100)


def test_hosts_of_one_profile_share_one_view_with_the_checks_rows(site_check):
    views = [profiles.for_host(H100, {"ansible_host": f"127.0.9.{i}", OVERRIDES: {
        "ib_write_bw": {"bw_avg_Gbps": {"value": 360.0}}}}, f"n{i}") for i in range(200)]
    assert all(view is views[0] for view in views)
    assert views[0].reference_layer("site_ecc", "retired_pages") == "check site_ecc default"


INVENTORY = """\
all:
  vars:
    provision_profile: b200-hgx
    provision_reference_overrides:
      ib_write_bw: {bw_avg_Gbps: {value: 360}}
      gpu_health:
        temp_C: {value: 85.0, lower: null, upper: 0.0, unit: C, source: "site: our B200s' slowdown, 87 C"}
  hosts:
    gpu01: {ansible_host: 127.0.9.31}
    gpu02: {ansible_host: 127.0.9.32}
    login01: {ansible_host: 127.0.9.33, provision_profile: null}
"""


@pytest.mark.parametrize("host", ["gpu01", "gpu02"])
def test_provision_checks_references_prints_each_row_with_its_layer(tmp_path, capsys, site_check, host):
    """Both hosts share one view (the same values); each listing names its own host."""
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    assert cli.main(["checks", "--references", host, "-i", str(tmp_path / "hosts.yml")]) == 0
    lines = capsys.readouterr().out.replace(host, "gpu01").splitlines()
    assert lines[0].startswith("host gpu01: profile b200-hgx; layers, lowest first: check <id> default < ")
    by_key = {line.split("  ")[0]: line for line in lines[1:]}
    assert len(by_key) == len(lines) - 1 == sum(map(len, profiles.for_host(
        "b200-hgx", {OVERRIDES: {"ib_write_bw": {"bw_avg_Gbps": {"value": 360}}}}, "x").references.values())) + 1
    assert by_key["ib_write_bw.bw_avg_Gbps"].startswith("ib_write_bw.bw_avg_Gbps  360 Gb/s  bounds 342..- (-5%/none)"
                                                        "  params {\"direction\": \"unidirectional\", ")
    assert "  from inventory: host gpu01 provision_reference_overrides (overridden: value; over profile b200-hgx (" \
        in by_key["ib_write_bw.bw_avg_Gbps"]
    assert by_key["gpu_health.temp_C"] == ("gpu_health.temp_C  85 C  bounds -..85 (none/+0%)  params {}  from "
                                           "inventory: host gpu01 provision_reference_overrides (added)  source: "
                                           "site: our B200s' slowdown, 87 C")
    assert "  from site_references.yaml  source: " in by_key["storage.write_bw_MiBps"]
    assert "  from check site_ecc default  source: NVIDIA's page retirement" in by_key["site_ecc.retired_pages"]
    assert " (estimate)  bounds " in by_key["gpu_stress.gflops"]
    assert "  from profile b200-hgx (" in by_key["nccl_allreduce.busbw_GBps"]


@pytest.mark.parametrize("argv,message", [
    (["--references", "gpu1"], ": no host gpu1 in the inventory (did you mean gpu01?)"),
    (["--references", "login01"], ": host login01 has no provision_profile: not a GPU node, no references"),
])
def test_provision_checks_references_refuses_in_one_line_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    assert cli.main(["checks", *argv, "-i", str(tmp_path / "hosts.yml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("provision: error: ") and message in err, err


def test_provision_checks_references_needs_an_inventory(capsys):
    assert cli.main(["checks", "--references", "gpu01"]) == 2
    assert "give -i INVENTORY" in capsys.readouterr().err


def test_the_snapshot_tool_writes_the_oracle_format(tmp_path):
    out = tmp_path / "merged.json"
    assert references_snapshot.main([str(out)]) == 0
    assert set(json.loads(out.read_text())) == set(BEFORE)


def test_every_check_default_row_fits_its_check_and_says_where_its_figure_comes_from():
    for check in checks.registry().values():
        for metric, row in check.references.items():
            assert isinstance(row.get("source"), str) and row["source"].strip(), f"{check.id}.{metric}"
        assert set(check.references) <= set(check.metrics), check.id
    for name in profiles.names():
        references.validate(profiles.load(name))
