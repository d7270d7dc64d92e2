"""The views of a run: host verdicts, JUnit (one suite per host, a cluster suite for multi-host
results, failure vs error), the summary, and report.json against its published schema."""
import json
import xml.etree.ElementTree as ET

import pytest

from provision.report import junit, summary
from provision.results import schema
from provision.results.model import (CheckResult, FailedTask, Finding, HostInstall, HostRecord, Outcome, RoleResult,
                                     Run, Scope)
from provision.results.store import RunDir


def sample_run():
    ok_role = RoleResult(5, 0, [])
    return Run(
        run_id="r1", phases=["install", "burnin"],
        hosts={h: HostRecord("h100-sxm5-80g-ndr") for h in ("n1", "n2", "n3")},
        install={"n1": HostInstall("ok", 0, {"nvidia_driver": ok_role}),
                 "n2": HostInstall("ok", 0, {"nvidia_driver": ok_role}),
                 "n3": HostInstall("failed", 1, {"nvidia_driver": RoleResult(3, 1, [
                     FailedTask("Install the driver packages", "no package")])})},
        results=[
            CheckResult("ib_ports", ("n1",), Outcome.PASS, "ok", duration_s=0.2),
            CheckResult("ib_ports", ("n2",), Outcome.FAIL, "mlx5_3 port 1: rate_Gbps = 200 Gb/s, expected 400 Gb/s",
                        duration_s=0.2, findings=[Finding("mlx5_3 port 1", "rate_Gbps", 200, False, "Gb/s",
                                                          expected=400, fault="IB_RATE", action="reseat")]),
            CheckResult("nccl_allreduce", ("n2",), Outcome.ERROR, "all_reduce_perf timed out after 300 s",
                        duration_s=300, run_error=True),
        ])


def test_host_verdicts_keep_failure_and_error_apart():
    run = sample_run()
    assert run.verdicts() == {"n1": "pass", "n2": "error", "n3": "error"}
    run.results.pop()
    assert run.verdicts()["n2"] == "fail"


def test_a_failed_pair_result_blames_the_host_its_findings_name():
    bad = Finding("mlx5_0", "bw_avg_Gbps", 180.0, False, "Gb/s", fault="HCA_SLOW", action="x", host="n2")
    run = Run(run_id="r", results=[CheckResult("ib_pair", ("n1", "n2"), Outcome.FAIL, "slow", scope=Scope.PAIR,
                                               findings=[bad])])
    assert run.verdicts() == {"n1": "pass", "n2": "fail"}
    assert schema.problems(run.to_dict()) == []


def test_junit_one_suite_per_host_failure_vs_error(tmp_path):
    run = sample_run()
    rundir = RunDir(tmp_path / "runs" / "r1")
    rundir.path.mkdir(parents=True)
    rundir.save(run)
    junit.write(rundir.junit, run)
    root = ET.parse(rundir.junit / "n2.xml").getroot()
    cases = {c.get("classname"): c for c in root.iter("testcase")}
    assert set(cases) == {"install.nvidia_driver", "burnin.ib_ports", "burnin.nccl_allreduce"}
    assert "200 Gb/s, expected 400" in cases["burnin.ib_ports"].find("failure").get("message")
    assert cases["burnin.ib_ports"].find("error") is None
    assert "timed out" in cases["burnin.nccl_allreduce"].find("error").get("message")
    n3 = ET.parse(rundir.junit / "n3.xml").getroot()
    assert "no package" in next(n3.iter("failure")).get("message")
    suites = ET.parse(rundir.junit / "all.xml").getroot()
    assert [s.get("name") for s in suites.iter("testsuite")] == ["n1", "n2", "n3"]
    saved = json.loads(rundir.report.read_text())
    assert saved["verdicts"] == {"n1": "pass", "n2": "error", "n3": "error"}
    assert schema.problems(saved) == []
    assert (rundir.path.parent / "latest").resolve() == rundir.path


def test_junit_files_are_the_documents_junit_xml_makes(tmp_path):
    """The same XML as junit-xml's to_xml_report_string (its characters XML forbids removed too), built once."""
    from junit_xml import to_xml_report_string

    run = sample_run()
    run.results[2].message = "tool said \x1b[31mred\x1b[0m & <stopped>"
    junit.write(tmp_path, run)
    for name, chosen in (("all.xml", junit.suites(run)), ("n2.xml", junit.suites(run)[1:2])):
        theirs = ET.fromstring(to_xml_report_string(chosen, encoding="utf-8").encode())
        for element in [theirs, *theirs.iter("testsuite")]:  # issue 23: suite times in milliseconds
            element.set("time", f"{round(float(element.get('time')), 3):.3f}")
        ours = (tmp_path / name).read_text()
        assert ET.canonicalize(ours, strip_text=True) == ET.canonicalize(ET.tostring(theirs, encoding="unicode"),
                                                                         strip_text=True)
    assert "\x1b" not in (tmp_path / "n2.xml").read_text()


def test_summary_names_failing_nodes_with_the_reason():
    text = summary.render(sample_run())
    assert "n2 burnin.ib_ports FAIL: mlx5_3 port 1: rate_Gbps = 200 Gb/s" in text
    assert "n3 install.nvidia_driver: Install the driver packages: no package" in text
    assert "1 passed, 2 errored of 3 hosts" in text  # issue 23: a zero count is left out (never "0 failed")


def test_the_schema_rejects_what_the_model_never_writes(tmp_path):
    report = sample_run().to_dict()
    assert schema.problems(report) == []
    bad = json.loads(json.dumps(report))
    bad["results"][1]["outcome"] = "passed"
    bad["results"][0]["hosts"] = ["n1", "n2"]  # a node-scope result covers one host
    bad["surprise"] = 1
    found = schema.problems(bad)
    assert any(p.startswith("results.1.outcome") for p in found) and any("surprise" in p for p in found)
    assert any(p.startswith("results.0.hosts") for p in found)
    with pytest.raises(ValueError, match="report.json breaks report.schema.json"):
        schema.validate(bad, "x")
