"""Bench: what reaching a node costs the controller, through a bastion and directly.

Prints figures, never passes or fails. Starts a rack of ``--rack`` nodes (default 4); node01 is
the bastion (``bastion01`` in an ssh_config given with ``-F``). Then, with ``--threads`` threads:

- resolve: ``ssh -G`` for ``--nodes`` distinct hosts (what ``sshconfig.resolve`` asks once per node);
- via bastion: ``--nodes`` connections (authenticated, one ``true`` run on each) to the other
  nodes in turn, through node01, with ``SshTransport`` (jump host transports shared);
- direct: the same connections without the bastion.

Per phase: wall seconds, controller CPU seconds per node (this process and its children), and the
bastion transports opened. The rack shares this machine's network (every node is also reachable
directly); ``tests/integration/test_ssh_reach.py`` is where nodes are hidden behind the bastion.
"""
from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from provision.engine import sshconfig  # noqa: E402
from provision.engine.ssh import SshTransport  # noqa: E402
from provision.errors import CommandError  # noqa: E402
from provision.inventory import Host  # noqa: E402
from provision.sim import rack  # noqa: E402


def cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def phase(name: str, nodes: int, work, threads: int) -> None:
    wall0, cpu0 = time.monotonic(), cpu_s()
    with ThreadPoolExecutor(threads) as pool:
        said = [s for s in pool.map(work, range(nodes)) if isinstance(s, str)]
    wall, cpu = time.monotonic() - wall0, cpu_s() - cpu0
    failed = [s for s in said if s.startswith("failed")]
    print(f"{name:12s} {nodes:5d} nodes  wall {wall:6.2f} s  CPU {cpu / nodes * 1000:6.1f} ms/node  "
          f"{len(failed)} failed {failed[:1]}; " + "; ".join(sorted(set(s for s in said if s not in failed))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rack", type=int, default=4)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--address-base", default="127.0.77.10")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "rack"
        shutil.copytree(ROOT / "inventory/sim/group_vars", folder / "group_vars")
        up = subprocess.run([sys.executable, "-m", "provision", "sim", "up", "--nodes", str(args.rack),
                             "--inventory", str(folder), "--address-base", args.address_base], cwd=ROOT)
        if up.returncode != 0:
            sys.exit("sim up failed")
        try:
            run(folder, Path(tmp), args)
        finally:
            subprocess.run([sys.executable, "-m", "provision", "sim", "down", "--inventory", str(folder)], cwd=ROOT)


def run(folder: Path, tmp: Path, args) -> None:
    state, nodes = rack.state_dir(folder), rack.load_nodes(folder)
    config = tmp / "ssh_config"
    config.write_text(f"Host bastion01\n  HostName {nodes[0].address}\nHost *\n  User root\n"
                      f"  IdentityFile {state / 'id_ed25519'}\n  IdentityAgent none\n"
                      f"  UserKnownHostsFile {state / 'known_hosts'}\n  KexAlgorithms curve25519-sha256\n")
    behind = nodes[1:]

    def host(i: int, *jump: str) -> Host:
        node = behind[i % len(behind)]
        return Host(name=f"n{i}", address=node.address, port=22, user="root", key_file=None, known_hosts_file=None,
                    profile=None, ssh_options=("-F", str(config), *jump))

    phase("resolve", args.nodes, lambda i: sshconfig.ask(("-F", str(config)), f"127.0.250.{i % 250}"), args.threads)
    for name, jump in (("via bastion", ("-o", "ProxyJump=bastion01")), ("direct", ())):
        transport = SshTransport()

        def connect(i: int, transport=transport, jump=jump) -> str:
            try:
                conn = transport.connect(host(i, *jump))
                rc = conn.run(["true"], 30).rc
            except CommandError as exc:
                return f"failed: {exc}"
            opened = sum(len(v) for v in transport.links._shared.values())
            conn.close()
            return f"rc {rc}, bastion transports open: {opened}" if jump else f"rc {rc}"
        phase(name, args.nodes, connect, args.threads)


if __name__ == "__main__":
    main()
