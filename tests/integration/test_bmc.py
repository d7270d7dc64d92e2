"""Out of band on a simulated rack (issue 37): the real CLI reaches each node's simulated BMC (Redfish over TLS, the
rack's CA) from the controller.

- a critical SEL entry fails its node's ``bmc`` check, naming the entry;
- a BMC that accepts a power-off and does nothing is reported as not carried out, never as done (the node still
  answers with its old boot id);
- a hung node (``node_hung``: its sshd and tools frozen) is named with its BMC's view; with ``--recover`` it is
  power-cycled, comes back with a new boot id, is checked again and flagged (NODE_POWER_CYCLED);
- bad input (a wrong password, an expired certificate, HTML, garbage JSON, a 10 MB SEL, a BMC that hangs) is one line
  and a distinct exit status, with no traceback, and a BMC that answers garbage is never asked to power anything.

Two nodes, one rack for the module (the checks need no install: bmc, xid and pcie_acs read the simulated hardware).
"""
import json
import shutil

import pytest
import yaml

from provision.results.store import RunStore
from provision.sim import rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
CHECKS = "bmc,xid,pcie_acs"


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    with own_rack(tmp_path_factory.mktemp("bmc-rack"), nodes=2) as folder:
        yield folder


def sim(folder, *args):
    done = provision("sim", *args, "--inventory", str(folder))
    assert done.returncode == 0, done.stderr
    return done


def heal(folder):
    for name in ("node01", "node02"):
        sim(folder, "heal", name)


def report(run_id):
    from provision import paths

    return json.loads(RunStore(paths.RUNS).open(run_id).report.read_text())


def one_line_error(done, words):
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("provision: error:")]
    assert len(lines) == 1 and words in lines[0], done.stderr
    return lines[0]


def test_a_critical_sel_entry_fails_its_nodes_bmc_check(two, tmp_path):
    heal(two)
    sim(two, "fault", "node01", "sel_critical")
    # with a check over SSH: the node says when it booted, and the SEL is judged from then (bmc alone: from the run's
    # start, when the entry was already there)
    done = provision("burnin", "-i", str(two), "--checks", "bmc,xid", "--run-id", "bmc-sel")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    rows = {r["hosts"][0]: r for r in report("bmc-sel")["results"] if r["check"] == "bmc"}
    assert rows["node02"]["outcome"] == "pass"
    assert rows["node01"]["outcome"] == "fail"
    bad = {f["fault"] for f in rows["node01"]["findings"] if not f["ok"]}
    assert "SEL_CRITICAL" in bad
    assert any(f["metric"] == "sel_entry" and "IERR" in str(f["value"]) for f in rows["node01"]["findings"])


def test_a_power_off_the_bmc_accepts_and_ignores_is_never_done(two):
    heal(two)
    sim(two, "fault", "node02", "bmc_power_ignored")
    status = provision("bmc", "status", "-i", str(two), "--limit", "node02", "--json")
    before = json.loads(status.stdout)["hosts"]["node02"]["boot_id"]
    done = provision("bmc", "power", "off", "-i", str(two), "--limit", "node02", "--yes", "--json",
                     "--confirm-timeout", "10")
    assert done.returncode == 1, done.stdout + done.stderr
    outcome = json.loads(done.stdout)["outcomes"][0]
    assert outcome["outcome"] == "not_carried_out" and outcome["host"] == "node02", outcome
    after = json.loads(provision("bmc", "status", "-i", str(two), "--limit", "node02", "--json").stdout)
    assert after["hosts"]["node02"]["boot_id"] == before  # the node never went down


def test_a_hung_node_is_named_with_its_bmc_view_and_recovered(two):
    heal(two)
    sim(two, "fault", "node01", "node_hung")
    done = provision("burnin", "-i", str(two), "--checks", CHECKS, "--recover", "--run-id", "bmc-recover")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    data = report("bmc-recover")
    assert data["schema_version"] == 3
    [action] = data["power_actions"]
    assert action["host"] == "node01" and action["action"] == "cycle" and action["outcome"] == "done"
    assert action["after_boot_id"] and action["after_boot_id"] != action["before_boot_id"]
    rows = {(r["check"], r["hosts"][0]): r for r in data["results"]}
    note = rows[("node_recovery", "node01")]
    assert note["outcome"] == "fail" and "power On" in note["message"]  # the BMC's view of the hung node
    assert [f["fault"] for f in note["findings"] if not f["ok"]] == ["NODE_POWER_CYCLED"]
    assert {f["device"] for f in note["findings"] if f["metric"] == "first_attempt"} == set(CHECKS.split(","))
    for check in CHECKS.split(","):  # checked again after the cycle, the second attempt
        assert rows[(check, "node01")]["outcome"] == "pass" and rows[(check, "node01")]["attempt"] == 2
        assert rows[(check, "node02")]["outcome"] == "pass"
    assert data["verdicts"] == {"node01": "fail", "node02": "pass"}  # flagged, though its checks then passed
    prom = (RunStore(__import__("provision").paths.RUNS).open("bmc-recover").path / "burnin.prom").read_text()
    assert 'provision_burnin_power_action{action="cycle",host="node01",outcome="done"} 1.0' in prom


@pytest.mark.parametrize("fault,what,words", [
    ("bmc_html", "status", "answered HTML"),
    ("bmc_garbage", "status", "invalid JSON"),
    ("bmc_cert_expired", "status", "certificate has expired"),
    ("sel_huge", "log", "over the 8 MiB cap"),
    ("bmc_unresponsive", "status", "no answer within 3 s"),
])
def test_a_bad_bmc_is_one_line_and_exit_8(two, fault, what, words):
    heal(two)
    sim(two, "fault", "node02", fault)
    done = provision("bmc", what, "-i", str(two), "--limit", "node02", "--timeout", "3", timeout=120)
    assert done.returncode == 8, done.stdout + done.stderr
    assert "node02: BMC 127." in one_line_error(done, words)


def test_a_bmc_answering_garbage_is_never_asked_to_power(two):
    heal(two)
    sim(two, "fault", "node02", "bmc_garbage")
    log = rack.state_dir(two) / "bmc" / "node02.log"
    before = log.read_text() if log.exists() else ""
    done = provision("bmc", "power", "cycle", "-i", str(two), "--limit", "node02", "--yes", "--json", timeout=120)
    assert done.returncode == 8 and "Traceback" not in done.stdout + done.stderr
    assert json.loads(done.stdout)["outcomes"][0]["outcome"] == "failed"
    assert (log.read_text() if log.exists() else "") == before  # no reset reached the BMC


def test_a_wrong_password_is_one_line_and_never_shown(two, tmp_path):
    heal(two)
    inv = tmp_path / "wrong"
    shutil.copytree(two, inv)
    data = yaml.safe_load((inv / "hosts.yml").read_text())
    wrong = tmp_path / "bmc-password"
    wrong.write_text("not-the-password-4242\n")
    wrong.chmod(0o600)
    for host in data["all"]["children"]["gpu_nodes"]["hosts"].values():
        host["provision_bmc_password_file"] = str(wrong)
    (inv / "hosts.yml").write_text(yaml.safe_dump(data))
    done = provision("bmc", "status", "-i", str(inv), "--limit", "node01")
    assert done.returncode == 8
    one_line_error(done, "login refused (HTTP 401)")
    assert "not-the-password-4242" not in done.stdout + done.stderr
