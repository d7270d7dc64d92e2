"""Node locks over real SSH (issue 21, cause 10): a controller holding a 2-node rack's nodes (its own runs
folder, so only the nodes' /run/provision/lock can tell) makes a burn-in refuse with exit 6 naming its run
and the hosts; killed with SIGKILL (no clean-up), its connections drop, sshd closes the keepers' channels,
and the nodes are free again: the next burn-in waits (--wait) and runs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from provision import paths
from tests.integration.conftest import own_rack, provision

HOLD = """
import json, sys
from provision import inventory as inv
from provision.engine import hostlock
from provision.engine.ssh import SshTransport
hosts = inv.load(inv.resolve_all([sys.argv[1]])).gpu_hosts
held = hostlock.Held()
line = json.dumps(hostlock.holder("other-controller", ["burnin"]))
hostlock.mark_nodes(hosts, SshTransport(), line, 0, str, print, held)
print("held", len(held.keepers), flush=True)
sys.stdin.read()
"""


def test_a_burnin_refuses_nodes_another_controller_holds_and_runs_once_it_is_gone(tmp_path) -> None:
    with own_rack(tmp_path / "rack", nodes=2) as rack:
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(rack)], cwd=paths.ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == "held 2\n"  # both nodes' keepers said "locked"
            env = {"PROVISION_RUNS_DIR": str(tmp_path / "runs")}
            refused = provision("burnin", "-i", str(rack), "--checks", "xid", "--run-id", "second", env=env)
            assert refused.returncode == 6, refused.stderr
            last = refused.stderr.strip().splitlines()[-1]
            assert " taken by run other-controller (controller " in last and f"pid {holder.pid}" in last, last
            assert not (tmp_path / "runs" / "second").exists()
            os.kill(holder.pid, signal.SIGKILL)  # no release ran: only the dropped connections free the nodes
            holder.wait()
            ran = provision("burnin", "-i", str(rack), "--checks", "xid", "--run-id", "third", "--wait", "120",
                            env=env)
            assert ran.returncode in (0, 1), ran.stderr
            assert (tmp_path / "runs" / "third" / "report.json").is_file()
        finally:
            if holder.poll() is None:
                holder.kill()
