"""The summary at scale: failures grouped by check, outcome and fault code with their hosts as one
hostlist; errors of one cause grouped across hosts; the per-host table only for a small run; the
counts last and equal to the run's verdicts (as report.json, JUnit and the exit status read them)."""
from provision.report import summary
from provision.results.model import CheckResult, FailedTask, Finding, HostInstall, HostRecord, Outcome, RoleResult, Run


def big_run(n: int = 1250) -> Run:
    names = [f"gpu{i:04d}" for i in range(1, n + 1)]
    results = []
    for i, host in enumerate(names, 1):
        slow = i in (12, 44, 45, 46)
        found = [Finding("mlx5_3 port 1", "rate_Gbps", 200 if slow else 400, not slow, "Gb/s", expected=400,
                         fault="IB_RATE", action="reseat")]
        results.append(CheckResult("ib_ports", (host,), Outcome.FAIL if slow else Outcome.PASS,
                                   f"mlx5_3 port 1: rate_Gbps = 200 Gb/s on {host}" if slow else "ok", findings=found))
        if i in (7, 8, 9):
            results.append(CheckResult("nccl_allreduce", (host,), Outcome.ERROR,
                                       f"host {host}: all_reduce_perf timed out after {300 + i} s", run_error=True))
    install = {h: HostInstall("ok", 0, {}) for h in names}
    install["gpu0100"] = HostInstall("failed", 1, {"nvidia_driver": RoleResult(3, 1, [
        FailedTask("Install the driver packages", "no package")])})
    return Run(run_id="big", hosts={h: HostRecord("h100-sxm5-80g-ndr") for h in names}, install=install,
               results=results)


def test_failures_are_grouped_with_their_hosts_as_a_hostlist_then_the_counts():
    run = big_run()
    text = summary.render(run)
    lines = text.splitlines()
    assert len(lines) < 20  # no line per host: 1,250 hosts
    assert ("gpu[0012,0044-0046] burnin.ib_ports FAIL IB_RATE (4 hosts): e.g. gpu0012: mlx5_3 port 1: "
            "rate_Gbps = 200 Gb/s on gpu0012") in lines
    assert ("gpu[0007-0009] burnin.nccl_allreduce ERROR (3 hosts): e.g. gpu0007: host gpu0007: all_reduce_perf "
            "timed out after 307 s") in lines
    assert "gpu0100 install.nvidia_driver: Install the driver packages: no package" in lines
    counts = {v: list(run.verdicts().values()).count(v) for v in ("pass", "fail", "error")}
    assert counts == {"pass": 1242, "fail": 4, "error": 4}
    # issue 23: the run's verdict closes the summary, after the hosts' counts (no fabric in this run)
    assert lines[-2:] == ["1242 passed, 4 failed, 4 errored of 1250 hosts", "run FAIL: 4 hosts failed, 4 hosts errored"]
    assert text.index("failures (3 kinds") < text.index("1242 passed")


def test_errors_of_different_causes_stay_apart_and_a_small_run_keeps_its_table():
    run = big_run(10)
    run.results.append(CheckResult("nccl_allreduce", ("gpu0010",), Outcome.ERROR, "all_reduce_perf is not installed "
                                   "(exit 127)", run_error=True))
    found = summary.groups(run)
    errors = [g for g in found if g.label == "burnin.nccl_allreduce"]
    assert [sorted(g.hosts) for g in errors] == [["gpu0007", "gpu0008", "gpu0009"], ["gpu0010"]]
    text = summary.render(run)
    assert text.splitlines()[0].split() == ["host", "install", "ib_ports", "nccl_allreduce", "verdict"]
    assert "gpu0010 burnin.nccl_allreduce ERROR: all_reduce_perf is not installed (exit 127)" in text


def test_every_view_names_the_same_failing_hosts_and_counts(tmp_path):
    """One truth: the summary's groups, the HTML's failing rows, JUnit's failures and errors, the
    Prometheus outcomes and the exit status all read the run's verdicts and results."""
    import xml.etree.ElementTree as ET

    from provision.commands._common import status
    from provision.errors import ExitStatus
    from provision.report import html, junit, prometheus
    from tests.unit.report.burnin_run import failing_run

    run = failing_run()
    bad = {h for h, v in run.verdicts().items() if v != "pass"}
    assert bad == {"n2", "n3"}
    grouped = {h for g in summary.groups(run) for h in g.hosts}
    rows = {h for row in html.failures(run) for h in row["host"].split("+")}
    junit.write(tmp_path / "junit", run)
    suites = ET.parse(tmp_path / "junit" / "all.xml").getroot()
    failing_suites = {s.get("name") for s in suites.iter("testsuite")
                      if s.get("name") != junit.CLUSTER_SUITE and (int(s.get("failures")) or int(s.get("errors")))}
    assert grouped == rows == failing_suites == bad
    prometheus.write(tmp_path / "burnin.prom", run)
    prom = (tmp_path / "burnin.prom").read_text()
    text = summary.render(run)
    counts = {v: list(run.verdicts().values()).count(v) for v in ("pass", "fail", "error")}
    assert f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errored of 3 hosts" in text
    prom_bad = {line.split('host="')[1].split('"')[0] for line in prom.splitlines()
                if line.startswith("provision_burnin_check_outcome{") and 'outcome="pass"' not in line
                and 'outcome="skipped"' not in line and line.endswith(" 1.0")}
    assert prom_bad == bad
    assert status(run) is ExitStatus.NODE_FAILED
