"""The registry's checks: what their test data cannot declare.

Every check's captures and how each is judged are ``tests/data/<check>/cases.yaml``, read by
test_check_data.py (which also asserts that every registered check has a passing and a failing
case); here: thresholds through overrides, the steps' argv from the profile, nothing to judge.
"""
from pathlib import Path


from provision import profiles
from provision.checks import Outcome, ids, registry
from provision.checks.base import Scope
from provision.engine.jobs import target

from tests.unit.checks import judge

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.load("h100-sxm5-80g-ndr")


def test_check_ids_are_unique_and_match_modules():
    assert list(registry()) == ids() and len(set(ids())) == len(ids())


def test_a_changed_threshold_flips_the_outcome():
    text = (DATA / "nccl_allreduce/sim_h100_healthy.txt").read_text()
    strict = H100.with_overrides({"nccl_allreduce": {"busbw_GBps": {"value": 600.0}}}, "test")
    assert judge("n", registry()["nccl_allreduce"], H100, {"": text}).outcome == Outcome.PASS
    assert judge("n", registry()["nccl_allreduce"], strict, {"": text}).outcome == Outcome.FAIL


def test_steps_are_argv_lists_from_the_profile():
    class Host:
        address = "127.0.9.7"

    class Other:
        address = "127.0.9.8"
    for check in registry().values():
        if not all(H100.has(need) for need in check.needs):
            continue  # storage: the bare profile has no site facts
        hosts = (Host(),) if check.scope is Scope.NODE else (Host(), Other())
        for step in check.steps(H100, target(check, hosts)):
            assert isinstance(step.argv, list) and all(isinstance(a, str) for a in step.argv)
    ib = registry()["ib_write_bw"].steps(H100, Host())
    assert [s.key for s in ib] == [f"mlx5_{i}" for i in range(8)]
    assert ib[0].argv[-1] == "127.0.9.7" and ib[0].server[:3] == ["ib_write_bw", "-d", "mlx5_0"]
    nccl = registry()["nccl_allreduce"].steps(H100, Host())[0].argv
    assert nccl[nccl.index("-e") + 1] == "8589934592" and nccl[nccl.index("-c") + 1] == "1"
    pair = registry()["ib_pairs"].steps(H100, target(registry()["ib_pairs"], (Host(), Other())))
    assert (pair[0].on, pair[0].server_on, pair[0].argv[-1]) == (1, 0, "127.0.9.7")  # the client writes to hosts[0]
    [mpi] = registry()["nccl_cluster"].steps(H100, target(registry()["nccl_cluster"], (Host(), Other())))
    assert mpi.key == "2-nodes" and mpi.argv[:2] == ["mpirun", "--allow-run-as-root"]
    assert mpi.argv[mpi.argv.index("--host") + 1] == "127.0.9.7:1,127.0.9.8:1" and "--tag-output" in mpi.argv


def test_a_check_that_judged_nothing_is_an_error_not_a_pass():
    result = judge("node07", registry()["ib_write_bw"], H100, {})
    assert result.outcome == Outcome.ERROR and "nothing to judge" in result.message
