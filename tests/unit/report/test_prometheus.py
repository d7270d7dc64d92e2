"""The node_exporter textfile: read back with prometheus_client's own parser; base units
(bytes per second, celsius, seconds); outcomes 0/1 per host and check; written atomically;
and the main job leaves one beside report.json."""
import datetime as dt
import os
import stat

import pytest
from prometheus_client.parser import text_string_to_metric_families

from provision import paths
from provision import inventory as inv
from provision.commands import _job
from provision.results.store import PROMETHEUS
from provision.report import prometheus
from provision.results.model import CheckResult, Finding, HostRecord, Outcome, Reference, Run
from provision.runner import ansible
from provision.runner.ansible import PlaybookResult
from provision.sim import synth
from tests.unit.report.burnin_run import failing_run


def samples(text: str) -> dict[str, dict[frozenset, float]]:
    """{family: {frozenset(labels): value}} as prometheus_client parses the text."""
    out: dict[str, dict[frozenset, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return out


def labels(**kw) -> frozenset:
    return frozenset(kw.items())


def test_the_textfile_parses_and_speaks_base_units():
    got = samples(prometheus.text(failing_run()))
    ib = got["provision_burnin_ib_write_bandwidth_bytes_per_second"]
    assert ib[labels(host="n2", device="mlx5_1")] == pytest.approx(271.1e9 / 8)
    nccl = got["provision_burnin_nccl_allreduce_bus_bandwidth_bytes_per_second"]
    assert nccl[labels(host="n1", device="8 GPUs")] == pytest.approx(474.52e9)
    d2d = got["provision_burnin_nvbandwidth_device_to_device_bytes_per_second"]
    assert d2d[labels(host="n2", device="GPU2->GPU5")] == pytest.approx(223.31e9)
    assert set(d2d) == {labels(host="n2", device="GPU2->GPU5"), labels(host="n2", device="GPU5->GPU2")}  # failed
    pair = got["provision_burnin_ib_pair_write_bandwidth_bytes_per_second"]
    assert set(pair) == {labels(host="n1+n3", device="mlx5_0")}
    when = dt.datetime(2026, 12, 1, 10, 30, tzinfo=dt.timezone.utc).timestamp()
    assert got["provision_burnin_run_timestamp_seconds"] == {frozenset(): when}
    assert got["provision_burnin_run_info"] == {labels(run_id="r-html", inventory="sim"): 1.0}
    for name in got:
        assert name.startswith("provision_burnin_") and "Gbps" not in name and "GBps" not in name


def test_outcome_is_one_for_the_worst_and_zero_for_the_others():
    outcome = samples(prometheus.text(failing_run()))["provision_burnin_check_outcome"]

    def state(host, check):
        found = {o: outcome[labels(host=host, check=check, outcome=o)] for o in ("pass", "fail", "error", "skipped")}
        assert sum(found.values()) == 1.0
        return next(o for o, v in found.items() if v == 1.0)

    assert state("n2", "ib_write_bw") == "fail" and state("n1", "ib_write_bw") == "pass"
    assert state("n3", "nccl_allreduce") == "error"
    assert state("n3", "ib_pairs") == "pass"
    assert state("n1", "localize") == "pass" and state("n2", "localize") == "fail"  # localize blames n2 only
    verdict = samples(prometheus.text(failing_run()))["provision_burnin_host_verdict"]
    assert verdict[labels(host="n2", verdict="fail")] == 1.0 and verdict[labels(host="n2", verdict="pass")] == 0.0


def test_temperatures_in_celsius_and_unmeasured_values_left_out():
    ref = Reference(85.0, None, 0.0, "C", "datasheet")
    hot = CheckResult("gpu_health", ("n1",), Outcome.FAIL, "hot", findings=[
        Finding("GPU0 0000:19:00.0", "temp_C", 88.0, False, "C", ref),
        Finding("GPU1 0000:3B:00.0", "temp_C", None, False, "C", ref),
        Finding("GPU2 0000:4C:00.0", "temp_C", float("nan"), False, "C", ref)])
    run = Run(run_id="t", hosts={"n1": HostRecord("p")}, results=[hot])
    got = samples(prometheus.text(run))
    assert got["provision_burnin_gpu_temperature_celsius"] == {labels(host="n1", device="GPU0 0000:19:00.0"): 88.0}
    assert "provision_burnin_run_timestamp_seconds" not in got  # the run has no time


def test_write_is_atomic_and_private_unless_asked(tmp_path, monkeypatch):
    target = tmp_path / "burnin.prom"
    prometheus.write(target, failing_run())
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    before = target.read_text()
    assert samples(before)
    prometheus.write(target, failing_run(), mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    run = failing_run()
    run.run_id = "other"
    with pytest.raises(OSError):
        prometheus.write(target, run)
    assert target.read_text() == before  # the collector never sees a half-written file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["burnin.prom"]  # and no temp file is left


def test_the_main_job_writes_the_textfile_beside_the_report(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    monkeypatch.setattr(ansible, "run_playbook",
                        lambda *a, **k: PlaybookResult("site.yml", 0, "successful", {}, "ansible/artifacts/x"))
    data = paths.ROOT / "tests" / "data" / "inventories"
    vault = inv.Vault(password_files=(str(data / "homelab-vault-password.txt"),))
    _job.run(_job.JobOptions(("install",), inventory=(str(data / "homelab"),), run_id="r-prom", vault=vault),
             progress=lambda *_: None)
    got = samples((tmp_path / "r-prom" / PROMETHEUS).read_text())
    assert got["provision_burnin_run_info"] == {labels(run_id="r-prom", inventory=str(data / "homelab")): 1.0}
    assert "provision_burnin_run_timestamp_seconds" in got


def test_a_healthy_device_has_no_series_a_failed_or_suspect_one_and_a_hosts_figure_do():
    """Series per HCA and GPU only for those that failed or the localization named (issue 36 item 4); a figure a
    host has one of (NCCL busbw over its 8 GPUs) is the host's and stays for every host."""
    run = failing_run()
    got = samples(prometheus.text(run))
    ib = got["provision_burnin_ib_write_bandwidth_bytes_per_second"]
    assert set(ib) == {labels(host="n2", device="mlx5_1")}  # n1's and n2's healthy mlx5_0 are left out
    assert set(got["provision_burnin_nccl_allreduce_bus_bandwidth_bytes_per_second"]) == {
        labels(host="n1", device="8 GPUs"), labels(host="n2", device="8 GPUs")}
    run.cluster["groups"][0]["suspects"] = [{"kind": "hca", "host": "n1", "rail": 0, "device": "mlx5_0"},
                                            {"kind": "node", "host": "n1"}]
    got = samples(prometheus.text(run))
    assert labels(host="n1", device="mlx5_0") in got["provision_burnin_ib_write_bandwidth_bytes_per_second"]
    assert len(got["provision_burnin_nvbandwidth_device_to_device_bytes_per_second"]) == 56 + 2  # a suspect node's


def _fabric_run(hosts: int) -> Run:
    """A healthy run on a two-leaf, two-spine fat tree (provision.sim.synth) of ``hosts`` hosts: 2 x hosts/2
    leaf-spine cables."""
    names = [f"n{i:02d}" for i in range(hosts)]
    fabric = synth.fat_tree(names, leaves=2, spines=2)
    group = {"profile": "p", "hosts": names, "rounds": [], "suspects": [], "fabric": fabric.to_dict(),
             "unknown": {"hosts": [], "cables": []}}
    return Run(run_id="f", hosts={h: HostRecord("p") for h in names}, cluster={"groups": [group]})


def test_a_healthy_fabrics_series_are_per_switch_not_per_cable():
    """Issue 36 item 4: 8 or 32 healthy leaf-spine cables on the same four switches make the same number of series:
    per leaf its cables and per switch its ports, by state; no series per cable or port."""
    small, large = _fabric_run(8), _fabric_run(32)
    assert [c.kind for c in large.fabric_components()].count("cable") == 32 == 4 * 8
    for run, cables in ((small, 8), (large, 32)):
        got = samples(prometheus.text(run))
        assert "provision_burnin_cable_outcome" not in got and "provision_burnin_switch_port_outcome" not in got
        count = got["provision_burnin_fabric_cables"]
        ports = got["provision_burnin_fabric_switch_ports"]
        assert len(count) == 2 * 4 and len(ports) == 4 * 4  # 2 leaves, 4 switches, x pass, fail, twin, untested
        assert sum(v for k, v in count.items() if ("state", "pass") in k) == cables
        assert sum(v for k, v in ports.items() if ("state", "pass") in k) == 2 * cables
        assert sum(v for k, v in {**count, **ports}.items() if ("state", "pass") not in k) == 0
