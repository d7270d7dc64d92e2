import pytest

from provision.checks import faults
from provision.checks.rules import expect, measured, within
from provision.results.model import Reference

REF = Reference(value=400.0, lower=-0.05, upper=None, unit="Gb/s", source="test", params={"msg_size_bytes": 65536})


@pytest.mark.parametrize("value,ok", [(380.0, True), (379.99, False), (1000.0, True), (0.0, False)])
def test_lower_bound_is_a_fraction_of_the_reference(value, ok):
    assert within(value, REF) is ok


def test_upper_bound():
    hot = Reference(value=85.0, lower=None, upper=0.0, unit="C", source="t", params={})
    assert within(85.0, hot) and not within(85.1, hot)


def test_failure_message_gives_value_reference_bounds_unit_params_and_action():
    f = measured("mlx5_3", "bw_avg_Gbps", 271.4, REF, "HCA_SLOW", "check the cable")
    assert not f.ok
    assert f.describe() == ("mlx5_3: bw_avg_Gbps = 271.4 Gb/s, reference 400 Gb/s bounds [380, -] Gb/s "
                            "(msg_size_bytes=65536) [HCA_SLOW: check the cable]")


def test_the_action_comes_from_the_fault_catalogue():
    f = measured("mlx5_3", "bw_avg_Gbps", 271.4, REF, "HCA_SLOW")
    assert f.action == faults.action("HCA_SLOW") and f.describe().endswith(f"[HCA_SLOW: {f.action}]")
    with pytest.raises(KeyError, match="NO_SUCH_FAULT"):
        expect("GPU0", "model", "a", "b", "NO_SUCH_FAULT")


def test_equality_fact():
    f = expect("GPU0", "model", "NVIDIA A100", "NVIDIA H100 80GB HBM3", "GPU_MODEL")
    assert not f.ok and "expected 'NVIDIA H100 80GB HBM3'" in f.describe()
