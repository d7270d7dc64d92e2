"""A check added from a module outside the package (PROVISION_CHECK_PATH) is found, runs in the
burn-in (node and pair scope), and appears in report.json, JUnit and the summary: no other file
changes. Runs on this machine through a test transport (tests/unit/engine/local.py)."""
import json
import socket
import textwrap
import xml.etree.ElementTree as ET

from provision import checks, targets
from provision.engine import burnin
from provision.engine.control import Control
from provision.inventory import Host
from provision.report import junit, summary
from provision.results import schema
from provision.results.model import HostRecord, Run
from provision.results.store import RunStore
from tests.unit.engine.local import LocalTransport

NODE_CHECK = '''
"""site_probe: a site's own node check (a test)."""
from provision.checks.base import Check, Step
from provision.checks.rules import measured
from provision.results.model import Reference

REF = Reference(10.0, -0.1, None, "GB/s", "a test figure", {})


def steps(profile, host):
    return [Step("", ["python3", "-c", "print('bw ' + str(__import__('os').environ.get('BW', '12.5')))"],
                 parser="probe")]


def parse(text):
    return {"tool": "probe", "bw_GBps": float(text.split()[1])}


def judge(ctx):
    return [measured("node", "bw_GBps", ctx.parsed[""]["bw_GBps"], REF, "SITE_SLOW", "call the site's team")]


CHECK = Check(id="site_probe", tool="probe", order=5, steps=steps, parsers={"probe": parse}, judge=judge,
              metrics={"bw_GBps": "GB/s"})
'''

PAIR_CHECK = '''
"""site_pair: a site's own pair check: a TCP server on one host, its client on the other (a test)."""
from provision.checks.base import Check, Ready, Scope, Step
from provision.checks.rules import expect

SERVER = """
import socket, sys
s = socket.create_server(("127.0.0.1", PORT))
print("listening", flush=True)
c, _ = s.accept()
print("got", c.recv(64).decode(), flush=True)
"""
CLIENT = """
import socket
s = socket.create_connection(("127.0.0.1", PORT))
s.sendall(b"hello")
print("sent hello")
"""


def steps(profile, pair):
    client, server = CLIENT.replace("PORT", "{port}"), SERVER.replace("PORT", "{port}")
    return [Step("tcp", ["python3", "-c", client], parser="tcp", server=["python3", "-c", server],
                 ready=Ready(line="listening", port={port}), on=1, server_on=0)]


def parse(text):
    return {{"tool": "tcp", "sent": text.strip()}}


def judge(ctx):
    return [expect("tcp", "sent", ctx.parsed["tcp"]["sent"], "sent hello", "SITE_PAIR", "check the pair", )]


CHECK = Check(id="site_pair", tool="tcp", order=5, scope=Scope.PAIR, steps=steps, parsers={{"tcp": parse}},
              judge=judge)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host(name):
    return Host(name, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr")


def test_a_check_from_a_temporary_module_runs_and_reports(tmp_path, monkeypatch):
    folder = tmp_path / "site-checks"
    folder.mkdir()
    (folder / "site_probe.py").write_text(NODE_CHECK)
    (folder / "site_pair.py").write_text(textwrap.dedent(PAIR_CHECK).format(port=free_port()))
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    assert {"site_probe", "site_pair"} <= set(checks.ids())
    assert checks.ids().index("site_probe") < checks.ids().index("gpu_health")  # order 5
    ids = checks.ids()  # multi-host scopes after node scope, then by order (site_pair's 95 before fabric's 100)
    assert max(ids.index(c.id) for c in checks.registry().values() if c.scope.value == "node") < ids.index("site_pair")

    hosts = [host("n1"), host("n2")]
    rundir = RunStore(tmp_path / "runs").create("site")
    run = Run(run_id="site", phases=["burnin"], hosts={h.name: HostRecord(h.profile) for h in hosts})
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_probe", "site_pair"]), LocalTransport(),
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda line: None))).results
    run.finished = "now"
    rundir.save(run)
    junit.write(rundir.junit, run)

    report = json.loads(rundir.report.read_text())
    assert schema.problems(report) == []
    rows = {(r["check"], tuple(r["hosts"])): r for r in report["results"]}
    assert rows[("site_probe", ("n1",))]["outcome"] == "pass"
    assert rows[("site_probe", ("n1",))]["findings"][0]["value"] == 12.5
    pair = rows[("site_pair", ("n1", "n2"))]
    assert pair["outcome"] == "pass", pair["message"]
    assert pair["scope"] == "pair" and pair["raw"][0]["host"] == "n2"
    assert (rundir.path / pair["raw"][0]["server"]).read_text() == "listening\ngot hello\n"
    assert report["verdicts"] == {"n1": "pass", "n2": "pass"}

    root = ET.parse(rundir.junit / "all.xml").getroot()
    cases = {c.get("classname") + "/" + c.get("name") for c in root.iter("testcase")}
    assert {"burnin.site_probe/site_probe", "burnin.site_pair/site_pair[n1+n2]"} <= cases
    text = summary.render(run)
    assert "site_probe" in text and "site_pair [n1+n2]: ok" in text


def test_a_slow_site_check_fails_naming_its_figures(tmp_path, monkeypatch):
    folder = tmp_path / "site-checks"
    folder.mkdir()
    (folder / "site_probe.py").write_text(NODE_CHECK)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    monkeypatch.setenv("BW", "7.5")
    rundir = RunStore(tmp_path / "runs").create()
    hosts = [host("n1")]
    run = Run(run_id=rundir.name, hosts={"n1": HostRecord("h100-sxm5-80g-ndr")})
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_probe"]), LocalTransport(),
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda _: None))).results
    assert run.verdicts() == {"n1": "fail"}
    assert "bw_GBps = 7.5 GB/s, reference 10 GB/s bounds [9, -]" in run.results[0].message
    assert "SITE_SLOW: call the site's team" in summary.render(run)


def test_an_unreachable_host_errors_and_keeps_the_others(tmp_path, monkeypatch):
    folder = tmp_path / "site-checks"
    folder.mkdir()
    (folder / "site_probe.py").write_text(NODE_CHECK)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    hosts = [host("n1"), host("n2")]
    rundir = RunStore(tmp_path / "runs").create()
    run = Run(run_id=rundir.name, hosts={h.name: HostRecord(h.profile) for h in hosts})
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_probe"]),
                             LocalTransport(unreachable={"n2"}),
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda _: None))).results
    assert run.verdicts() == {"n1": "pass", "n2": "error"}
    assert "connection refused" in run.results[1].message and run.results[1].run_error


def test_a_broken_site_module_is_one_line_of_bad_input(tmp_path):
    import subprocess
    import sys

    (tmp_path / "broken.py").write_text("CHECK = (\n")
    proc = subprocess.run([sys.executable, "-m", "provision", "checks"], capture_output=True, text=True,
                          env={**__import__("os").environ, checks.CHECK_PATH_ENV: str(tmp_path)})
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"provision: error: {tmp_path}/broken.py: cannot load this check module")
    assert "Traceback" not in proc.stderr
