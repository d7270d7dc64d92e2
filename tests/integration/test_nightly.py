"""Three nightly burn-ins on a simulated rack, with a history: node02's HCA mlx5_0 slows down on the
third night, still above ib_write_bw's absolute threshold, and the own-median regression gate flags it
and names the stack change made that day: node02's HCAs were flashed from firmware 28.39.1002 to 28.40.1000.

It runs on three nodes (``--limit``) of the session's shared, installed 8-node H100 rack (conftest.eight_h100;
node02's firmware is put back after), then `provision burnin --checks ib_ports,ib_write_bw` runs three times into
one history database (ib_ports saves ibstat's output, where the fingerprint reads the firmware). The site lowers the
reference to 355 Gb/s (gate 337.25) so the slowdown stays within it: the simulator's healthy figure is 392.3 Gb/s
with +-2% uniform noise (provision/sim/figures.yaml, hwmodel.NOISE_PCT). Nights 1 and 2 are healthy: night 2 cannot
be flagged (one earlier run is below the gate's MIN_RUNS), and healthy noise stays within the 5% default (at worst
3.9%). Night 3 runs mlx5_0 at 0.9: at most 360.2 Gb/s against a median of at least 384.5, 6.3% below; at least
346.1, above the 337.25 gate. The run has three hosts, below the rack gate's four: only the own gate runs.
"""
import json

import pytest
import yaml

from provision import paths
from provision.sim import faults, rack
from tests.integration.conftest import provision, site_vars

pytestmark = pytest.mark.integration
SITE = {"provision_reference_overrides": {"ib_write_bw": {"bw_avg_Gbps": {"value": 355}}}}
FACTORS = (None, None, 0.9)  # per night: node02 mlx5_0's slow_hca factor (None: healthy)
FIRMWARE = "28.40.1000"  # a real ConnectX-7 release (https://docs.nvidia.com/networking/display/ConnectX7Firmwarev28401000)
NODES = "node01,node02,node03"  # three hosts of the shared rack: below the rack gate's four


@pytest.fixture
def installed_rack(eight_h100):
    node02 = next(n for n in rack.load_nodes(eight_h100) if n.name == "node02")
    firmware = yaml.safe_load((node02.root() / faults.MODEL).read_text())["hcas"][0]["fw_ver"]
    assert firmware != FIRMWARE
    with site_vars(eight_h100, SITE) as inv:
        yield inv
    faults.flash(eight_h100, "node02", firmware)  # a flash survives heal; the next test's replay heals the rest


def report_of(run_id):
    return json.loads((paths.RUNS / run_id / "report.json").read_text())


def test_the_third_night_is_flagged_by_the_regression_gate(installed_rack, tmp_path):
    inv, history, reports = installed_rack, tmp_path / "history.db", []
    for night, factor in enumerate(FACTORS, 1):
        if factor is not None:
            fault = provision("sim", "fault", "node02", "slow_hca", "--device", "mlx5_0", "--value", str(factor),
                              "--inventory", str(inv))
            assert fault.returncode == 0, fault.stderr
            flashed = provision("sim", "flash", "node02", "--fw", FIRMWARE, "--inventory", str(inv))
            assert flashed.returncode == 0, flashed.stderr
        run_id = f"nightly-{night}-{id(inv) % 10000}"
        proc = provision("burnin", "-i", str(inv), "--checks", "ib_ports,ib_write_bw", "--limit", NODES,
                         "--run-id", run_id,
                         "--history", str(history))
        assert proc.returncode == 0, proc.stdout[-3000:]  # a warning never changes the exit status
        reports.append(report_of(run_id))
    for rep in reports[:2]:
        assert [r for r in rep["results"] if r["check"] == "regression"] == []
    third = reports[2]
    assert third["verdicts"] == dict.fromkeys(("node01", "node02", "node03"), "pass")
    [bw] = [r for r in third["results"] if r["check"] == "ib_write_bw" and r["hosts"] == ["node02"]]
    [mlx5_0] = [f for f in bw["findings"] if f["device"] == "mlx5_0"]
    assert bw["outcome"] == "pass" and mlx5_0["ok"] and mlx5_0["value"] >= mlx5_0["lower_bound"] == 337.25
    [regression] = [r for r in third["results"] if r["check"] == "regression"]
    assert regression["hosts"] == ["node02"] and regression["outcome"] == "pass"
    assert regression["message"].startswith("warning: node02 mlx5_0 bw_avg_Gbps ")
    assert "% below its median " in regression["message"] and " of the last 2 runs" in regression["message"]
    assert regression["message"].endswith(f"stack since run {reports[1]['run_id']}: hca_fw 28.39.1002 -> {FIRMWARE}")
    [finding] = regression["findings"]
    assert finding["value"] == mlx5_0["value"] and finding["value"] < finding["lower_bound"]
    assert "regression: warning: node02 mlx5_0" in proc.stdout
    kernels = {h["kernel"] for h in third["hosts"].values()}
    assert len(kernels) == 1 and None not in kernels  # `uname -r` read on every node

    table = provision("history", "--history", str(history), "--host", "node02", "--metric", "bw_avg_Gbps",
                      "--rows")
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines()[1:] if line.split()[4] == "mlx5_0"]
    assert [(r[0], r[3]) for r in rows] == [(rep["run_id"], "ib_write_bw") for rep in reports] + [
        (reports[2]["run_id"], "regression")]
