import pytest

from provision import profiles
from provision.errors import ProfileError


def test_every_bundled_profile_loads_and_every_reference_has_a_source():
    for name in profiles.names():
        profile = profiles.load(name)
        for check, metrics in profile["references"].items():
            for metric in metrics:
                ref = profile.reference(check, metric)
                assert ref.source and ref.unit, (name, check, metric)


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(ProfileError, match="no such hardware profile.*h100-sxm5-80g-ndr"):
        profiles.load("h999")


def test_profile_missing_a_field_is_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ngpu: {}\ndriver: {}\nreferences:\n  x:\n    y: {value: 1, unit: GB/s}\n")
    with pytest.raises(ProfileError, match=r"bad.yaml: references.x.y: missing lower, upper, source"):
        profiles.load(str(path))


def test_site_override_changes_one_reference_only():
    base = profiles.load("h100-sxm5-80g-ndr")
    site = base.with_overrides({"ib_write_bw": {"bw_avg_Gbps": {"value": 360.0}}}, "group_vars/all.yml")
    assert site.reference("ib_write_bw", "bw_avg_Gbps").value == 360.0
    assert base.reference("ib_write_bw", "bw_avg_Gbps").value == 400.0
    assert site.reference("nccl_allreduce", "busbw_GBps") == base.reference("nccl_allreduce", "busbw_GBps")


def test_override_of_an_unknown_reference_is_refused():
    with pytest.raises(ProfileError, match="host n1: provision_reference_overrides.nccl_allreduce.algbw"):
        profiles.load("h100-sxm5-80g-ndr").with_overrides({"nccl_allreduce": {"algbw": {"value": 1}}}, "host n1")
