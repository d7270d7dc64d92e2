"""Every check against healthy, degraded and truncated captures: outcome, device and fault named.

Captures: ``tests/data/<check>/sim_h100_*.txt`` come from the simulated tools with a fault set
in the hardware model (tests/data/tools/capture_sim.py); ``tests/data/samples/`` are real
outputs from real clusters.
"""
from pathlib import Path

import pytest

from provision import profiles
from provision.checks import Outcome, ids, registry
from provision.checks.base import Scope
from provision.engine.jobs import target

from tests.unit.checks import judge

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.load("h100-sxm5-80g-ndr")

# (check, capture, step key, outcome, text the message must contain)
CASES = [
    ("gpu_health", "gpu_health/sim_h100_healthy.txt", "", Outcome.PASS, "temp_C"),
    ("gpu_health", "gpu_health/sim_h100_remap_pending.txt", "", Outcome.FAIL,
     "GPU3 00000000:5D:00.0: remapped_rows_pending"),
    ("gpu_health", "gpu_health/sim_h100_xid79.txt", "", Outcome.FAIL, "gpu_count = 7, expected 8"),
    ("gpu_health", "gpu_health/sim_h100_hw_slowdown.txt", "", Outcome.FAIL,
     "GPU5 00000000:BB:00.0: clocks_event_reasons_hw = ['hw_power_brake_slowdown', 'hw_slowdown']"),
    ("gpu_health", "gpu_health/sim_h100_truncated.txt", "", Outcome.ERROR, "incomplete"),
    ("xid", "xid/sim_h100_healthy.txt", "", Outcome.PASS, "xid_count = 0"),
    ("xid", "xid/sim_h100_xid79.txt", "", Outcome.FAIL, "PCI 0000:4c:00: xid = 79"),
    ("xid", "samples/dmesg_xid48_63_94_dbe_chain.txt", "", Outcome.FAIL, "XID_48"),
    ("xid", "samples/dmesg_xid79_fallen_off_bus_smi_unknown_error.txt", "", Outcome.FAIL, "XID_79"),
    ("ib_ports", "ib_ports/sim_h100_healthy.txt", "", Outcome.PASS, "ib_port_count = 8"),
    ("ib_ports", "ib_ports/sim_h100_hca_200.txt", "", Outcome.FAIL,
     "mlx5_3 port 1: rate_Gbps = 200 Gb/s, expected 400"),
    # Real DGX: its 8 NDR ports are healthy; the Down ports are Ethernet and not judged.
    ("ib_ports", "samples/ibstat_h100_mixed_down_ports.txt", "", Outcome.PASS, "ib_port_count = 8"),
    ("ib_write_bw", "ib_write_bw/sim_h100_healthy.txt", "mlx5_5", Outcome.PASS, "mlx5_5: bw_avg_Gbps"),
    ("ib_write_bw", "ib_write_bw/sim_h100_slow_hca.txt", "mlx5_5", Outcome.FAIL, "HCA_SLOW"),
    ("ib_write_bw", "ib_write_bw/sim_h100_truncated.txt", "mlx5_5", Outcome.ERROR, "incomplete"),
    ("ib_write_bw", "samples/ib_write_bw_cx7_ndr_gbits.txt", "mlx5_0", Outcome.PASS, "392.34 Gb/s"),
    ("nccl_allreduce", "nccl_allreduce/sim_h100_healthy.txt", "", Outcome.PASS, "busbw_GBps"),
    ("nccl_allreduce", "nccl_allreduce/sim_h100_nvlink_down.txt", "", Outcome.FAIL, "NCCL_SLOW"),
    ("nccl_allreduce", "nccl_allreduce/sim_h100_truncated.txt", "", Outcome.ERROR, "incomplete"),
    ("nccl_allreduce", "samples/nccl_allreduce_a100x8_novalidation.txt", "", Outcome.ERROR, "without validation"),
    ("fabric", "fabric/sim_h100_healthy.txt", "mlx5_0", Outcome.PASS, "smp_errors = 0"),
    ("fabric", "fabric/sim_h100_uplink_1x.txt", "mlx5_0", Outcome.FAIL,
     "fabric mlx5_0 S-46a47c48d0db66d2[6] <-> S-6cbe9d500d4d9f3e[1]: width_speed = '1xNDR', expected '4xNDR'"),
    ("fabric", "fabric/sim_h100_uplink_dead.txt", "mlx5_0", Outcome.FAIL,
     "leaf S-46a47c48d0db66d2: uplinks = 3, expected 4 [FABRIC_UPLINK_MISSING"),
    ("fabric", "fabric/sim_h100_truncated.txt", "mlx5_0", Outcome.ERROR, "incomplete"),
    ("fabric", "samples/ibnetdiscover_nvidia_kb_ufm_lab_mixed_speeds_selfloops_smp_error.txt", "mlx5_0",
     Outcome.FAIL, "smp_errors = 1, expected 0 [FABRIC_DISCOVERY_INCOMPLETE"),
    # ib_pairs and nccl_cluster: raw outputs of a cluster burn-in of the simulated rack in
    # tests/data/scenarios/cluster-three-faults.yaml (node02's mlx5_3 slow, node06 slow)
    ("ib_pairs", "ib_pairs/sim_h100_healthy_node03_node01.txt", "mlx5_3", Outcome.PASS, "mlx5_3: bw_avg_Gbps = 392"),
    ("ib_pairs", "ib_pairs/sim_h100_slow_hca_node04_node02.txt", "mlx5_3", Outcome.FAIL, "IB_PAIR_SLOW"),
    ("ib_pairs", "ib_pairs/sim_h100_truncated.txt", "mlx5_3", Outcome.ERROR, "incomplete"),
    ("nccl_cluster", "nccl_cluster/sim_h100_2nodes_healthy.txt", "2-nodes", Outcome.PASS,
     "2 nodes x 8 GPUs: busbw_GBps = 390.11 GB/s"),
    ("nccl_cluster", "nccl_cluster/sim_h100_4nodes_slow_node.txt", "4-nodes", Outcome.FAIL, "NCCL_CLUSTER_SLOW"),
    ("nccl_cluster", "nccl_cluster/sim_h100_2nodes_healthy.txt", "4-nodes", Outcome.FAIL, "nranks = 16, expected 32"),
    ("nccl_cluster", "nccl_cluster/sim_h100_truncated.txt", "2-nodes", Outcome.ERROR, "incomplete"),
]


@pytest.mark.parametrize("check_id,capture,key,outcome,text", CASES, ids=[c[1] for c in CASES])
def test_capture_is_judged(check_id, capture, key, outcome, text):
    result = judge("node07", registry()[check_id], H100, {key: (DATA / capture).read_text()})
    assert result.outcome == outcome, result.message
    assert text in result.message


def test_every_registered_check_has_passing_and_failing_captures():
    from tests.unit.checks import test_catalogue_links, test_catalogue_node

    every = ([(c[0], c[3]) for c in CASES + test_catalogue_links.CASES]
             + [(c[0].CHECK.id, c[4]) for c in test_catalogue_node.CASES])
    for check_id in ids():
        outcomes = {outcome for cid, outcome in every if cid == check_id}
        assert Outcome.PASS in outcomes and Outcome.FAIL in outcomes, check_id


def test_check_ids_are_unique_and_match_modules():
    assert list(registry()) == ids() and len(set(ids())) == len(ids())


def test_a_changed_threshold_flips_the_outcome():
    text = (DATA / "nccl_allreduce/sim_h100_healthy.txt").read_text()
    strict = H100.with_overrides({"nccl_allreduce": {"busbw_GBps": {"value": 600.0}}}, "test")
    assert judge("n", registry()["nccl_allreduce"], H100, {"": text}).outcome == Outcome.PASS
    assert judge("n", registry()["nccl_allreduce"], strict, {"": text}).outcome == Outcome.FAIL


def test_steps_are_argv_lists_from_the_profile():
    class Host:
        address = "10.0.0.7"

    class Other:
        address = "10.0.0.8"
    for check in registry().values():
        if not all(H100.has(need) for need in check.needs):
            continue  # storage: the bare profile has no site facts
        hosts = (Host(),) if check.scope is Scope.NODE else (Host(), Other())
        for step in check.steps(H100, target(check, hosts)):
            assert isinstance(step.argv, list) and all(isinstance(a, str) for a in step.argv)
    ib = registry()["ib_write_bw"].steps(H100, Host())
    assert [s.key for s in ib] == [f"mlx5_{i}" for i in range(8)]
    assert ib[0].argv[-1] == "10.0.0.7" and ib[0].server[:3] == ["ib_write_bw", "-d", "mlx5_0"]
    nccl = registry()["nccl_allreduce"].steps(H100, Host())[0].argv
    assert nccl[nccl.index("-e") + 1] == "8589934592" and nccl[nccl.index("-c") + 1] == "1"
    pair = registry()["ib_pairs"].steps(H100, target(registry()["ib_pairs"], (Host(), Other())))
    assert (pair[0].on, pair[0].server_on, pair[0].argv[-1]) == (1, 0, "10.0.0.7")  # the client writes to hosts[0]
    [mpi] = registry()["nccl_cluster"].steps(H100, target(registry()["nccl_cluster"], (Host(), Other())))
    assert mpi.key == "2-nodes" and mpi.argv[:2] == ["mpirun", "--allow-run-as-root"]
    assert mpi.argv[mpi.argv.index("--host") + 1] == "10.0.0.7:1,10.0.0.8:1" and "--tag-output" in mpi.argv


def test_a_check_that_judged_nothing_is_an_error_not_a_pass():
    result = judge("node07", registry()["ib_write_bw"], H100, {})
    assert result.outcome == Outcome.ERROR and "nothing to judge" in result.message
