import json
import xml.etree.ElementTree as ET

from provision import report
from provision.report import junit, summary


def sample_report():
    ok_role = {"tasks": 5, "changed": 0, "failed": []}
    return {
        "run_id": "r1",
        "install": {
            "n1": {"status": "ok", "changed": 0, "roles": {"nvidia_driver": ok_role}},
            "n2": {"status": "ok", "changed": 0, "roles": {"nvidia_driver": ok_role}},
            "n3": {"status": "failed", "changed": 1, "roles": {"nvidia_driver": {
                "tasks": 3, "changed": 1, "failed": [{"task": "Install the driver packages", "msg": "no package"}]}}},
        },
        "burnin": {
            "n1": [{"check": "ib_ports", "outcome": "pass", "message": "ok", "duration_s": 0.2}],
            "n2": [{"check": "ib_ports", "outcome": "fail", "message": "mlx5_3 port 1: rate_Gbps = 200 Gb/s, expected 400 Gb/s",
                    "duration_s": 0.2},
                   {"check": "nccl_allreduce", "outcome": "error", "message": "all_reduce_perf timed out after 300 s",
                    "duration_s": 300}],
        },
    }


def test_host_verdicts_keep_failure_and_error_apart():
    assert report.host_verdicts(sample_report()) == {"n1": "pass", "n2": "error", "n3": "error"}
    only_fail = sample_report()
    only_fail["burnin"]["n2"].pop()
    assert report.host_verdicts(only_fail)["n2"] == "fail"


def test_junit_one_suite_per_host_failure_vs_error(tmp_path):
    rep = sample_report()
    report.write(tmp_path, rep)
    junit.write(tmp_path, rep)
    root = ET.parse(tmp_path / "junit" / "n2.xml").getroot()
    cases = {c.get("classname"): c for c in root.iter("testcase")}
    assert set(cases) == {"install.nvidia_driver", "burnin.ib_ports", "burnin.nccl_allreduce"}
    assert "200 Gb/s, expected 400" in cases["burnin.ib_ports"].find("failure").get("message")
    assert cases["burnin.ib_ports"].find("error") is None
    assert "timed out" in cases["burnin.nccl_allreduce"].find("error").get("message")
    n3 = ET.parse(tmp_path / "junit" / "n3.xml").getroot()
    assert "no package" in next(n3.iter("failure")).get("message")
    suites = ET.parse(tmp_path / "junit" / "all.xml").getroot()
    assert [s.get("name") for s in suites.iter("testsuite")] == ["n1", "n2", "n3"]
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["hosts"] == {"n1": "pass", "n2": "error", "n3": "error"}
    assert (tmp_path.parent / "latest").resolve() == tmp_path.resolve()


def test_summary_names_failing_nodes_with_the_reason():
    rep = sample_report()
    rep["hosts"] = report.host_verdicts(rep)
    text = summary.render(rep)
    assert "n2 burnin.ib_ports FAIL: mlx5_3 port 1: rate_Gbps = 200 Gb/s" in text
    assert "n3 install.nvidia_driver: Install the driver packages: no package" in text
    assert "1 passed, 0 failed, 2 errored of 3 hosts" in text
