"""A check built from another's outputs (``Check.uses``), a group check judging other checks' outputs across hosts
without running a tool (``Check.gathers``), and a step whose exit status its parser reads (``Step.exit_judged``):
run through the engine with site checks on this machine (tests/unit/engine/local.py), re-evaluated from the run
folder as ``provision evaluate`` does."""
import textwrap

from provision import checks, targets
from provision.engine import burnin
from provision.engine.control import Control
from provision.engine.reevaluate import reevaluate
from provision.inventory import Host
from provision.results.model import HostRecord, Outcome, Run
from provision.results.store import RunStore
from tests.unit.engine.local import LocalTransport

VERSION = '''
"""site_ver: a site's version probe (a test): n3 runs 2.0, the others 1.0."""
from provision.checks.base import Check, Finding, Step


def steps(profile, host):
    return [Step("", ["python3", "-c", f"print('{'2.0' if host.name == 'n3' else '1.0'}')"], parser="ver")]


def parse(text):
    from provision.errors import ParseError

    if not text.strip():
        raise ParseError("no version printed")
    return {"tool": "ver", "version": text.strip()}


def judge(ctx):
    return [Finding("node", "version", ctx.parsed[""]["version"], True)]


CHECK = Check(id="site_ver", tool="ver", order=5, steps=steps, parsers={"ver": parse}, judge=judge)
'''

FLEET = '''
"""site_ver_fleet: the hosts' versions against their majority (a test)."""
from collections import Counter

from provision.checks.base import Check, Finding, Scope, gathered_steps, split_key
from provision.checks import registry


def steps(profile, group):
    return gathered_steps(registry()["site_ver"], profile, group)


def judge(ctx):
    seen = {split_key(key)[0]: parsed["version"] for key, parsed in ctx.parsed.items()}
    want = Counter(seen.values()).most_common(1)[0][0]
    left = [h.name for h in ctx.hosts if h.name not in seen]
    return [Finding("node", "version", v, v == want, expected=want, host=h, fault="SITE_ODD", action="update it")
            for h, v in seen.items()] + [Finding("hosts", "left_out", ",".join(left), True) for _ in left[:1]]


CHECK = Check(id="site_ver_fleet", tool="(site_ver)", order=100, scope=Scope.GROUP, steps=steps, judge=judge,
              gathers="site_ver")
'''

USES = '''
"""site_uses: a check whose command is built from site_ver's output on the same node (a test)."""
from provision.checks.base import Check, Finding, Step


def steps(profile, host, seen=None):
    version = (seen or {}).get("site_ver", {}).get("", {}).get("version", "unknown")
    return [Step("", ["python3", "-c", f"print('built for {version}')"], parser="built")]


def parse(text):
    return {"tool": "built", "line": text.strip()}


def judge(ctx):
    return [Finding("node", "built", ctx.parsed[""]["line"], ctx.parsed[""]["line"] == "built for 1.0",
                    expected="built for 1.0", fault="SITE_ODD", action="update it")]


CHECK = Check(id="site_uses", tool="built", order=6, steps=steps, parsers={"built": parse}, judge=judge,
              uses=("site_ver",))
'''

EXIT = '''
"""site_exit: a tool that exits 1 with a known failure text (n2) or an unknown one (n3) (a test)."""
from provision.checks.base import Check, Finding, Step
from provision.errors import ParseError

CODE = {"n1": "print('ok')", "n2": "print('Couldn\\\\'t allocate MR'); raise SystemExit(1)",
        "n3": "print('something else'); raise SystemExit(1)"}


def steps(profile, host):
    return [Step("", ["python3", "-c", CODE.get(host.name, CODE["n1"])], parser="ex", exit_judged=True)]


def parse(text):
    if "allocate MR" in text:
        return {"tool": "ex", "failed": True}
    if text.strip() == "ok":
        return {"tool": "ex", "failed": False}
    raise ParseError("neither a result nor a known failure")


def judge(ctx):
    return [Finding("node", "registered", not ctx.parsed[""]["failed"], not ctx.parsed[""]["failed"], expected=True,
                    fault="SITE_ODD", action="update it")]


CHECK = Check(id="site_exit", tool="ex", order=7, steps=steps, parsers={"ex": parse}, judge=judge)
'''


def _run(tmp_path, monkeypatch, only):
    folder = tmp_path / "site-checks"
    folder.mkdir(exist_ok=True)
    for name, text in (("site_ver", VERSION), ("site_ver_fleet", FLEET), ("site_uses", USES), ("site_exit", EXIT)):
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(folder))
    hosts = [Host(n, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr") for n in ("n1", "n2", "n3")]
    rundir = RunStore(tmp_path / "runs").create()
    run = Run(run_id=rundir.name, hosts={h.name: HostRecord(h.profile) for h in hosts})
    transport = LocalTransport()
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(only), transport,
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda _: None))).results
    return rundir, run, transport


def test_a_gathering_check_judges_the_hosts_outputs_without_running_a_tool_and_blames_the_odd_host(tmp_path,
                                                                                                  monkeypatch):
    rundir, run, transport = _run(tmp_path, monkeypatch, ["site_ver_fleet"])  # brings site_ver, its input
    assert [r.check for r in run.results].count("site_ver_fleet") == 1
    fleet = next(r for r in run.results if r.check == "site_ver_fleet")
    assert fleet.outcome is Outcome.FAIL and fleet.hosts == ("n1", "n2", "n3")
    assert fleet.blamed() == ("n3",), fleet.message
    assert "n3 node: version = '2.0', expected '1.0'" in fleet.message
    assert {r.key for r in fleet.raw} == {"n1/", "n2/", "n3/"}  # the node's own raw files, keyed by host
    assert all(r.path == f"raw/{r.host}/site_ver.txt" for r in fleet.raw)
    ran = [argv for _, argv in transport.commands if argv[0] == "python3"]
    assert len(ran) == 3  # site_ver's three commands (besides reading each node's OS); the fleet check ran none
    assert run.verdicts() == {"n1": "pass", "n2": "pass", "n3": "fail"}
    again = {r.check: r for r in reevaluate(rundir, run, None)}
    assert again["site_ver_fleet"].outcome is Outcome.FAIL and again["site_ver_fleet"].blamed() == ("n3",)


def test_a_host_whose_source_check_errored_is_left_out_and_named(tmp_path, monkeypatch):
    from tests.unit.engine import local

    real = local.LocalConnection.start

    def broken(self, argv, timeout_s):  # n2's site_ver cannot run
        return real(self, ["false"] if self.host.name == "n2" else argv, timeout_s)

    monkeypatch.setattr(local.LocalConnection, "start", broken)
    _, run, _ = _run(tmp_path, monkeypatch, ["site_ver_fleet"])
    fleet = next(r for r in run.results if r.check == "site_ver_fleet")
    assert [(f.metric, f.value) for f in fleet.findings if f.metric == "left_out"] == [("left_out", "n2")]
    assert {r.host for r in fleet.raw} == {"n1", "n3"}


def test_a_check_that_uses_another_is_built_from_that_nodes_output(tmp_path, monkeypatch):
    _, run, transport = _run(tmp_path, monkeypatch, ["site_uses"])
    uses = {r.host: r for r in run.results if r.check == "site_uses"}
    assert uses["n1"].outcome is Outcome.PASS and uses["n3"].outcome is Outcome.FAIL
    assert "built = 'built for 2.0'" in uses["n3"].message
    assert ("n3", ["python3", "-c", "print('built for 2.0')"]) in transport.commands


def test_a_used_check_that_gave_no_output_makes_the_user_an_error(tmp_path, monkeypatch):
    from tests.unit.engine import local

    real = local.LocalConnection.start
    monkeypatch.setattr(local.LocalConnection, "start", lambda self, argv, t: real(
        self, ["false"] if self.host.name == "n1" and "site_ver" not in str(argv) and "1.0" in str(argv) else argv, t))
    _, run, _ = _run(tmp_path, monkeypatch, ["site_uses"])
    uses = {r.host: r for r in run.results if r.check == "site_uses"}
    assert uses["n1"].outcome is Outcome.ERROR and "needs this run's site_ver output of n1" in uses["n1"].message


def test_an_exit_status_the_parser_reads_is_a_verdict_and_an_unknown_one_an_error(tmp_path, monkeypatch):
    _, run, _ = _run(tmp_path, monkeypatch, ["site_exit"])
    out = {r.host: r for r in run.results}
    assert out["n1"].outcome is Outcome.PASS
    assert out["n2"].outcome is Outcome.FAIL and not out["n2"].run_error  # the node's fault, read from its text
    assert out["n3"].outcome is Outcome.ERROR and "neither a result nor a known failure" in out["n3"].message


def test_an_unreachable_host_is_left_out_of_the_comparison_not_made_the_groups_error(tmp_path, monkeypatch):
    from tests.unit.engine import local

    real = local.LocalTransport.connect

    def connect(self, host):
        self.unreachable = {"n2"}
        return real(self, host)

    monkeypatch.setattr(local.LocalTransport, "connect", connect)
    _, run, _ = _run(tmp_path, monkeypatch, ["site_ver_fleet"])
    fleet = next(r for r in run.results if r.check == "site_ver_fleet")
    assert fleet.outcome is Outcome.FAIL and fleet.blamed() == ("n3",), fleet.message
    assert [(f.metric, f.value) for f in fleet.findings if f.metric == "left_out"] == [("left_out", "n2")]
    assert run.verdicts()["n2"] == "error"  # its own unreachable error, from site_ver


def test_a_host_whose_source_check_could_not_be_judged_is_left_out_not_the_groups_error(tmp_path, monkeypatch):
    from tests.unit.engine import local

    real = local.LocalConnection.start

    def start(self, argv, timeout_s):
        if self.host.name == "n2" and argv[0] == "python3":  # n2's probe prints nothing: its site_ver errors
            return real(self, ["python3", "-c", "print('')"], timeout_s)
        return real(self, argv, timeout_s)

    monkeypatch.setattr(local.LocalConnection, "start", start)
    _, run, _ = _run(tmp_path, monkeypatch, ["site_ver_fleet"])
    out = {(r.check, r.host): r for r in run.results if r.check == "site_ver"}
    assert out[("site_ver", "n2")].outcome is Outcome.ERROR, out[("site_ver", "n2")].message
    fleet = next(r for r in run.results if r.check == "site_ver_fleet")
    assert fleet.outcome is Outcome.FAIL and fleet.blamed() == ("n3",), fleet.message
    assert [(f.metric, f.value) for f in fleet.findings if f.metric == "left_out"] == [("left_out", "n2")]


def test_a_gathering_check_runs_with_the_node_checks_and_not_in_a_cluster_scope_run(tmp_path, monkeypatch):
    _run(tmp_path, monkeypatch, ["site_ver_fleet"])  # writes the site checks and points the registry at them
    hosts = [Host(n, "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr") for n in ("n1", "n2")]
    rundir = RunStore(tmp_path / "runs2").create()
    record = Run(run_id=rundir.name, hosts={h.name: HostRecord(h.profile) for h in hosts})
    node = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_ver_fleet"], scope="node"), LocalTransport(),
                      burnin.Sink(rundir, record.hosts, Control(progress=lambda _: None))).results
    assert {r.check for r in node} == {"site_ver", "site_ver_fleet"}
    cluster = burnin.run(targets.build(hosts), burnin.BurninRequest(["site_ver_fleet"], scope="cluster"),
                         LocalTransport(), burnin.Sink(rundir, record.hosts, Control(progress=lambda _: None))).results
    assert cluster == []  # neither site_ver (node scope) nor the comparison of its outputs
