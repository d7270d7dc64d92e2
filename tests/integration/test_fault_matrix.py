"""The fault matrix: every fault kind, injected on a random node and device of a healthy
simulated rack, must fail exactly that node with the right check naming the right device;
and healthy runs with the tools' run-to-run noise must fail nothing (node checks and the cluster
procedure).

It runs on the session's shared 8-node H100 rack (conftest.eight_h100, installed once for every test that
needs a healthy rack), with the site's tool timeout for the hung tool: the faults on three of its nodes
(``--limit``, node checks), the healthy runs on all eight (node checks and the cluster procedure, which needs
every node to carry traffic over every leaf-spine cable); nodes are healed between cases. The random seed is
printed (set FAULT_MATRIX_SEED to replay a run). The table of what was caught is printed
and written to runs/fault-matrix.txt.
"""
import json
import os
import random
import time

import pytest
import yaml

from provision import paths
from provision.sim import faults, rack
from tests.integration.conftest import provision, site_vars

pytestmark = pytest.mark.integration
HEALTHY_RUNS = 4  # x 8 nodes: 32 healthy node runs (the 3-node rack before ran 10 x 3)
SEED = int(os.environ.get("FAULT_MATRIX_SEED", random.SystemRandom().randrange(1 << 30)))
# A hung tool must be given up on within this (the real default is 300 s for all_reduce_perf).
HUNG_TIMEOUT_S = 8
# Faults a node check catches. slow_node slows only collectives across nodes, so no node check can see
# it: the cluster procedure names it (test_cluster.py, tests/unit/engine/test_cluster_procedure.py). The rack
# is H100 on driver 550: the Blackwell kinds (needs "blackwell") are judged by the simulated B200/GB200 cases of
# tests/data/gpu_health and tests/data/xid.
NODE_KINDS = [kind for kind, fault in faults.KINDS.items() if kind != "slow_node" and fault.needs is None]


def expectation(kind, device, model):
    """(check that must catch it, outcome, text its message must contain) for a fault."""
    def gpu(index):
        return next(g for g in model["gpus"] if g["index"] == int(index))

    def pci(index):
        domain, bus, rest = gpu(index)["bus_id"].lower().split(":")
        return f"{domain[-4:]}:{bus}:{rest.split('.')[0]}"

    def hca(name):
        return next(h for h in model["hcas"] if h["name"] == name)["pcie"]["bdf"]
    return {
        "xid79": lambda: ("xid", "fail", f"PCI {pci(device)}: xid = 79"),
        "dbe_remap": lambda: ("gpu_health", "fail",
                              f"GPU{device} {gpu(device)['bus_id']}: remapped_rows_pending = True"),
        "pcie_downtrain": lambda: ("pcie_link", "fail", f"{pci(device)}.0: lnksta_width = 8 lanes, expected 16"),
        "pcie_replays": lambda: ("pcie_replays", "fail",
                                 f"GPU{device} {gpu(device)['bus_id']}: replays_per_Tb = "),
        "nvlink_down": lambda: ("nvlink", "fail", f"GPU{device}: nvlink_active_links = 17, expected 18"),
        "ib_port_down": lambda: ("ib_ports", "fail", f"{device} port 1: state = 'Down', expected 'Active'"),
        "ib_rate": lambda: ("ib_ports", "fail", f"{device} port 1: rate_Gbps = 200 Gb/s, expected 400 Gb/s"),
        "slow_hca": lambda: ("ib_write_bw", "fail", f"{device}: bw_avg_Gbps = "),
        "slow_gpu_pair": lambda: ("nvbandwidth", "fail", "GPU{}->GPU{}: d2d_GBps".format(*device.split(","))),
        "gpu_burn_faulty": lambda: ("gpu_stress", "fail", f"GPU{device}: gpu_burn_verdict = 'FAULTY'"),
        "hung_tool": lambda: ("nccl_allreduce", "error", f"all_reduce_perf timed out after {HUNG_TIMEOUT_S} s"),
        "gpu_missing": lambda: ("gpu_health", "fail", f"GPU {gpu(device)['bus_id']}: present = False"),
        "bond_slave_down": lambda: ("storage", "fail", f"bond0 {device}: mii_status = 'down', expected 'up'"),
        "old_driver": lambda: ("gpu_health", "fail", "driver_version = '535.183.01', expected '550.127.05'"),
        # issue 33: firmware, settings and GPUDirect, each named by host (the row's), device, field and value
        "vbios_mismatch": lambda: ("firmware", "fail",
                                   f"GPU{device} {gpu(device)['bus_id']}: vbios = '96.00.61.00.01'"),
        "hca_firmware": lambda: ("firmware", "fail", f"{device}: hca_fw = '28.36.1010'"),
        "acs_enabled": lambda: ("pcie_acs", "fail", "acs_redirect = 'SrcValid+ ReqRedir+ CmpltRedir+', expected 'off'; "
                                "above "
                                + (f"HCA {hca(device)}" if device.startswith("mlx5_") else f"GPU {pci(device)}.0")),
        "peermem_missing": lambda: ("gpudirect", "fail", "with GPU0 (peermem): bw_avg_Gbps = - Gb/s"),
        "governor_powersave": lambda: ("host_settings", "fail", "policy0: scaling_governor = 'powersave'"),
        "mig_enabled": lambda: ("gpu_settings", "fail", f"GPU{device} {gpu(device)['bus_id']}: mig_mode = 'Enabled'"),
        "power_limit": lambda: ("gpu_settings", "fail",
                                f"GPU{device} {gpu(device)['bus_id']}: power_limit_W = 500 W, expected 700 W"),
        "iommu_translated": lambda: ("host_settings", "fail", "node: iommu = 'translated'"),
        "mtu_low": lambda: ("host_settings", "fail", f"{device} port 1: active_mtu = 2048 bytes, expected 4096 bytes"),
        "persistence_off": lambda: ("gpu_settings", "fail",
                                    f"GPU{device} {gpu(device)['bus_id']}: persistence_mode = 'Disabled'"),
    }[kind]()


NODES = ("node01", "node02", "node03")  # the matrix's nodes of the shared rack (--limit)


@pytest.fixture
def installed_rack(eight_h100):
    with site_vars(eight_h100, {"provision_check_timeouts": {"nccl_allreduce": HUNG_TIMEOUT_S}}) as inv:
        yield inv  # the next test on the shared rack heals it (conftest.replay)


def burnin(inv, run_id, *options):
    proc = provision("burnin", "-i", str(inv), "--run-id", run_id, *options)
    return proc, json.loads((paths.RUNS / run_id / "report.json").read_text())


def matrix_nodes(inv):
    return [n for n in rack.load_nodes(inv) if n.name in NODES]


def test_fault_matrix(installed_rack):
    inv, rng = installed_rack, random.Random(SEED)
    print(f"\nfault matrix seed {SEED}")
    rows, started = [], time.monotonic()
    for kind in NODE_KINDS:
        for node in matrix_nodes(inv):
            faults.heal(inv, node.name)
        node = rng.choice(matrix_nodes(inv)).name
        model = yaml.safe_load((rack.load_nodes(inv)[0].root() / faults.MODEL).read_text())
        device = faults.default_device(faults.KINDS[kind], model, rng)
        if kind == "hung_tool":
            device = "all_reduce_perf"
        faults.inject(inv, node, kind, device)
        # node faults, caught by node checks (the cluster procedure, which leaves such a node out, is
        # tested in test_cluster.py and tests/unit/engine/test_cluster_procedure.py)
        proc, rep = burnin(inv, f"matrix-{SEED}-{kind}", "--scope", "node", "--limit", ",".join(NODES))
        check, outcome, needle = expectation(kind, device, model)
        row = next(r for r in [r for r in rep["results"] if r["hosts"] == [node]] if r["check"] == check)
        rows.append((kind, node, device, check, row["outcome"], row["message"]))
        assert proc.returncode == 1, (kind, proc.stdout[-2000:])
        assert row["outcome"] == outcome, (kind, row["message"])
        assert needle in row["message"], (kind, needle, row["message"])
        assert rep["verdicts"][node] in ("fail", "error")
        assert sorted(rep["verdicts"]) == list(NODES), rep["verdicts"]
        assert all(v == "pass" for h, v in rep["verdicts"].items() if h != node), (kind, rep["verdicts"])
    for node in matrix_nodes(inv):
        faults.heal(inv, node.name)
    matrix_s = time.monotonic() - started
    false_failures = 0
    for i in range(HEALTHY_RUNS):
        proc, rep = burnin(inv, f"matrix-{SEED}-healthy{i}")
        bad = {h: [r["check"] for r in rep["results"] if r["hosts"] == [h] and r["outcome"] != "pass"]
               for h, v in rep["verdicts"].items() if v != "pass"}
        false_failures += len(bad)
        assert len(rep["verdicts"]) == len(rack.load_nodes(inv)), rep["verdicts"]
        assert proc.returncode == 0 and not bad, bad
    table = _table(rows, matrix_s, false_failures, time.monotonic() - started - matrix_s, len(rack.load_nodes(inv)))
    print(table)
    (paths.RUNS / "fault-matrix.txt").write_text(table + "\n")


def _table(rows, matrix_s, false_failures, healthy_s, nodes):
    lines = [f"{'fault':<16} {'node':<7} {'device':<9} {'caught by':<15} {'outcome':<8} message"]
    for kind, node, device, check, outcome, message in rows:
        lines.append(f"{kind:<16} {node:<7} {device:<9} {check:<15} {outcome:<8} {message[:150]}")
    lines.append(f"{len(rows)} faults in {matrix_s:.0f} s (seed {SEED}); {HEALTHY_RUNS} healthy runs x {nodes} nodes "
                 f"in {healthy_s:.0f} s with {false_failures} false failures")
    return "\n".join(lines)
