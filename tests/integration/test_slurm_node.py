"""slurmd inside a simulated node (``slurm_node.slurm_in_nodes``): its HealthCheckProgram, Prolog, Epilog and
batch jobs run in the node, with the node's files and hostname, and ``scontrol`` in the node reaches the
slurmctld on this machine.

One node (node01). A health check written into the node drains its own node (reason ``demo: <hostname>``,
as LBNL NHC does) while the node has /tmp/bad, and resumes it once the file is gone (only a drain of its
own: the reason starts with ``demo:``). A batch job runs in the node (its output, prolog and epilog logs are
the node's files). Then the Prolog fails (/tmp/bad-prolog in the node): Slurm 22.05 drains the node with
reason ``Prolog error`` and requeues the batch job held (prolog_epilog.html: "If the Prolog fails (returns
a non-zero exit code), this will result in the node being set to a DRAIN state and the job being requeued.
The job will be placed in a held state unless nohold_on_prolog_fail is configured in SchedulerParameters").
"""
import os
import re
import subprocess
import time

import pytest

from provision.sim import rack
from tests.integration import slurm_cluster, slurm_node
from tests.integration.conftest import own_rack

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing()))]
INTERVAL = 2  # HealthCheckInterval, seconds
HEALTH = """\
#!/bin/sh
# HealthCheckProgram (demo): drain this node while /tmp/bad exists, resume it once gone (only its own drains).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
node=$(hostname)
reason=$(scontrol show node -o "$node" | sed -n 's/.* Reason=\\(.*\\) \\[[^]]*\\]$/\\1/p')
echo "$(date +%T.%N) $node reason=[$reason]" >> /tmp/hc-demo.log
if [ -e /tmp/bad ]; then
    [ -z "$reason" ] && scontrol update nodename="$node" state=drain reason="demo: $node"
else
    case "$reason" in demo:*) scontrol update nodename="$node" state=resume ;; esac
fi
exit 0
"""
PROLOG = """\
#!/bin/sh
echo "prolog job=$SLURM_JOB_ID host=$(hostname)" >> /tmp/prolog-demo.log
[ ! -e /tmp/bad-prolog ]
"""
EPILOG = """\
#!/bin/sh
echo "epilog job=$SLURM_JOB_ID host=$(hostname)" >> /tmp/epilog-demo.log
"""
CONF = f"""\
HealthCheckProgram=/usr/local/sbin/hc-demo
HealthCheckInterval={INTERVAL}
HealthCheckNodeState=ANY
Prolog=/usr/local/sbin/prolog-demo
Epilog=/usr/local/sbin/epilog-demo
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(node, root, SlurmCluster, timings) with the demo scripts in the node."""
    timings = {}
    start = time.monotonic()
    with own_rack(tmp_path_factory.mktemp("slurm-node-rack"), nodes=1) as inv:
        node = rack.load_nodes(inv)[0]
        timings["rack up"] = time.monotonic() - start
        timings["install"] = slurm_node.install_slurm(node)
        root = node.root()
        for name, text in (("hc-demo", HEALTH), ("prolog-demo", PROLOG), ("epilog-demo", EPILOG)):
            script = root / "usr/local/sbin" / name
            script.write_text(text)
            script.chmod(0o755)
        start = time.monotonic()
        with slurm_node.slurm_in_nodes(tmp_path_factory.mktemp("slurm-node"), [node], CONF) as slurm:
            timings["until idle"] = time.monotonic() - start
            yield node, root, slurm, timings
            print(f"\ntimings: {timings}")


def wait(what, timeout_s):
    """Poll ``what()`` until it returns something true; return (value, seconds waited)."""
    start = time.monotonic()
    while True:
        value = what()
        if value or time.monotonic() - start > timeout_s:
            return value, time.monotonic() - start
        time.sleep(0.2)


def idle(slurm):
    """node01 back to plain IDLE: a resume leaves it IDLE+NOT_RESPONDING until slurmctld's next ping answers."""
    state, took = wait(lambda: (s := slurm.node("node01")).words == {"IDLE"} and s, 10)
    assert state, slurm.node("node01")
    return took


def sbatch(slurm, command):
    """Submit ``command`` as a batch job (as root, from this machine); its id. Its output goes to the node's /tmp."""
    submit = subprocess.run(["sbatch", "--parsable", "--chdir=/tmp", "--output=/tmp/job-%j.out", "--wrap", command],
                            capture_output=True, text=True, timeout=30, env={**os.environ, **slurm.env})
    assert submit.returncode == 0, submit.stderr
    return submit.stdout.strip()


def job(slurm, job_id):
    line = slurm.scontrol("show", "job", "-o", job_id).stdout.strip()
    return dict(re.findall(r"(\w+)=(\S*)", line)), line


def test_scontrol_inside_the_node_reaches_slurmctld(demo):
    node, _, slurm, timings = demo
    shown = slurm_node.in_node(node, "sh", "-c", 'scontrol show node -o "$(hostname)"')
    assert shown.returncode == 0 and shown.stdout.startswith("NodeName=node01 "), shown.stderr
    assert " NodeHostName=node01 " in shown.stdout and f" NodeAddr={node.address} " in shown.stdout
    drain = slurm_node.in_node(node, "sh", "-c", 'scontrol update nodename="$(hostname)" state=drain reason=test')
    assert drain.returncode == 0, drain.stderr
    assert slurm.node("node01").words == {"IDLE", "DRAIN"} and slurm.node("node01").reason == "test"
    assert slurm.scontrol("update", "nodename=node01", "state=resume").returncode == 0
    timings["resume until idle"] = idle(slurm)


def test_health_check_in_the_node_drains_and_resumes_it(demo):
    node, root, slurm, timings = demo
    (root / "tmp/bad").touch()
    state, took = wait(lambda: (s := slurm.node("node01")).held() and s, 3 * INTERVAL + 2)
    timings["hc drain"] = took
    assert state and state.words == {"IDLE", "DRAIN"} and state.reason == "demo: node01", slurm.node("node01")
    assert took <= 3 * INTERVAL + 1
    (root / "tmp/bad").unlink()
    state, took = wait(lambda: not (s := slurm.node("node01")).held() and s, 3 * INTERVAL + 2)
    timings["hc resume"] = took
    assert state and state.reason == "", state
    timings["hc resume until idle"] = idle(slurm)
    assert " node01 reason=[demo: node01]" in (root / "tmp/hc-demo.log").read_text()  # it ran in the node


def test_a_batch_job_runs_in_the_node_with_prolog_and_epilog(demo):
    node, root, slurm, timings = demo
    job_id = sbatch(slurm, "hostname; cat /etc/hostname")
    (fields, line), took = wait(lambda: (j := job(slurm, job_id))[0].get("JobState") == "COMPLETED" and j, 15)
    timings["job"] = took
    assert fields["JobState"] == "COMPLETED" and fields["ExitCode"] == "0:0", line
    assert (root / f"tmp/job-{job_id}.out").read_text() == "node01\nnode01\n"  # written in the node
    assert f"prolog job={job_id} host=node01" in (root / "tmp/prolog-demo.log").read_text()
    _, _ = wait(lambda: (root / "tmp/epilog-demo.log").exists(), 5)
    assert f"epilog job={job_id} host=node01" in (root / "tmp/epilog-demo.log").read_text()


def test_a_failing_prolog_drains_the_node_and_requeues_the_job_held(demo):
    node, root, slurm, timings = demo
    (root / "tmp/bad-prolog").touch()
    job_id = sbatch(slurm, "hostname")
    seen, start = [], time.monotonic()  # every change of (node state, reason, job state, job reason), timed
    while time.monotonic() - start < 15:
        state, (fields, line) = slurm.node("node01"), job(slurm, job_id)
        now = (state.state, state.reason, fields.get("JobState"), fields.get("Reason"))
        if not seen or seen[-1][1:] != now:
            seen.append((round(time.monotonic() - start, 1), *now))
        if state.words == {"IDLE", "DRAIN"} and fields.get("JobState") == "PENDING" and fields["Reason"] != "None":
            break
        time.sleep(0.1)
    timings["prolog drain"] = time.monotonic() - start
    print("\nafter the prolog failed (s, node state, node reason, job state, job reason):",
          *seen, f"job: {line}", sep="\n")
    assert state.words == {"IDLE", "DRAIN"} and state.reason == "Prolog error", seen
    assert fields["JobState"] == "PENDING" and fields["Priority"] == "0", line  # held (by the system)
    assert fields["Reason"] == "launch_failed_requeued_held" and fields["Restarts"] == "1", line
    assert f"prolog job={job_id} host=node01" in (root / "tmp/prolog-demo.log").read_text()
    out = root / f"tmp/job-{job_id}.out"
    # slurmd writes the prolog's failure into the job's output file, in the node; the batch script never ran.
    assert out.read_text() == "Error running slurm prolog: 1\n"
    # The health check leaves a drain that is not its own alone.
    time.sleep(INTERVAL + 1)
    assert slurm.node("node01").reason == "Prolog error"
    cancel = subprocess.run(["scancel", job_id], capture_output=True, text=True, timeout=30,
                            env={**os.environ, **slurm.env})
    assert cancel.returncode == 0, cancel.stderr
    (root / "tmp/bad-prolog").unlink()
    assert slurm.scontrol("update", "nodename=node01", "state=resume").returncode == 0
    idle(slurm)
