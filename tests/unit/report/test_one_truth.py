"""One truth (issue 23 item 2): the console's closing lines, JUnit (parsed), Prometheus (parsed with
prometheus_client's own parser), the HTML report (its text) and the exit status say the same hosts, cables
and switch ports, from one results model, for a run failed by a cable alone, a flapping switch port with a
slow HCA, and a run whose only finding is a coverage gap (untested: not failed, not a full pass)."""
from __future__ import annotations

import dataclasses
import html as html_lib
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families

from provision.commands._common import status
from provision.errors import ExitStatus
from provision.report import html, junit, prometheus, summary
from provision.results import reading, schema
from provision.results.model import FABRIC, CheckResult, Finding, HostRecord, Outcome, Run, Scope
from tests.unit.report.burnin_run import failing_run
from tests.unit.report.truth_runs import PLANE, cable_run, flap_and_slow_hca_run, twin_run, untested_run


def families(run: Run) -> dict[str, list]:
    """{sample name: [(labels, value)]} as prometheus_client reads the textfile."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(prometheus.text(run)):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def ones(samples: list, key: str) -> dict:
    """{labels without ``key``: the ``key`` label whose value is 1}."""
    return {tuple(sorted((k, v) for k, v in labels.items() if k != key)): labels[key]
            for labels, value in samples if value == 1.0}


def junit_cases(run: Run, tmp_path) -> dict[str, list[ET.Element]]:
    """{suite name: its testcases} from all.xml as written."""
    junit.write(tmp_path / "junit", run)
    root = ET.parse(tmp_path / "junit" / "all.xml").getroot()
    return {s.get("name"): list(s.iter("testcase")) for s in root.iter("testsuite")}


def state(case: ET.Element) -> str:
    return next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "pass")


def views(run: Run, tmp_path) -> dict:
    """What each view says is wrong: failed hosts, failed/untested cables (leaf, port, spine, port) and ports."""
    comps = run.fabric_components()
    model = {"hosts": {h for h, v in run.verdicts().items() if v == "fail"},
             "cables": {(c.switch, c.port, c.peer, c.peer_port, c.outcome.value) for c in comps
                        if c.kind == "cable" and c.outcome is not Outcome.PASS},
             "ports": {(c.switch, c.port, c.outcome.value) for c in comps if c.kind == "port"
                       and c.outcome is not Outcome.PASS}}
    prom = families(run)
    cables = ones(prom["provision_burnin_cable_outcome"], "outcome")
    ports = ones(prom["provision_burnin_switch_port_outcome"], "outcome")
    verdicts = ones(prom["provision_burnin_host_verdict"], "verdict")
    from_prom = {"hosts": {dict(k)["host"] for k, v in verdicts.items() if v == "fail"},
                 "cables": {(dict(k)["switch_guid"], int(dict(k)["port"]), dict(k)["peer_guid"],
                             int(dict(k)["peer_port"]), v) for k, v in cables.items() if v != "pass"},
                 "ports": {(dict(k)["switch_guid"], int(dict(k)["port"]), v) for k, v in ports.items() if v != "pass"}}
    suites = junit_cases(run, tmp_path)
    fabric = {c.get("name"): state(c) for c in suites.get(junit.FABRIC_SUITE, [])}
    tag = {"failure": "fail", "skipped": "untested"}
    model_names = {c.name: c.outcome.value for c in comps if c.outcome is not Outcome.PASS}
    from_junit = {"hosts": {name for name, cases in suites.items() if name not in (junit.CLUSTER_SUITE,
                                                                                   junit.FABRIC_SUITE)
                            and any(state(c) == "failure" for c in cases)},
                  "names": {name: tag[s] for name, s in fabric.items() if s != "pass"}}
    assert from_junit["names"] == model_names
    text = summary.render(run)
    assert all(name in text for name, o in model_names.items() if o == "fail" and name.startswith("cable"))
    page = " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html.render(run))).split())
    assert run.outcome().line() in page and summary.closing(run)[-2] in page  # the verdict, the fabric's counts
    assert f'class="badge {run.outcome().outcome.value}">{html_lib.escape(run.outcome().line())}<' in html.render(run)
    for c in comps:
        if c.kind == "cable" and c.outcome is not Outcome.PASS:
            assert f"{c.name} {c.outcome.value}" in page, c.name
    for host, why in run.left_out().items():
        assert f"{host} {' '.join(why.split())}" in page
    return {"model": model, "prom": from_prom, "junit_hosts": from_junit["hosts"], "text": text,
            "prom_all": prom}


def test_a_run_failed_by_a_cable_alone_says_so_everywhere(tmp_path):
    run = cable_run()
    seen = views(run, tmp_path)
    assert seen["model"]["hosts"] == seen["prom"]["hosts"] == seen["junit_hosts"] == set()
    bad = ("S-leaf2", 33, "S-spine1", 2, "fail")
    assert seen["model"]["cables"] == seen["prom"]["cables"] == {bad}
    assert seen["model"]["ports"] == seen["prom"]["ports"] == {("S-leaf2", 33, "fail"), ("S-spine1", 2, "fail")}
    closing = seen["text"].splitlines()[-3:]
    assert closing == ["4 passed of 4 hosts",
                       "fabric: 3 passed, 1 failed of 4 leaf-spine cables; 6 passed, 2 failed of 8 switch ports",
                       "run FAIL: 1 cable failed, 2 switch ports failed"]
    assert "0 failed" not in seen["text"]
    assert seen["prom_all"]["provision_burnin_run_passed"] == [({}, 0.0)]
    assert ones(seen["prom_all"]["provision_burnin_run_outcome"], "outcome") == {(): "fail"}
    outcome = ones(seen["prom_all"]["provision_burnin_check_outcome"], "outcome")
    assert outcome[(("check", "localize"), ("host", FABRIC))] == "fail"  # the fabric's failure, not only "pass"
    [suspect] = seen["prom_all"]["provision_burnin_suspect_confidence"]
    assert suspect == ({"host": FABRIC, "device": "cable S-leaf2[33] <-> S-spine1[2] (mlx5_0)",
                        "fault": "SUSPECT_CABLE"}, 0.93)
    assert status(run) is ExitStatus.NODE_FAILED


def test_a_flapping_port_and_a_slow_hca_name_the_same_host_and_ports_everywhere(tmp_path):
    run = flap_and_slow_hca_run()
    seen = views(run, tmp_path)
    assert seen["model"]["hosts"] == seen["prom"]["hosts"] == seen["junit_hosts"] == {"n2"}
    assert seen["model"]["cables"] == seen["prom"]["cables"] == {("S-leaf2", 34, "S-spine2", 2, "fail")}
    assert seen["model"]["ports"] == seen["prom"]["ports"] == {("S-leaf2", 34, "fail"), ("S-spine2", 2, "fail")}
    lines = seen["text"].splitlines()
    assert lines[-3:] == ["3 passed, 1 failed of 4 hosts",
                          "fabric: 3 passed, 1 failed of 4 leaf-spine cables; 6 passed, 2 failed of 8 switch ports",
                          "run FAIL: 1 host failed, 1 cable failed, 2 switch ports failed"]
    suspect = next(line for line in lines if line.startswith("  suspect "))
    assert "S-leaf2[34] <-> S-spine2[2]" in suspect and "[SUSPECT_CABLE: Replace the cable" in suspect
    assert "n2: a node check did not pass (ib_write_bw fail)" in lines  # left out of the cluster tests, why
    assert ones(seen["prom_all"]["provision_burnin_host_left_out"], "reason") == {
        (("host", "n2"),): "a node check did not pass (ib_write_bw fail)"}
    cases = junit_cases(run, tmp_path)
    assert [state(c) for c in cases["n2"] if c.get("name") == "cluster"] == ["skipped"]
    assert status(run) is ExitStatus.NODE_FAILED


def test_a_coverage_gap_is_untested_not_failed_and_not_a_pass(tmp_path):
    run = untested_run()
    seen = views(run, tmp_path)
    assert seen["model"]["hosts"] == seen["prom"]["hosts"] == seen["junit_hosts"] == set()
    gap = {("S-leaf1", 34, "S-spine2", 1, "untested"), ("S-leaf2", 34, "S-spine2", 2, "untested")}
    assert seen["model"]["cables"] == seen["prom"]["cables"] == gap
    text = seen["text"]
    assert "failed" not in text.splitlines()[-3] and "FAIL" not in text
    assert text.splitlines()[-1] == ("run UNTESTED (not failed, not a full pass): 2 cables untested, "
                                     "4 switch ports untested, 1 host untested")
    assert "n5: alone: 1 host of profile" in text
    assert seen["prom_all"]["provision_burnin_run_passed"] == [({}, 0.0)]
    assert ones(seen["prom_all"]["provision_burnin_run_outcome"], "outcome") == {(): "untested"}
    suites = junit_cases(run, tmp_path)
    assert all(state(c) in ("pass", "skipped") for cases in suites.values() for c in cases)
    assert status(run) is ExitStatus.UNTESTED
    saved = run.to_dict()  # report.json: the schema takes the new outcome, and reads back the same verdict
    assert schema.problems(saved) == []
    assert reading.run_from_dict(json.loads(json.dumps(saved)), "t").outcome() == run.outcome()


def test_twin_cables_are_one_fault_counted_once_and_both_named(tmp_path):
    """Issue 36: a suspect whose cable traffic cannot tell from its twin (two leaves) read "run FAIL: 2 cables
    failed, 4 switch ports failed" for one fault. Both cables are still named failed (both are to be checked:
    JUnit, the HTML, the per-cable series), the counts count the twin once: console, report.json, Prometheus."""
    run = twin_run()
    seen = views(run, tmp_path)
    both = {("S-leaf1", 33, "S-spine1", 1, "fail"), ("S-leaf2", 33, "S-spine1", 2, "fail")}
    assert seen["model"]["cables"] == seen["prom"]["cables"] == both
    assert seen["text"].splitlines()[-2:] == [
        "fabric: 2 passed, 1 failed, 1 twin of 4 leaf-spine cables; 4 passed, 2 failed, 2 twins of 8 switch ports",
        "run FAIL: 1 cable failed, 1 twin cable, 2 switch ports failed, 2 twin switch ports"]
    assert run.to_dict()["outcome"]["reasons"] == ["1 cable failed", "1 twin cable", "2 switch ports failed",
                                                   "2 twin switch ports"]
    counted: dict[tuple[str, str], float] = {}
    for name in ("provision_burnin_fabric_cables", "provision_burnin_fabric_switch_ports"):
        for labels, value in seen["prom_all"][name]:
            counted[(name, labels["state"])] = counted.get((name, labels["state"]), 0.0) + value
    assert counted == {("provision_burnin_fabric_cables", "pass"): 2, ("provision_burnin_fabric_cables", "fail"): 1,
                       ("provision_burnin_fabric_cables", "twin"): 1, ("provision_burnin_fabric_cables", "untested"): 0,
                       ("provision_burnin_fabric_switch_ports", "pass"): 4,
                       ("provision_burnin_fabric_switch_ports", "fail"): 2,
                       ("provision_burnin_fabric_switch_ports", "twin"): 2,
                       ("provision_burnin_fabric_switch_ports", "untested"): 0}
    assert status(run) is ExitStatus.NODE_FAILED


def test_a_cable_seen_from_both_ends_is_one_cable():
    """ibnetdiscover prints each cable from both its ends; the fabric check's finding may name the spine end first.
    Whichever end names it, the group's uplink, the fabric check and the suspect are one cable."""
    run = cable_run()
    fabric = next(r for r in run.results if r.check == "fabric")
    fabric.findings = [dataclasses.replace(f, device=f"{PLANE} " + " <-> ".join(reversed(f.device.split(" ", 1)[1]
                                                                                            .split(" <-> "))))
                       for f in fabric.findings]
    assert len([c for c in run.fabric_components() if c.kind == "cable"]) == 4
    assert run.outcome().line() == "run FAIL: 1 cable failed, 2 switch ports failed"


def test_a_blamed_host_of_a_cluster_only_run_has_its_own_suite_and_times_are_milliseconds(tmp_path):
    hosts = ("a1", "a2", "a3")
    results = [CheckResult("ib_pairs", ("a1", "a2"), Outcome.PASS, "ok", scope=Scope.PAIR, duration_s=d,
                           evidence=True) for d in (10.01, 10.01, 10.01, 12.2)]
    results.append(CheckResult("localize", hosts, Outcome.FAIL, "1 suspects in 3 rounds: a3 node",
                               scope=Scope.CLUSTER, findings=[Finding("node", "suspect_confidence", 0.8, False,
                                                                      fault="SUSPECT_NODE", action="Drain the node",
                                                                      host="a3")]))
    run = Run("r-only", hosts={h: HostRecord("p") for h in hosts}, results=results)
    assert sum(r.duration_s for r in results) == 42.230000000000004  # what junit-xml summed and printed
    suites = junit_cases(run, tmp_path)
    assert [state(c) for c in suites["a3"]] == ["failure"]
    text = (tmp_path / "junit" / "all.xml").read_text()
    assert 'time="42.230"' in text and "42.230000000000004" not in text
    root = ET.fromstring(text)
    assert {s.get("name"): s.get("time") for s in root.iter("testsuite")}["cluster"] == "42.230"


def test_a_two_host_group_never_prints_confidence_false():
    """A report written before untested was an outcome: the untested cables were findings of the failed
    localize result, printed as suspects with 'confidence False'."""
    run = untested_run()
    old = next(r for r in run.results if r.outcome is Outcome.UNTESTED)
    old.outcome = Outcome.FAIL
    old.message = "0 suspects in 2 rounds: no suspect; 2 leaf-spine cables carried no traffic"
    text = summary.render(run)
    assert "confidence False" not in text and "suspect" not in text.split("failures")[0].replace("0 suspects", "")
    assert run.outcome().outcome is Outcome.UNTESTED  # read the same as the new report: untested, not failed
    assert status(run) is ExitStatus.UNTESTED


# What `promtool check metrics` lints (client_golang's prometheus/testutil/promlint), checked without promtool: help,
# base units, unit abbreviations, _total only on counters, histogram/summary names, types in names, colons, camelCase
# and duplicate series; and, as Prometheus' text parser refuses them, a second HELP or TYPE line for one name.
NOT_BASE = {"microseconds", "milliseconds", "nanoseconds", "minutes", "hours", "days", "weeks", "kelvins", "fahrenheit",
            "rankine", "inches", "yards", "miles", "bits", "calories", "pounds", "ounces"}
PREFIXES = ("pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi", "mega", "mebi", "giga",
            "gibi", "tera", "tebi", "peta", "pebi")
BASE = ("amperes", "bytes", "celsius", "grams", "joules", "kelvin", "meters", "metres", "seconds", "volts")
ABBREVIATIONS = {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"}
RESERVED = ("_bucket", "_count", "_sum")


def promlint(text: str) -> list[str]:
    """The problems `promtool check metrics` would name in ``text``, read with prometheus_client's parser."""
    problems = [f"{kind} {name}: more than one line" for kind in ("HELP", "TYPE")
                for name, n in Counter(re.findall(rf"^# {kind} (\S+)", text, re.M)).items() if n > 1]
    seen: set[tuple] = set()
    for family in text_string_to_metric_families(text):
        problems += _family_problems(family)
        for sample in family.samples:
            problems += _sample_problems(family, sample, seen)
    return problems


def _family_problems(family) -> list[str]:
    name, words, typed = family.name, family.name.split("_"), family.type in ("histogram", "summary")
    problems = [] if family.documentation else [f"{name}: no help text"]
    if family.type not in ("counter", "gauge", "histogram", "summary", "info", "stateset"):
        problems.append(f"{name}: no TYPE ({family.type})")
    problems += [f"{name}: {w} is not a base unit" for w in words
                 if w in NOT_BASE or any(w == p + b for p in PREFIXES for b in BASE)]
    problems += [f"{name}: abbreviated unit {w}" for w in words if w in ABBREVIATIONS]
    if (family.type == "counter") != name.endswith("_total") and not typed:
        problems.append(f"{name}: _total is for counters, and only counters")
    if not typed and name.endswith(RESERVED):
        problems.append(f"{name}: a suffix reserved for histograms and summaries")
    return problems + [f"{name}: names its type" for t in ("counter", "gauge", "histogram", "summary") if t in words]


def _sample_problems(family, sample, seen: set[tuple]) -> list[str]:
    problems = [f"{sample.name}: a colon, reserved for recording rules"] if ":" in sample.name else []
    problems += [f"{word}: camelCase" for word in (sample.name, *sample.labels) if re.search(r"[a-z][A-Z]", word)]
    if family.type not in ("histogram", "summary") and {"le", "quantile"} & set(sample.labels):
        problems.append(f"{sample.name}: a label reserved for histograms and summaries")
    key = (sample.name, frozenset(sample.labels.items()))
    if key in seen:
        problems.append(f"{sample.name}{sample.labels}: a duplicate series")
    seen.add(key)
    return problems


def test_the_textfile_passes_what_promtool_lints_without_promtool():
    for run in (failing_run(), cable_run(), flap_and_slow_hca_run(), untested_run(), twin_run()):
        text = prometheus.text(run)
        assert text_string_to_metric_families(text) and promlint(text) == []
        assert "provision_burnin_check_outcome" in {f.name for f in text_string_to_metric_families(text)}


def test_the_lint_names_each_fault_promtool_would():
    bad = ("# TYPE lat_milliseconds gauge\nlat_milliseconds 1\n"
           "# HELP rate_gigabytes x\n# TYPE rate_gigabytes gauge\nrate_gigabytes 1\n"
           "# HELP wait_ms x\n# TYPE wait_ms gauge\nwait_ms 1\n"
           "# HELP runs_total x\n# TYPE runs_total gauge\nruns_total 1\n"
           "# HELP up_gauge x\n# TYPE up_gauge gauge\nup_gauge{hostName=\"n1\"} 1\nup_gauge{hostName=\"n1\"} 2\n"
           "loose 1\n# HELP once x\n# TYPE once gauge\nonce 1\n# HELP once y\n")
    assert promlint(bad) == [
        "HELP once: more than one line",
        "lat_milliseconds: no help text", "lat_milliseconds: milliseconds is not a base unit",
        "rate_gigabytes: gigabytes is not a base unit", "wait_ms: abbreviated unit ms",
        "runs_total: _total is for counters, and only counters", "up_gauge: names its type",
        "hostName: camelCase", "hostName: camelCase", "up_gauge{'hostName': 'n1'}: a duplicate series",
        "loose: no help text", "loose: no TYPE (unknown)"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_textfile(tmp_path):
    """The Go parser and linter themselves, where promtool is installed (the test above checks their rules without
    it, in CI)."""
    for run in (cable_run(), flap_and_slow_hca_run(), untested_run()):
        path = prometheus.write(tmp_path / "burnin.prom", run)
        proc = subprocess.run(["promtool", "check", "metrics"], stdin=path.open(), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_report_json_carries_the_runs_verdict_and_an_old_report_reads_without_it():
    saved = cable_run().to_dict()
    assert saved["outcome"] == {"outcome": "fail", "reasons": ["1 cable failed", "2 switch ports failed"]}
    assert schema.problems(saved) == []
    del saved["outcome"]  # a report written before it: still valid, the same verdict recomputed
    assert schema.problems(saved) == []
    assert reading.run_from_dict(saved, "old").outcome().line() == "run FAIL: 1 cable failed, 2 switch ports failed"


def test_a_regression_is_a_series_of_its_own_warning_or_failure():
    """A regression as a warning passes its host (check_outcome says pass): its own series says it regressed."""
    from provision.results.model import REGRESSION, Reference

    run = flap_and_slow_hca_run()
    base = Reference(395.3, -0.05, None, "Gb/s", "node03's median of its last 7 runs")
    run.results.append(CheckResult(REGRESSION, ("n3",), Outcome.PASS, "warning: n3 mlx5_0 6.1% below its median",
                                   findings=[Finding("mlx5_0", "bw_avg_Gbps", 371.2, True, "Gb/s", base)]))
    run.results.append(CheckResult(REGRESSION, ("n4",), Outcome.FAIL, "n4 mlx5_0 10% below its median", findings=[
        Finding("mlx5_0", "bw_avg_Gbps", 355.8, False, "Gb/s", base, fault="PERF_REGRESSION", action="compare")]))
    got = {(lb["host"], lb["device"], lb["metric"], lb["as"]): v
           for lb, v in families(run)["provision_burnin_regression_ratio"]}
    assert got == {("n3", "mlx5_0", "bw_avg_Gbps", "warning"): pytest.approx(371.2 / 395.3),
                   ("n4", "mlx5_0", "bw_avg_Gbps", "failure"): pytest.approx(355.8 / 395.3)}
    outcome = ones(families(run)["provision_burnin_check_outcome"], "outcome")
    assert outcome[(("check", REGRESSION), ("host", "n3"))] == "pass"  # the warning passes, its series says it
    assert run.verdicts()["n4"] == "fail"  # as a failure it fails its host
