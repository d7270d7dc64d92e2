"""slurmd runs ``provision health`` itself: the health_check role installs it on two nodes of the installed H100 rack
(real Ansible over SSH; run twice, the second run changes nothing), each node runs its own munged and slurmd
(``slurm_node``: Debian's slurm-wlm 22.05), and the role's slurm.conf fragment is the cluster's (HealthCheckProgram,
HealthCheckInterval, HealthCheckNodeState; then its Prolog).

- An operator drains node02. A GPU of node01 and node02 falls off the bus (Xid 79): the first health check of node01
  that starts after the fault drains it with this tool's reason; node02 keeps the operator's. Healed, node01 is
  resumed by its next health check. An InfiniBand port pulled on node01: drained again with the port as reason;
  healed, resumed. node02 keeps the operator's reason all along.
- The Prolog (the role's, HealthCheckInterval 0: only the prolog judges): a batch job sent to node01 with a port down
  never runs there: the prolog fails, Slurm drains the node and requeues the job held
  (https://slurm.schedmd.com/prolog_epilog.html: "If the Prolog fails (returns a non-zero exit code), this will
  result in the node being set to a DRAIN state and the job being requeued. The job will be placed in a held state
  unless nohold_on_prolog_fail is configured in SchedulerParameters").

"Within one interval" is shown by order, never by a clock: by the end of the first call that started after the fault
(its last.json: ``ended_unix_s - wall_s``) the node is drained by this health check: by that call, or by the one
running when the fault came.
"""
import json
import os
import re
import subprocess
import time

import pytest

from provision.sim import rack
from tests.integration import health_role, slurm_cluster, slurm_node
from tests.integration.conftest import provision

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing()))]
INTERVAL = 2  # HealthCheckInterval in the test (the role's default is 300)
OPERATOR = "PSU swap, ticket 4711 (alice)"
PATIENCE_S = 90  # how long a wait may last before the test gives up (a busy 2-core machine); never asserted


def last(node) -> dict:
    path = node.root() / "var/lib/provision/health/last.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def first_call_after(node, since: float) -> dict:
    """The last.json of the first health check of ``node`` that started after ``since`` (Unix time) and judged the
    node (pass or fail: a call a loaded machine made run past its budget judges nothing and changes nothing)."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        kept = last(node)
        if kept and kept["ended_unix_s"] - kept["wall_s"] > since and kept["verdict"] != "error":
            return kept
        time.sleep(0.1)
    raise AssertionError(f"{node.name}: no health check judged it after {since}: {last(node)}")


def fault(inv, node: str, kind: str, device: str) -> float:
    done = provision("sim", "fault", node, kind, "--device", device, "--inventory", str(inv))
    assert done.returncode == 0, done.stderr
    return time.time()


def heal(inv, node: str) -> float:
    assert provision("sim", "heal", node, "--inventory", str(inv)).returncode == 0
    return time.time()


def sbatch(slurm, node: str) -> str:
    submit = subprocess.run(["sbatch", "--parsable", "-w", node, "--chdir=/tmp", "--output=/tmp/job-%j.out",
                             "--wrap", "hostname"], capture_output=True, text=True, timeout=30,
                            env={**os.environ, **slurm.env})
    assert submit.returncode == 0, submit.stderr
    return submit.stdout.strip()


def job(slurm, job_id: str) -> dict:
    return dict(re.findall(r"(\w+)=(\S*)", slurm.scontrol("show", "job", "-o", job_id).stdout))


def test_slurmd_runs_the_health_check_drains_with_our_reason_resumes_and_the_prolog_keeps_jobs_off(eight_h100,
                                                                                                    tmp_path):
    inv = eight_h100
    nodes = {n.name: n for n in rack.load_nodes(inv)}
    n1, n2 = nodes["node01"], nodes["node02"]
    settings = {"health_check_interval_s": INTERVAL, "health_check_node_state": "ANY", "health_check_prolog": True,
                "health_check_source": str(health_role.snapshot_source(tmp_path / "source"))}
    for attempt in (1, 2):  # the second run changes nothing
        applied = health_role.apply_health_role(inv, "node01,node02", settings)
        assert applied.returncode == 0, applied.stdout[-4000:] + applied.stderr[-2000:]
    assert health_role.recap(applied, "node01")["changed"] == health_role.recap(applied, "node02")["changed"] == 0
    fragment = (n1.root() / "etc/slurm/provision-health.conf").read_text()
    assert "HealthCheckProgram=/usr/local/sbin/provision-health\n" in fragment
    assert f"HealthCheckInterval={INTERVAL}\n" in fragment and "Epilog=" not in fragment
    assert "Prolog=/usr/local/sbin/provision-health-prolog\n" in fragment
    config = json.loads((n1.root() / "etc/provision/health.json").read_text())
    assert config["host"] == config["slurm_node"] == "node01" and config["profile"] == "h100-sxm5-80g-ndr"
    assert all(k.startswith("provision_") and not k.startswith(("provision_bmc_password", "provision_ssh_"))
               for k in config["vars"]) and "provision_bmc_username" not in config["vars"]
    wrapper = (n1.root() / "usr/local/sbin/provision-health").read_text()
    assert "exec /opt/provision/venv/bin/provision health --config /etc/provision/health.json" in wrapper
    periodic = "\n".join(line for line in fragment.splitlines() if not line.startswith(("Prolog=", "Epilog=")))

    with slurm_node.slurm_in_nodes(tmp_path / "slurm", [n1, n2], extra_conf=periodic) as slurm:
        started = time.time()
        assert first_call_after(n1, started)["verdict"] == "pass"  # slurmd runs it in the node: healthy, left IDLE
        assert slurm.scontrol("update", "NodeName=node02", "State=DRAIN", f"Reason={OPERATOR}").returncode == 0

        for kind, device, check in (("xid79", "1", "xid"), ("ib_port_down", "mlx5_2", "ib_ports")):
            fault(inv, "node02", kind, device)  # node02 first: nothing slow between node01's fault and the watch
            broken = fault(inv, "node01", kind, device)
            drained = first_call_after(n1, broken)
            assert next(c for c in drained["checks"] if c["check"] == check)["outcome"] == "fail", drained
            # drained by it, or already by the call that was running when the fault came (it saw part of it)
            assert drained["slurm"]["action"] == "drained" or "already drained by this health check" in \
                drained["slurm"]["lines"][0], drained
            state = slurm.node("node01")
            assert state.words == {"IDLE", "DRAIN"} and state.reason.startswith("provision-health: "), state
            operator = first_call_after(n2, broken)  # any call on the broken node02 says the same
            assert operator["verdict"] == "fail" and operator["slurm"]["action"] == "nothing"
            assert "node02 left alone: held by someone else" in operator["slurm"]["lines"][0]
            assert slurm.node("node02").reason == OPERATOR
            heal(inv, "node02")
            healed = heal(inv, "node01")
            resumed = first_call_after(n1, healed)
            assert resumed["verdict"] == "pass", resumed
            # resumed by it, or by the call that was running when the heal came (it saw only the healed node)
            assert resumed["slurm"]["action"] in ("resumed", "nothing"), resumed
            assert not slurm.node("node01").held() and slurm.node("node01").reason == ""
            assert first_call_after(n2, healed)["slurm"]["action"] == "nothing"
            assert slurm.node("node02").reason == OPERATOR  # never ours to resume

    prolog = "\n".join(line for line in fragment.splitlines() if line.startswith(("Prolog=", "PrologFlags")))
    with slurm_node.slurm_in_nodes(tmp_path / "slurm-prolog", [n1], extra_conf=prolog) as slurm:
        fault(inv, "node01", "ib_port_down", "mlx5_0")
        job_id = sbatch(slurm, "node01")
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline and job(slurm, job_id).get("Reason") != "launch_failed_requeued_held":
            time.sleep(0.2)
        held = job(slurm, job_id)
        assert held["JobState"] == "PENDING" and held["Reason"] == "launch_failed_requeued_held", held
        assert held["Restarts"] == "1"
        kept = last(n1)
        assert kept["mode"] == "prolog" and kept["verdict"] == "fail" and kept["exit_status"] == 1
        assert kept["line"].startswith("ERROR:  provision-health:  Health check failed:  ib_ports mlx5_0 port 1")
        state = slurm.node("node01")  # drained by the health check; Slurm's drain for the prolog keeps that reason
        assert state.held() and state.reason.startswith("provision-health: ib_ports mlx5_0 port 1"), state
        output = n1.root() / f"tmp/job-{job_id}.out"
        assert not output.exists() or "node01" not in output.read_text()  # `hostname` never ran there
        subprocess.run(["scancel", job_id], env={**os.environ, **slurm.env}, timeout=30, check=False)
    heal(inv, "node01")


def test_without_slurm_a_systemd_timer_runs_the_health_check(eight_h100, tmp_path):
    """health_check_slurm false: the role's service and timer, enabled and started by the node's systemd; the timer's
    first run (OnBootSec long past: it elapses at once) leaves the node's last.json, judged by the health check."""
    inv = eight_h100
    n3 = {n.name: n for n in rack.load_nodes(inv)}["node03"]
    began = time.time()
    applied = health_role.apply_health_role(inv, "node03", {
        "health_check_slurm": False, "health_check_timer_boot_s": 1,
        "health_check_source": str(health_role.snapshot_source(tmp_path / "source"))})
    assert applied.returncode == 0, applied.stdout[-4000:] + applied.stderr[-2000:]
    assert not (n3.root() / "etc/slurm/provision-health.conf").exists()
    timer = (n3.root() / "etc/systemd/system/provision-health.timer").read_text()
    assert "OnUnitActiveSec=300\n" in timer
    state = slurm_node.in_node(n3, "sh", "-c", "systemctl is-enabled provision-health.timer; "
                                               "systemctl is-active provision-health.timer").stdout
    assert state.split() == ["enabled", "active"], state
    kept = first_call_after(n3, began)
    assert kept["mode"] == "periodic" and kept["verdict"] == "pass" and kept["slurm"]["action"] == "nothing", kept
