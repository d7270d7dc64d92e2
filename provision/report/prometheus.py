"""A run as a node_exporter textfile (``runs/<id>/burnin.prom``): Prometheus text format 0.0.4,
made by prometheus_client (a collector over the run, ``generate_latest``).

Names and units follow https://prometheus.io/docs/practices/naming/ (base units, the unit in the
name, ``_seconds``, ``_bytes_per_second``, ``_celsius``):

- ``provision_burnin_run_timestamp_seconds``: when the run finished (else started), Unix seconds.
- ``provision_burnin_run_info{run_id,inventory}`` 1.
- ``provision_burnin_check_outcome{host,check,outcome}`` 1 for a host's outcome of a check, 0 for the
  other outcomes (pass, fail, error, skipped); a host covered by several results of one check gets
  the worst; a failed pair or group test counts as pass for a host it does not blame (an evidence
  test blames none: ``localize`` does); a failure of the fabric itself (a leaf-spine cable) is host ``fabric``'s.
- ``provision_burnin_host_verdict{host,verdict}`` 1 for the host's verdict (pass, fail, error), else 0.
- ``provision_burnin_run_passed`` 1 for a full pass (``Run.outcome``: the exit status is 0 exactly then), else
  0; ``provision_burnin_run_outcome{outcome}`` 1 for the run's verdict (pass, untested, fail, error), else 0:
  untested is a coverage gap, not a failure and not a pass.
- ``provision_burnin_host_left_out{host,reason}`` 1 per host the cluster procedure left out of its tests.
- ``provision_burnin_fabric_cables{plane,switch_guid,state}`` per leaf, its leaf-spine cables (each counted
  once, at its leaf end) and ``provision_burnin_fabric_switch_ports{plane,switch_guid,state}`` per switch, its
  cabled ports, counted by state (pass, fail, twin, untested; ``coverage.tally``: a cable failed only as a
  suspect's twin is one fault with it, ``twin``), zeros included: one series per switch and state, however
  many cables, so a healthy 1,250-node fabric of 10,240 leaf-spine cables makes 2,304 + 1,280, not 92,160.
- ``provision_burnin_cable_outcome{plane,switch_guid,port,peer_guid,peer_port,outcome}`` per leaf-spine cable
  (leaf end, spine end) and ``provision_burnin_switch_port_outcome{plane,switch_guid,port,outcome}`` per switch
  port that failed or was not tested (a twin fails with its suspect: both are checked), 1 for its outcome
  (pass, fail, untested), else 0 (``Run.fabric_components``); a passing one has no series of its own.
- ``provision_burnin_suspect_confidence{host,device,fault}`` per suspect the localization named (host
  ``fabric`` for a cable), 0 to 1.
- ``provision_burnin_regression_ratio{host,device,metric,as}`` per regressed measurement (its own series:
  a regression as a warning passes its host): measured over the baseline, ``as`` warning or failure.
- ``provision_burnin_finding_failed{host,check,device,metric,fault}`` 1 per failing finding of a check (not the
  localization's or the history's, which have their own series): the device and the reason, as the console and
  JUnit name them; host is the finding's (a group test's blamed host) or the result's. Only failures make series,
  so a healthy 1,250-node run adds none.
- ``provision_burnin_bmc_reachable{host}`` 1 when the node's BMC answered the ``bmc`` check, 0 when it did not;
  ``provision_burnin_bmc_sel_critical_entries{host,device}`` and ``provision_burnin_bmc_power_supplies_healthy``
  per host with a BMC (``MEASURES``); ``provision_burnin_power_action{host,action,outcome}`` 1 per power action
  the run took through a BMC (``burnin --recover``; ``provision.report.bmcmetrics``).
- per measured finding, converted from the check's unit (``MEASURES``), labels {host, device}; host is
  the result's hosts joined by '+' for a pair or group test, the last measurement of a series wins. Only
  a device that failed a finding or that the localization named (an HCA, every device of a suspect node)
  has series; a figure its host has one of (NCCL busbw over the node's 8 GPUs, the store's write
  bandwidth) is the host's and kept for every host. A healthy device's figures stay in report.json and
  the history: per GPU, GPU pair and HCA they were about 105,000 series at 1,250 nodes.

The file is written through a temp file renamed over it: the textfile collector reads whatever is
there when scraped, a half-written file included (node_exporter README, "Textfile Collector",
https://github.com/prometheus/node_exporter#textfile-collector).
"""
from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from provision.report import bmcmetrics
from provision.results import coverage
from provision.results.model import REGRESSION, Outcome, Run
from provision.results.store import atomic_write

PREFIX = "provision_burnin_"
GB, Gb, MiB = 1e9, 1e9 / 8, float(2**20)  # bytes: nccl-tests and nvbandwidth GB/s are 1e9 B/s, perftest Gb/s 1e9 bit/s
# (check, metric) -> (name without prefix, factor to the base unit, help). Sources of the units: nccl-tests
# doc/PERFORMANCE.md (GB/s = 1e9 B/s); nvbandwidth memcpy.cpp (bytes/s * 1e-9); perftest --report_gbits
# (125000000 bytes per Gb/s); fio MiB/s (2^20 B/s).
MEASURES = {
    ("ib_write_bw", "bw_avg_Gbps"): ("ib_write_bandwidth_bytes_per_second", Gb,
                                     "RDMA write bandwidth of an HCA in loopback (perftest ib_write_bw)."),
    ("ib_pairs", "bw_avg_Gbps"): ("ib_pair_write_bandwidth_bytes_per_second", Gb,
                                  "RDMA write bandwidth between two nodes per rail (perftest ib_write_bw)."),
    ("nccl_allreduce", "busbw_GBps"): ("nccl_allreduce_bus_bandwidth_bytes_per_second", GB,
                                       "Single-node NCCL all-reduce bus bandwidth at the largest size (nccl-tests)."),
    ("nccl_cluster", "busbw_GBps"): ("nccl_cluster_bus_bandwidth_bytes_per_second", GB,
                                     "NCCL all-reduce bus bandwidth across nodes at the largest size (nccl-tests)."),
    ("nvbandwidth", "h2d_GBps"): ("nvbandwidth_host_to_device_bytes_per_second", GB,
                                  "Copy-engine host to device bandwidth per GPU (nvbandwidth)."),
    ("nvbandwidth", "d2d_GBps"): ("nvbandwidth_device_to_device_bytes_per_second", GB,
                                  "Copy-engine device to device bandwidth per GPU pair (nvbandwidth)."),
    ("storage", "write_bw_MiBps"): ("storage_write_bandwidth_bytes_per_second", MiB,
                                    "Sequential write bandwidth to the checkpoint store (fio)."),
    ("gpu_health", "temp_C"): ("gpu_temperature_celsius", 1.0, "GPU temperature (nvidia-smi)."),
    ("gpudirect", "bw_avg_Gbps"): ("gpudirect_write_bandwidth_bytes_per_second", Gb,
                                   "GPUDirect RDMA write bandwidth of an HCA with its nearest GPU's memory (perftest "
                                   "ib_write_bw --use_cuda)."),
    ("bmc", "sel_critical_entries"): ("bmc_sel_critical_entries", 1.0, "Critical entries in the node's BMC event "
                                      "log since the run began (Redfish LogEntry Severity Critical)."),
    ("bmc", "psus_healthy"): ("bmc_power_supplies_healthy", 1.0, "Power supplies the node's BMC reports healthy "
                              "(PSU redundancy: fewer than the node has is a lost supply)."),
}
WORST = (Outcome.ERROR, Outcome.FAIL, Outcome.UNTESTED, Outcome.PASS, Outcome.SKIPPED)
VERDICTS = ("pass", "fail", "error")
RUN_OUTCOMES = (Outcome.PASS, Outcome.UNTESTED, Outcome.FAIL, Outcome.ERROR)
COMPONENT_OUTCOMES = (Outcome.PASS, Outcome.FAIL, Outcome.UNTESTED)
LOCALIZE = "localize"  # the cluster procedure's verdict (provision.engine.cluster.LOCALIZE)


class RunCollector(Collector):
    """Yields the run's metric families (see the module's doc) each time the registry is collected."""

    def __init__(self, run: Run):
        self.run = run

    def collect(self) -> Iterator[Metric]:
        yield from _run_families(self.run)
        yield from _run_verdict(self.run)
        yield _outcomes(self.run)
        verdict = GaugeMetricFamily(PREFIX + "host_verdict", "The host's verdict of the run (1) and the others (0).",
                                    labels=["host", "verdict"])
        for host, value in self.run.verdicts().items():
            for name in VERDICTS:
                verdict.add_metric([host, name], 1.0 if name == value else 0.0)
        yield verdict
        yield from _left_out(self.run)
        yield from _fabric(self.run)
        yield from _suspects(self.run)
        yield from _regressions(self.run)
        yield from _failed_findings(self.run)
        yield from _measures(self.run)
        yield from bmcmetrics.families(self.run, PREFIX)


def _run_verdict(run: Run) -> Iterator[Metric]:
    """``run_passed`` 1 only for a full pass; ``run_outcome`` 1 for the run's verdict (``Run.outcome``)."""
    verdict = run.outcome().outcome
    yield GaugeMetricFamily(PREFIX + "run_passed", "1 when the run passed in full (every host, every fabric "
                            "component, no coverage gap), else 0; the exit status is 0 exactly then.",
                            value=1.0 if verdict is Outcome.PASS else 0.0)
    family = GaugeMetricFamily(PREFIX + "run_outcome", "The run's verdict (1) and the others (0): untested is a "
                               "coverage gap, neither failed nor passed.", labels=["outcome"])
    for name in RUN_OUTCOMES:
        family.add_metric([name.value], 1.0 if name is verdict else 0.0)
    yield family


def _left_out(run: Run) -> Iterator[Metric]:
    left = run.left_out()
    if left:
        family = GaugeMetricFamily(PREFIX + "host_left_out", "1 for a host the cluster procedure left out of its "
                                   "tests, with the reason.", labels=["host", "reason"])
        for host, why in left.items():
            family.add_metric([host, why], 1.0)
        yield family


def _fabric(run: Run) -> Iterator[Metric]:
    """Per leaf its cables and per switch its ports counted by state; per cable and per switch port that did
    not pass 1 for its outcome, 0 for the others (module doc)."""
    comps = run.fabric_components()
    if not comps:
        return
    yield from _fabric_counts(comps)
    cable = GaugeMetricFamily(PREFIX + "cable_outcome", "A leaf-spine cable that failed or was not tested: its "
                              "outcome (1) and the others (0), by its leaf and spine switch GUIDs and ports.",
                              labels=["plane", "switch_guid", "port", "peer_guid", "peer_port", "outcome"])
    port = GaugeMetricFamily(PREFIX + "switch_port_outcome", "A switch port that failed or was not tested: its "
                             "outcome (1) and the others (0), its cable's.", labels=["plane", "switch_guid", "port",
                                                                                    "outcome"])
    for c in comps:
        if c.outcome is Outcome.PASS:
            continue
        for name in COMPONENT_OUTCOMES:
            value = 1.0 if c.outcome is name else 0.0
            if c.kind == "cable":
                cable.add_metric([c.plane, c.switch, str(c.port), c.peer, str(c.peer_port), name.value], value)
            else:
                port.add_metric([c.plane, c.switch, str(c.port), name.value], value)
    yield cable
    yield port


def _fabric_counts(comps: list[coverage.Component]) -> Iterator[Metric]:
    """Per leaf its leaf-spine cables, per switch its cabled ports, by ``Component.state`` (zeros included)."""
    counts: dict[str, dict[tuple[str, str], Counter]] = {"cable": {}, "port": {}}
    for c in comps:
        counts[c.kind].setdefault((c.plane, c.switch), Counter())[c.state] += 1
    for kind, name, what in (("cable", "fabric_cables", "A leaf's leaf-spine cables"),
                             ("port", "fabric_switch_ports", "A switch's cabled ports")):
        family = GaugeMetricFamily(PREFIX + name, f"{what} by state: pass, fail, twin (failed only as a "
                                   "suspect's twin: one fault with it) or untested.",
                                   labels=["plane", "switch_guid", "state"])
        for (plane, switch), found in sorted(counts[kind].items()):
            for state in coverage.STATES:
                family.add_metric([plane, switch, state], float(found[state]))
        yield family


def _suspects(run: Run) -> Iterator[Metric]:
    """Each suspect the localization named: its confidence, by host ('fabric' for a cable), device and fault."""
    rows = {(f.host or r.host, f.device, f.fault): _finite(f.value) for r in run.results
            if r.check == LOCALIZE and r.outcome is not Outcome.UNTESTED
            for f in r.findings if not f.ok and f.fault != coverage.UNTESTED}
    if rows:
        family = GaugeMetricFamily(PREFIX + "suspect_confidence", "A suspect the localization named (node, HCA or "
                                   "cable) and its confidence, 0 to 1.", labels=["host", "device", "fault"])
        for labels, value in sorted(rows.items()):
            family.add_metric(list(labels), 1.0 if value is None else value)
        yield family


def _regressions(run: Run) -> Iterator[Metric]:
    """Each regressed metric (``provision.history.regress``): measured over its baseline, with how it is judged."""
    rows = {}
    for r in run.results:
        if r.check != REGRESSION:
            continue
        for f in r.findings:
            value, base = _finite(f.value), f.reference.value if f.reference is not None else None
            if value is not None and base:
                rows[(r.host, f.device, f.metric, "failure" if r.outcome is Outcome.FAIL else "warning")] = value / base
    if rows:
        family = GaugeMetricFamily(PREFIX + "regression_ratio", "A measurement that regressed against its history: "
                                   "measured over its baseline (the node's median or the run's), by how it is judged "
                                   "(warning or failure).", labels=["host", "device", "metric", "as"])
        for labels, value in sorted(rows.items()):
            family.add_metric(list(labels), value)
        yield family


def _failed_findings(run: Run) -> Iterator[Metric]:
    """Each failing finding of a check: its host, check, device, metric and fault code (module doc)."""
    rows = {(f.host or r.host, r.check, f.device, f.metric, f.fault) for r in run.results
            if r.check not in (LOCALIZE, REGRESSION) and r.outcome is Outcome.FAIL and not r.evidence
            for f in r.findings if not f.ok}
    if rows:
        family = GaugeMetricFamily(PREFIX + "finding_failed", "A failing finding of a burn-in check: the host, the "
                                   "device and the fault code (provision/checks/faults.yaml).",
                                   labels=["host", "check", "device", "metric", "fault"])
        for labels in sorted(rows):
            family.add_metric(list(labels), 1.0)
        yield family


def _run_families(run: Run) -> Iterator[Metric]:
    info = GaugeMetricFamily(PREFIX + "run_info", "The run this file describes.", labels=["run_id", "inventory"])
    info.add_metric([run.run_id, run.inventory], 1.0)
    yield info
    when = timestamp(run.finished) or timestamp(run.started)
    if when is not None:
        yield GaugeMetricFamily(PREFIX + "run_timestamp_seconds", "When the run finished (else started), "
                                "seconds since the Unix epoch.", value=when)


def _outcomes(run: Run) -> Metric:
    """Per (host, check) the worst outcome of the results covering the host (module doc)."""
    worst: dict[tuple[str, str], Outcome] = {}
    for r in run.results:
        blamed = r.blamed()
        for host in [*r.hosts, *(h for h in blamed if h not in r.hosts)]:  # host 'fabric': a cable's failure
            outcome = Outcome.PASS if r.outcome is Outcome.FAIL and host not in blamed else r.outcome
            seen = worst.get((host, r.check))
            if seen is None or WORST.index(outcome) < WORST.index(seen):
                worst[(host, r.check)] = outcome
    family = GaugeMetricFamily(PREFIX + "check_outcome", "A host's outcome of a burn-in check (1) and the "
                               "others (0).", labels=["host", "check", "outcome"])
    for (host, check), outcome in sorted(worst.items()):
        for name in Outcome:
            family.add_metric([host, check, name.value], 1.0 if name is outcome else 0.0)
    return family


def _measures(run: Run) -> Iterator[Metric]:
    """One family per MEASURES row the run has a finite finding for, of the devices that failed or are
    suspect and of the figures a host has one of (module doc)."""
    series: dict[str, dict[tuple[str, str], float]] = {}
    for r in run.results:
        for f in r.findings:
            row = MEASURES.get((r.check, f.metric))
            value = _finite(f.value) if row is not None else None
            value = _finite(value * row[1]) if row is not None and value is not None else None
            if row is not None and value is not None:  # finite in the base unit too: never +Inf for a figure
                series.setdefault(row[0], {})[(f.host or r.host, f.device)] = value
    bad, nodes = _bad_devices(run)
    for name, help_text in sorted({(n, h) for n, _, h in MEASURES.values()}):
        devices = Counter(host for host, _ in series.get(name, {}))
        rows = {labels: value for labels, value in series.get(name, {}).items()
                if devices[labels[0]] == 1 or labels in bad or labels[0] in nodes}
        if rows:
            family = GaugeMetricFamily(PREFIX + name, help_text, labels=["host", "device"])
            for labels, value in sorted(rows.items()):
                family.add_metric(list(labels), value)
            yield family


def _bad_devices(run: Run) -> tuple[set[tuple[str, str]], set[str]]:
    """The (host, device) pairs that failed a finding or that the localization named (an HCA), and the
    hosts it named as nodes (every device of theirs)."""
    bad = {(f.host or r.host, f.device) for r in run.results for f in r.findings if not f.ok}
    nodes = set()
    for group in (run.cluster or {}).get("groups", []):
        for s in group.get("suspects", []):
            if s.get("kind") == "hca" and s.get("host"):
                bad.add((s["host"], s.get("device") or ""))
            elif s.get("kind") == "node" and s.get("host"):
                nodes.add(s["host"])
    return bad, nodes


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def timestamp(iso: str) -> float | None:
    """Unix seconds of an ISO 8601 time as the run records it; None when empty or unreadable. A time
    without an offset is taken as UTC."""
    try:
        when = dt.datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def text(run: Run) -> str:
    """The exposition text of ``run`` (Prometheus text format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(run))
    return generate_latest(registry).decode()


def write(path: Path, run: Run, mode: int = 0o600) -> Path:
    """Write ``text(run)`` at ``path`` atomically: a dot-file beside it (the collector reads only
    ``*.prom``), written whole, fsynced, given ``mode``, renamed over ``path``
    (``provision.results.store.atomic_write``). 0600 inside a run folder; 0644 for a textfile
    collector's directory, which node_exporter reads as its own user. Returns ``path``.
    Raises OSError naming ``path`` when it cannot be written whole (a full disk, a read-only
    folder): the previous file is kept and no temp file is left."""
    atomic_write(path, text(run), sync=True, mode=mode)
    return path
