"""``provision health`` as slurmd runs it, against stand-in tools (``tools.py``: real captures, a stand-in scontrol):
NHC's line and exit statuses, the self-drain's rules, the health check's own failures (never a drain), the budget,
the Xid window, last.json and the textfile."""
import json
import os
import subprocess
import sys
from datetime import datetime

import pytest

from tests.unit import mounts
from tests.unit.health import tools

H100 = "h100-sxm5-80g-ndr"
HEALTHY = tools.DATA / "xid/sim_h100_healthy.txt"
XID79 = tools.DATA / "xid/sim_h100_xid79.txt"
LINE = "ERROR:  provision-health:  Health check failed:  xid PCI "


@pytest.fixture
def node(tmp_path):
    """(bin folder, config file, state folder) of node01."""
    config = tmp_path / "health.json"
    config.write_text(json.dumps({"host": "node01", "profile": H100, "slurm_node": "node01", "vars": {}}))
    return tmp_path / "bin", config, tmp_path / "state"


def call(node, *args, env=None):
    bin_dir, config, state = node
    bin_dir.mkdir(exist_ok=True)
    return tools.health(bin_dir, "--config", str(config), "--state-dir", str(state), *args, env=env)


def last(node) -> dict:
    return json.loads((node[2] / "last.json").read_text())


def slurm(tmp_path, **nodes):
    return tools.scontrol(tmp_path, {n: {"state": s[0], "reason": s[1]} if isinstance(s, tuple) else {"state": s}
                                     for n, s in nodes.items()})


def test_healthy_is_silent_and_keeps_its_result_and_the_xid_window(node):
    tools.printing(node[0], "dmesg", HEALTHY)
    done = call(node, "--checks", "xid", "--textfile-dir", str(node[2] / "prom"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    kept = last(node)
    assert kept["verdict"] == "pass" and kept["exit_status"] == 0 and kept["line"] == "" and not kept["cut"]
    assert [c["check"] for c in kept["checks"]] == ["xid"] and kept["xid_after_s"] == 12.3  # its last kernel line
    prom = (node[2] / "prom/provision_health.prom").read_text()
    assert 'provision_health_healthy{mode="periodic",node="node01"} 1.0' in prom
    assert 'provision_health_check_outcome{check="xid",mode="periodic",node="node01",outcome="pass"} 1.0' in prom
    assert len((node[2] / "last.json").read_bytes()) < 4096


def test_a_failing_check_drains_its_node_once_and_a_pass_resumes_it(node, tmp_path):
    state = slurm(tmp_path, node01="IDLE", node02="IDLE")
    tools.printing(node[0], "dmesg", XID79)
    bad = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert bad.returncode == 1, bad.stderr
    assert bad.stdout.startswith(LINE) and "xid = 79" in bad.stdout.splitlines()[0]
    nodes = json.loads(state.read_text())
    assert nodes["node01"]["state"] == "IDLE+DRAIN"
    assert nodes["node01"]["reason"].startswith("provision-health: xid PCI")
    assert nodes["node02"] == {"state": "IDLE"}
    assert "provision-health: slurm: node01: drained: provision-health: xid" in bad.stdout
    again = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert again.returncode == 1 and "already drained by this health check" in again.stdout
    tools.printing(node[0], "dmesg", HEALTHY)  # healed (a reboot: a kernel log without the Xid)
    good = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert good.returncode == 0 and "provision-health: slurm: node01: resumed: every check passes" in good.stdout
    assert json.loads(state.read_text())["node01"]["state"] == "IDLE"
    assert last(node)["slurm"]["action"] == "resumed"


@pytest.mark.parametrize("state, reason, said", [
    ("IDLE+DRAIN", "PSU swap, ticket 4711 (alice)", "left alone: held by someone else (IDLE+DRAIN): PSU swap"),
    ("DOWN", "Not responding", "left alone: DOWN (Not responding)"),
    ("IDLE+DRAIN", "burnin: ib_ports mlx5_3 port 1: rate_Gbps = 200", "held by someone else"),
    ("DOWN+DRAIN", "provision-health: xid PCI 0000:4c:00: xid = 79", "left alone: DOWN (provision-health: xid"),
])
def test_a_node_someone_else_holds_is_never_touched(node, tmp_path, state, reason, said):
    states = slurm(tmp_path, node01=(state, reason))
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    for capture, status in ((XID79, 1), (HEALTHY, 0)):  # failing: not drained over theirs; passing: not resumed
        tools.printing(node[0], "dmesg", capture)
        done = call(node, "--checks", "xid", "--drain", "self", env=env)
        assert done.returncode == status and said in done.stdout
        assert json.loads(states.read_text())["node01"] == {"state": state, "reason": reason}
    assert all(line.startswith("show node") for line in (tmp_path / "slurm.json.log").read_text().splitlines())


def test_the_breaker_holds_a_drain_when_many_nodes_were_drained_by_the_health_check_today(node, tmp_path):
    now = datetime.now().isoformat(timespec="seconds")
    nodes = {f"node{i:02d}": {"state": "IDLE"} for i in range(1, 21)}
    for name in ("node19", "node20"):
        nodes[name] = {"state": "IDLE+DRAIN", "reason": "provision-health: xid PCI 0000:4c:00", "since": now}
    state = tools.scontrol(tmp_path, nodes)
    tools.printing(node[0], "dmesg", XID79)
    for mode, status in (("periodic", 1), ("prolog", 0)):  # a prolog lets the job go: a shared cause, not this node
        done = call(node, "--checks", "xid", "--drain", "self", "--mode", mode,
                    env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
        assert done.returncode == status, done.stdout + done.stderr
        assert "provision-health: slurm: breaker: node01 not drained: at most 2 per 24 h (10 % of 20 Slurm nodes), 2 " \
               "of them already drained by this health check in that time" in done.stdout
        assert json.loads(state.read_text())["node01"] == {"state": "IDLE"}


def test_drains_over_the_cap_in_the_same_second_step_back_to_it(node, tmp_path):
    """Two nodes drained in the same second as this one (over a cap of 1 of 10 nodes): it drains, reads the states
    again, is not among the first by (stamp, name), and resumes itself."""
    now = datetime.now().isoformat(timespec="seconds")
    nodes = {f"node{i:02d}": {"state": "IDLE"} for i in range(1, 11)}
    state = tools.scontrol(tmp_path, nodes)
    script = tools.SCONTROL.replace("PYTHON", "/usr/bin/env python3").replace("STATE", str(state))
    # another node's drain lands between this node's check of the budget and its own drain
    racing = script.replace('if fields["State"] == "DRAIN":', f'''if fields["State"] == "DRAIN":
        nodes["node00"] = {{"state": "IDLE+DRAIN", "reason": "provision-health: nvlink x", "since": "{now}"}}''')
    (tmp_path / "bin/scontrol").write_text(racing)
    tools.printing(node[0], "dmesg", XID79)
    done = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert "breaker: node01 drained then resumed: 2 nodes drained by this health check within 24 h, more than 1" \
        in done.stdout, done.stdout
    assert json.loads(state.read_text())["node01"]["state"] == "IDLE"
    assert last(node)["slurm"]["action"] == "held by the breaker"


def test_a_hung_tool_is_cut_by_the_budget_and_drains_nothing(node, tmp_path):
    state = slurm(tmp_path, node01="IDLE")
    tools.tool(node[0], "nvidia-smi", "exec sleep 60\n")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    done = call(node, "--checks", "gpu_health", "--budget", "1", "--drain", "self", env=env)
    assert done.returncode == 142, done.stdout + done.stderr
    assert done.stdout.startswith("ERROR:  provision-health:  Health check timed out while running gpu_health "
                                  "(budget 1 s): not judged")
    assert "Traceback" not in done.stderr and json.loads(state.read_text())["node01"] == {"state": "IDLE"}
    assert last(node)["cut"] and last(node)["verdict"] == "error" and last(node)["exit_status"] == 142
    prolog = call(node, "--checks", "gpu_health", "--budget", "1", "--mode", "prolog", "--drain", "self", env=env)
    assert prolog.returncode == 0 and "timed out while running gpu_health" in prolog.stdout  # Slurm drains no node


def test_a_missing_tool_is_the_health_checks_error_not_the_nodes(node, tmp_path):
    state = slurm(tmp_path, node01="IDLE")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    done = call(node, "--checks", "gpu_health", "--drain", "self", env=env)  # no nvidia-smi on PATH
    assert done.returncode == 7
    assert done.stdout.splitlines()[0] == ("ERROR:  provision-health:  Health check could not finish:  gpu_health: "
                                           "nvidia-smi is not installed (exit 127)")
    assert "not judged (the health check could not finish): left IDLE" in done.stdout
    assert json.loads(state.read_text())["node01"] == {"state": "IDLE"}
    assert call(node, "--checks", "gpu_health", "--mode", "epilog", env=env).returncode == 0


@pytest.mark.parametrize("broken", ["missing", "failing"])
def test_scontrol_missing_or_failing_is_one_line_and_the_verdict_stands(node, tmp_path, broken):
    if broken == "failing":
        tools.scontrol(tmp_path, {"__fail__": "Unable to contact slurm controller (connect failure)"})
    tools.printing(node[0], "dmesg", XID79)
    system = tools.only(tmp_path / "system", "timeout", "sh", "cat", "grep", "uname")  # no scontrol of this machine's
    done = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:{system}"})
    assert done.returncode == 1 and done.stdout.startswith(LINE) and "Traceback" not in done.stderr
    assert len(done.stdout.splitlines()) == 1  # the verdict's line; the warning on stderr
    said = done.stderr.splitlines()[0]
    assert said.startswith("provision-health: slurm: warning: cannot read Slurm node node01, nothing drained or "
                           "resumed: ")
    assert ("scontrol not found: install Debian package slurm-client" in said if broken == "missing"
            else "Unable to contact slurm controller" in said)


def test_a_read_only_state_folder_is_one_warning_and_the_verdict_stands(node, tmp_path):
    tools.printing(node[0], "dmesg", XID79)
    with mounts.read_only(node[2]):
        done = call(node, "--checks", "xid", "--textfile-dir", str(node[2] / "prom"))
    assert done.returncode == 1 and done.stdout.startswith(LINE)
    warnings = done.stderr.strip().splitlines()
    assert len(warnings) == 2 and all(w.startswith("provision-health: warning: ") for w in warnings)
    assert "last.json" in warnings[0] and "read-only" in warnings[0].lower()


def test_an_xid_judged_by_a_passing_check_or_acknowledged_is_not_judged_again(node):
    tools.printing(node[0], "dmesg", XID79)
    assert call(node, "--checks", "xid").returncode == 1
    assert last(node)["xid_after_s"] is None  # failing: the window stays (until a reboot or --ack-xid)
    assert call(node, "--checks", "xid").returncode == 1
    acked = call(node, "--checks", "xid", "--ack-xid")
    assert acked.returncode == 0 and last(node)["xid_after_s"] == 3600.012345
    assert call(node, "--checks", "xid").returncode == 0  # the same log: judged already
    later = node[0] / "later.txt"
    later.write_text(XID79.read_text() + "[ 3700.000000] NVRM: Xid (PCI:0000:5d:00): 48, pid=2231, name=python3, "
                     "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                     "partition 0, subpartition 0.\n")
    tools.printing(node[0], "dmesg", later)
    newer = call(node, "--checks", "xid")
    assert newer.returncode == 1 and "xid = 48" in newer.stdout and "xid = 79" not in newer.stdout


def test_checks_that_load_a_gpu_run_only_in_the_epilog_and_only_on_idle_gpus(node):
    refused = call(node, "--checks", "gpu_stress")
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "provision: error: --checks gpu_stress: it loads the GPUs, which a job on this node would feel: not in "
        "--mode periodic (only in --mode epilog, when no process uses a GPU)")
    hca = call(node, "--checks", "ib_write_bw", "--mode", "epilog")  # an HCA's load: never; an epilog exits 0
    assert hca.returncode == 0 and hca.stdout.startswith("ERROR:  provision-health:  Health check could not finish:  "
                                                         "--checks ib_write_bw: it loads the HCAs")
    tools.tool(node[0], "nvidia-smi", "echo '00000000:4C:00.0, 4242, python3'\n")
    every = {"SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7"}  # the ending job held every GPU: no other job holds one
    busy = call(node, "--checks", "gpu_stress", "--mode", "epilog", "-v", env=every)
    assert busy.returncode == 0
    assert "provision-health: gpu_stress: skipped: not run: GPUs in use: pid 4242 (python3) on 00000000:4C:00.0" \
        in busy.stdout
    shared = call(node, "--checks", "gpu_stress", "--mode", "epilog", "-v", env={"SLURM_JOB_GPUS": "0,1"})
    assert "gpu_stress: skipped: not run: the ending job held GPUs 0,1 (SLURM_JOB_GPUS), not all 8: another job " \
           "may hold the others" in shared.stdout
    assert last(node)["job_gpus"] == [0, 1]


@pytest.mark.parametrize("content, said", [
    ("{", "not JSON"),
    ('{"host": "node01", "profile": "h100-sxm5-80g-ndr", "colour": 1}', "field 'colour': unknown"),
    ('{"host": "node01", "profile": "h100-sxm5-80g-ndr", "slurm_node": "node[01-02]"}', "field 'slurm_node'"),
    ('{"host": "node01", "profile": "h100-sxm5-80g-ndr", "vars": {"provision_bmc_password_file": "/x"}}',
     "a BMC credential has no place on the node"),
    ('{"host": "node01", "profile": "no-such-profile"}', "no-such-profile"),
])
def test_a_bad_config_is_one_line_naming_file_and_field(node, content, said):
    node[1].write_text(content)
    done = call(node)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("provision: error: ") and len(done.stderr.strip().splitlines()) == 1
    assert said in done.stderr and ("health.json" in done.stderr or "no-such-profile" in done.stderr)


def test_a_kept_run_is_a_run_folder_like_a_burnins(node, tmp_path):
    tools.printing(node[0], "dmesg", XID79)
    done = call(node, "--checks", "xid", "--keep-run", "--run-id", "health-kept",
                env={"PROVISION_RUNS_DIR": str(tmp_path / "runs")})
    assert done.returncode == 1
    report = json.loads((tmp_path / "runs/health-kept/report.json").read_text())
    assert report["verdicts"] == {"node01": "fail"} and (tmp_path / "runs/health-kept/junit/node01.xml").is_file()
    assert report["run_id"] == "health-kept"
    tools.printing(node[0], "dmesg", HEALTHY)
    remembered = call(node, "--checks", "xid", "--history", str(tmp_path / "history.db"), "--run-id", "health-h",
                      env={"PROVISION_RUNS_DIR": str(tmp_path / "runs")})
    assert remembered.returncode == 0 and (tmp_path / "runs/health-h/report.json").is_file()
    listed = subprocess.run([sys.executable, "-m", "provision", "history", "--history", str(tmp_path / "history.db")],
                            capture_output=True, text=True, timeout=60)
    assert "node01: 1 runs" in listed.stdout and "last health-h: pass" in listed.stdout
    assert (tmp_path / "runs/health-kept/raw/node01/xid.txt").read_text() == XID79.read_text()
    # a node the role installed lacks the burn-in's modules (paramiko): the verdict stands, said in one warning
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "paramiko.py").write_text("raise ImportError('No module named paramiko (blocked by the test)')\n")
    tools.printing(node[0], "dmesg", XID79)
    for mode, status in (("periodic", 1), ("prolog", 1)):
        lean = call(node, "--mode", mode, "--checks", "xid", "--keep-run", "--run-id", f"health-lean-{mode}",
                    env={"PROVISION_RUNS_DIR": str(tmp_path / "runs"), "PYTHONPATH": str(blocked)})
        assert lean.returncode == status and lean.stdout.startswith(LINE), lean.stdout + lean.stderr
        assert "warning: --keep-run/--history: report.json and JUnit not written" in lean.stderr
        assert "Traceback" not in lean.stderr and last(node)["exit_status"] == status


def test_from_an_inventory_instead_of_the_config_file(node, tmp_path):
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(
        "all:\n  children:\n    gpu_nodes:\n      hosts:\n        node01:\n          ansible_host: 127.0.9.71\n"
        f"          provision_profile: {H100}\n          provision_slurm_node: gpu-a01\n")
    tools.printing(node[0], "dmesg", XID79)
    done = tools.health(node[0], "-i", str(inventory), "--host", "node01", "--checks", "xid", "--state-dir",
                        str(node[2]))
    assert done.returncode == 1 and done.stdout.startswith(LINE)
    assert last(node)["node"] == "node01" and last(node)["slurm_node"] == "gpu-a01"
    both = tools.health(node[0], "-i", str(inventory), "--config", str(node[1]))
    assert both.returncode == 2 and "give one" in both.stderr


def test_a_drain_is_resumed_only_by_a_call_that_passed_the_checks_it_names(node, tmp_path):
    state = slurm(tmp_path, node01=("IDLE+DRAIN", "provision-health: gpu_stress GPU3: gpu_burn FAULTY"))
    tools.printing(node[0], "dmesg", HEALTHY)
    done = call(node, "--checks", "xid", "--drain", "self", env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert done.returncode == 0
    assert "node01 passes but stays drained: gpu_stress did not pass in this call" in done.stdout
    assert json.loads(state.read_text())["node01"]["state"] == "IDLE+DRAIN", done.stdout


def test_in_a_prolog_the_health_checks_own_bad_input_exits_0(node):
    node[1].unlink()
    done = call(node, "--mode", "prolog")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("ERROR:  provision-health:  Health check could not finish:  ")
    assert "health.json: no such file" in done.stdout and done.stdout.rstrip().endswith("(exit 0: --mode prolog)")
    assert call(node).returncode == 2  # periodic: bad input is bad input


@pytest.mark.parametrize("mode", ["prolog", "epilog"])
def test_in_a_prolog_an_empty_option_or_a_module_the_node_lacks_exits_0(node, tmp_path, mode):
    empty = call(node, "--mode", mode, "--budget", "")
    assert empty.returncode == 0 and "--budget '': an empty value" in empty.stdout, empty.stdout + empty.stderr
    assert empty.stdout.rstrip().endswith(f"(exit 0: --mode {mode})")
    blocked = tmp_path / "blocked"  # the node's environment without PyYAML (the role installs it; a site may not)
    blocked.mkdir()
    (blocked / "yaml.py").write_text("raise ImportError('No module named yaml (blocked by the test)')\n")
    missing = call(node, "--mode", mode, env={"PYTHONPATH": str(blocked)})
    assert missing.returncode == 0 and "Traceback" not in missing.stderr, missing.stdout + missing.stderr
    assert missing.stdout.startswith("ERROR:  provision-health:  Health check could not finish:  ImportError: No "
                                     "module named yaml")
    assert call(node, env={"PYTHONPATH": str(blocked)}).returncode == 3  # periodic: a broken install is a bug's 3


def test_an_xid_that_failed_keeps_failing_once_the_kernel_log_no_longer_holds_it(node):
    tools.printing(node[0], "dmesg", XID79)
    assert call(node, "--checks", "xid").returncode == 1
    assert last(node)["xid_failing"] == [{"pci": "0000:4c:00", "xid": 79, "stamp_s": 3600.0}]
    wrapped = node[0] / "wrapped.txt"  # the ring buffer wrapped: its first line is later than the Xid
    wrapped.write_text("[ 5000.000000] mlx5_core 0000:1a:00.0: mlx5_port_module_event: Module 0, status: plugged\n")
    tools.printing(node[0], "dmesg", wrapped)
    kept = call(node, "--checks", "xid", "-v")
    assert kept.returncode == 1 and "no longer in the kernel log" in kept.stdout
    assert last(node)["xid_failing"] == [{"pci": "0000:4c:00", "xid": 79, "stamp_s": 3600.0}]
    assert call(node, "--checks", "xid", "--ack-xid").returncode == 0 and last(node)["xid_failing"] == []
    assert call(node, "--checks", "xid").returncode == 0
    reaching = node[0] / "reaching.txt"  # a log that still covers the Xid's time and lacks it: not logged this boot
    tools.printing(node[0], "dmesg", XID79)
    assert call(node, "--checks", "xid", "--ack-xid").returncode == 0
    reaching.write_text(HEALTHY.read_text())
    tools.printing(node[0], "dmesg", reaching)
    assert call(node, "--checks", "xid").returncode == 0


def test_an_empty_checks_list_runs_nothing_and_is_refused(node):
    tools.tool(node[0], "gpu_burn", "echo ran > gpu_burn.ran\n")
    done = call(node, "--checks", " ,")
    assert done.returncode == 2 and "--checks ' ,': no check id given" in done.stderr
    assert call(node, "--checks", ",", "--mode", "prolog").returncode == 0 and not list(node[0].glob("*.ran"))


@pytest.mark.parametrize("content", [
    '{"schema": 1, "boot_id": "BOOT", "xid_after_s": 1' + "0" * 400 + '}',
    '{"schema": 1, "boot_id": "BOOT", "xid_failing": 5}',
    '{"schema": 1, "boot_id": "BOOT", "xid_failing": [{"pci": "0000:4c:00", "xid": 79, "stamp_s": 1' + "0" * 400
    + '}, {"pci": "", "xid": true, "stamp_s": -1}]}',
    "[" * 100000,
])
def test_a_damaged_last_json_is_a_first_call(node, content):
    tools.printing(node[0], "dmesg", HEALTHY)
    node[2].mkdir()
    boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    (node[2] / "last.json").write_text(content.replace("BOOT", boot))
    done = call(node, "--checks", "xid")
    assert (done.returncode, done.stderr) == (0, "") and last(node)["verdict"] == "pass"  # and rewritten


def test_a_fifo_or_a_device_is_never_read_as_config_or_state(node, tmp_path):
    tools.printing(node[0], "dmesg", HEALTHY)
    node[2].mkdir()
    os.mkfifo(node[2] / "last.json")
    done = call(node, "--checks", "xid", "--budget", "5")  # a FIFO would block the read for ever
    assert done.returncode == 0 and last(node)["verdict"] == "pass"  # not read, then replaced by the new one
    for config in ("/dev/zero", str(tmp_path / "fifo.json")):
        if config.endswith("fifo.json"):
            os.mkfifo(config)
        bad = tools.health(node[0], "--config", config, "--state-dir", str(tmp_path / "s2"), "--checks", "xid")
        assert bad.returncode == 2 and f"{config}: not a regular file" in bad.stderr
    boot = tmp_path / "boot_id"  # the inventory's boot id file, a FIFO: the call never reads it (no boot id); the
    os.mkfifo(boot)              # xid check's own read of it blocks until the budget cuts that check
    node[1].write_text(json.dumps({"host": "node01", "profile": H100, "slurm_node": "node01",
                                   "vars": {"provision_boot_id_path": str(boot)}}))
    fifo = call(node, "--checks", "xid", "--budget", "2", "--mode", "prolog")
    assert fifo.returncode == 0 and "timed out while running xid (budget 2 s)" in fifo.stdout, fifo.stdout
    assert last(node)["boot_id"] is None and last(node)["verdict"] == "error"


def test_ack_xid_with_a_hung_or_missing_dmesg_is_the_health_checks_own_failure(node, tmp_path):
    tools.tool(node[0], "dmesg", "exec sleep 60\n")
    hung = call(node, "--checks", "xid", "--ack-xid", "--budget", "1")
    assert hung.returncode == 7 and "--ack-xid: dmesg timed out" in hung.stderr and "nothing acknowledged" in \
        hung.stderr, hung.stdout + hung.stderr
    (node[0] / "dmesg").unlink()
    system = tools.only(tmp_path / "system", "sh", "cat")  # no dmesg, and no coreutils timeout to start it with
    missing = call(node, "--checks", "xid", "--ack-xid", env={"PATH": f"{node[0]}:{system}"})
    assert missing.returncode == 7 and "this machine: could not start dmesg" in missing.stderr
    assert "AttributeError" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    prolog = call(node, "--checks", "xid", "--ack-xid", "--mode", "prolog", env={"PATH": f"{node[0]}:{system}"})
    assert prolog.returncode == 0 and "Health check could not finish" in prolog.stdout


def test_scontrol_printing_latin_1_is_read_and_the_verdict_stands(node, tmp_path):
    state = slurm(tmp_path, node01="IDLE", node02=("IDLE+DRAIN", "r\\u00e9paration (bob)"))
    script = (tmp_path / "bin/scontrol").read_text().replace(
        'print(f"NodeName={name}', 'sys.stdout.flush(); sys.stdout.buffer.write(b"NodeName=x State=IDLE '
        'Reason=r\\xe9paration [bob@2026-12-04T21:00:00]\\n"); print(f"NodeName={name}')
    (tmp_path / "bin/scontrol").write_text(script)
    tools.printing(node[0], "dmesg", XID79)
    done = call(node, "--checks", "xid", "--drain", "self", "--mode", "prolog",
                env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert done.returncode == 1 and done.stdout.startswith(LINE), done.stdout + done.stderr
    assert json.loads(state.read_text())["node01"]["state"] == "IDLE+DRAIN", done.stdout
