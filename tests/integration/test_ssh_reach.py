"""Nodes reached as Ansible reaches them, on a simulated rack of 3 nodes in a network of their own
(``hidden_net.py``): node01 is the bastion (``bastion01`` in an ssh_config given with ``-F``, the
only node the controller can reach), node02 and node03 the GPU nodes behind it. One rack serves
every case; the last one takes the bastion down.

Cases: the hidden nodes cannot be reached directly, OpenSSH and the burn-in reach them through the
bastion (one bastion transport for both); a host alias from a ``-F`` file; a changed host key behind
the bastion (refused, naming host, hop and key); a key held only by an ssh-agent (no key file in
the inventory); a CA-signed host key (``@cert-authority``, no plain line for the node); the bastion
down (the burn-in does not pass the hidden nodes: errors naming the hop)."""
import json
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from provision import paths
from provision.engine.ssh import SshTransport
from provision.errors import CommandError
from provision.inventory import Host
from provision.sim import rack
from tests.integration.conftest import own_rack, provision
from tests.integration.hidden_net import Forward, Netns, move_into

pytestmark = pytest.mark.integration
CONFIG = """\
Host bastion01
  HostName {bastion}
Host gpu-alias
  HostName {node03}
  ProxyJump bastion01
Host *
  User root
  {identity}
  UserKnownHostsFile {known}
  StrictHostKeyChecking yes
  KexAlgorithms curve25519-sha256
"""


@dataclass
class Reach:
    inv: Path
    folder: Path
    state: Path
    address: dict
    forward: Forward

    def config(self, name: str, known: str | None = None, identity: str | None = None) -> str:
        """An ssh_config file ``name``: bastion01, gpu-alias, and for every host root with the rack's
        key (no agent) and the rack's known_hosts, unless ``known``/``identity`` say otherwise."""
        path = self.folder / name
        path.write_text(CONFIG.format(
            bastion=self.address["node01"], node03=self.address["node03"], known=known or self.state / "known_hosts",
            identity=identity or f"IdentityFile {self.state / 'id_ed25519'}\n  IdentityAgent none"))
        return str(path)


def host(name: str, address: str, *options: str) -> Host:
    """A GPU node as the inventory gives it, with ``options`` as its ansible_ssh_common_args."""
    return Host(name=name, address=address, port=22, user="root", key_file=None, known_hosts_file=None,
                profile=None, ssh_options=options)


def hostname(transport: SshTransport, h: Host) -> str:
    conn = transport.connect(h)
    try:
        return conn.run(["hostname"], 30).stdout.strip()
    finally:
        conn.close()


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def reach(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reach-files")
    with own_rack(tmp_path_factory.mktemp("reach"), nodes=3) as inv:
        state = rack.state_dir(inv)
        address = {n.name: n.address for n in rack.load_nodes(inv)}
        # node03's sshd also presents a host certificate signed by a CA of the test's own
        ssh = state / "nodes/node03/upper/etc/ssh"
        subprocess.run(["ssh-keygen", "-q", "-s", str(keygen(folder / "ca")), "-I", "node03", "-h", "-n",
                        f"node03,{address['node03']}", str(ssh / "ssh_host_ed25519_key.pub")], check=True)
        (ssh / "sshd_config.d/cert.conf").write_text("HostCertificate /etc/ssh/ssh_host_ed25519_key-cert.pub\n")
        # node02's sshd trusts user certificates of another CA of the test's own
        shutil.copy(keygen(folder / "user_ca").with_suffix(".pub"), state / "nodes/node02/upper/etc/ssh/user_ca.pub")
        (state / "nodes/node02/upper/etc/ssh/sshd_config.d/user_ca.conf").write_text(
            "TrustedUserCAKeys /etc/ssh/user_ca.pub\n")
        with Netns(f"prov-reach-{os.getpid()}") as netns:
            move_into(inv, ["node01", "node02", "node03"], netns)
            forward = Forward(netns, address["node01"])
            try:
                r = Reach(inv, folder, state, address, forward)
                behind = f"-F {r.config('ssh_config')} -o ProxyJump=bastion01"
                (inv / "host_vars").mkdir()
                for name in ("node02", "node03"):
                    (inv / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump({"ansible_ssh_common_args": behind}))
                yield r
            finally:
                forward.close()


def test_hidden_nodes_are_reached_only_through_the_bastion(reach):
    for name in ("node02", "node03"):
        with pytest.raises(OSError):
            socket.create_connection((reach.address[name], 22), timeout=2).close()
    config = reach.config("ssh_config")
    # OpenSSH itself (so Ansible) reaches node02 through the bastion with these options
    ssh = subprocess.run(["ssh", "-F", config, "-o", "ProxyJump=bastion01", "-o", "BatchMode=yes",
                          reach.address["node02"], "hostname"], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert ssh.stdout.strip() == "node02", ssh.stderr
    transport = SshTransport()
    conns = [transport.connect(host(n, reach.address[n], "-F", config, "-o", "ProxyJump=bastion01"))
             for n in ("node02", "node03")]
    try:
        assert [c.run(["hostname"], 30).stdout.strip() for c in conns] == ["node02", "node03"]
        shared = [s for same in transport.links._shared.values() for s in same]
        assert [(s.users, s.link.transport.getpeername()[0]) for s in shared] == [(2, reach.address["node01"])]
    finally:
        for c in conns:
            c.close()
    assert not [s for same in transport.links._shared.values() for s in same]  # the last node closed it


def test_burnin_passes_through_the_bastion(reach):
    run_id = f"reach-{os.getpid()}"
    proc = provision("burnin", "-i", str(reach.inv), "--limit", "node02,node03", "--scope", "node",
                     "--checks", "xid", "--run-id", run_id)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads((paths.RUNS / run_id / "report.json").read_text())
    assert report["verdicts"] == {"node02": "pass", "node03": "pass"}


def test_alias_from_an_F_file(reach):
    assert hostname(SshTransport(), host("gpu-alias", "gpu-alias", "-F", reach.config("ssh_config"))) == "node03"


def test_changed_host_key_behind_the_bastion_is_refused_and_named(reach):
    other = keygen(reach.folder / "impostor")
    lines = (reach.state / "known_hosts").read_text().splitlines()
    pub = (reach.folder / "impostor.pub").read_text().split()[:2]
    changed = reach.folder / "known_hosts.changed"
    changed.write_text("\n".join(" ".join([line.split()[0], *pub]) if line.startswith("node02,") else line
                                 for line in lines) + "\n")
    config = reach.config("ssh_config.changed", known=str(changed))
    assert other.exists()
    with pytest.raises(CommandError) as refused:
        SshTransport().connect(host("node02", reach.address["node02"], "-F", config, "-o", "ProxyJump=bastion01"))
    a1, a2 = reach.address["node01"], reach.address["node02"]
    assert str(refused.value).startswith(f"host node02 ({a2}:22) via bastion01 ({a1}:22): host key for {a2} "
                                         f"does not match known_hosts ({changed}:2)"), str(refused.value)


def test_key_held_only_by_an_agent(reach):
    sock = reach.folder / "agent.sock"
    started = subprocess.run(["ssh-agent", "-a", str(sock)], capture_output=True, text=True, check=True)
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        key = reach.folder / "agent_key"
        shutil.copy(reach.state / "id_ed25519", key)
        key.chmod(0o600)
        subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)
        key.unlink()  # the agent alone holds it now
        config = reach.config("ssh_config.agent", identity=f"IdentityAgent {sock}\n  IdentityFile {key}")
        node = host("node02", reach.address["node02"], "-F", config, "-o", "ProxyJump=bastion01")
        with pytest.raises(CommandError, match="authentication as root refused"):  # no key file, the agent has it
            hostname(SshTransport(), host("node02", reach.address["node02"], "-F", config, "-o",
                                          "ProxyJump=bastion01", "-o", "IdentityAgent=none"))
        assert hostname(SshTransport(), node) == "node02"
    finally:
        os.kill(pid, 15)


def test_ca_signed_host_key(reach):
    bastion_line = next(line for line in (reach.state / "known_hosts").read_text().splitlines()
                        if line.startswith("node01,"))
    ca_pub = " ".join((reach.folder / "ca.pub").read_text().split()[:2])
    known = reach.folder / "known_hosts.ca"
    known.write_text(f"{bastion_line}\n@cert-authority node0*,127.* {ca_pub}\n")
    transport = SshTransport()
    conn = transport.connect(host("node03", reach.address["node03"], "-F", reach.config("ssh_config.ca", str(known)),
                                  "-o", "ProxyJump=bastion01"))
    try:
        assert conn.link.transport.get_remote_server_key().public_blob.key_type == "ssh-ed25519-cert-v01@openssh.com"
        assert conn.run(["hostname"], 30).stdout.strip() == "node03"
    finally:
        conn.close()
    other = " ".join((keygen(reach.folder / "other_ca").with_suffix(".pub")).read_text().split()[:2])
    known.write_text(f"{bastion_line}\n@cert-authority * {other}\n")
    with pytest.raises(CommandError, match=r"host node03 .* via bastion01 .*: host certificate for .* is signed by "
                                           r"a CA that no @cert-authority line"):
        transport.connect(host("node03", reach.address["node03"], "-F", reach.config("ssh_config.ca", str(known)),
                               "-o", "ProxyJump=bastion01"))


def test_proxy_command(reach):
    """OpenSSH's own ``ssh -W`` through the bastion as a ProxyCommand."""
    config = reach.config("ssh_config")
    command = f"ProxyCommand=ssh -F {config} -W %h:%p bastion01"
    node = host("node03", reach.address["node03"], "-F", config, "-o", command)
    assert hostname(SshTransport(), node) == "node03"


def test_user_certificate(reach):
    """A key no authorized_keys lists, signed by the CA node02's sshd trusts: in with its certificate only."""
    key = keygen(reach.folder / "certified")
    subprocess.run(["ssh-keygen", "-q", "-s", str(reach.folder / "user_ca"), "-I", "operator", "-n", "root",
                    f"{key}.pub"], check=True)
    cert = reach.folder / "elsewhere-cert.pub"
    (reach.folder / "certified-cert.pub").rename(cert)
    config = reach.folder / "ssh_config.cert"
    config.write_text(f"Host bastion01\n  HostName {reach.address['node01']}\n"
                      f"  IdentityFile {reach.state / 'id_ed25519'}\n"
                      f"Host *\n  User root\n  IdentityAgent none\n  IdentitiesOnly yes\n  IdentityFile {key}\n"
                      f"  UserKnownHostsFile {reach.state / 'known_hosts'}\n  KexAlgorithms curve25519-sha256\n")
    args = ("-F", str(config), "-o", "ProxyJump=bastion01")
    with pytest.raises(CommandError, match="authentication as root refused"):  # the key alone is not enough
        hostname(SshTransport(), host("node02", reach.address["node02"], *args))
    assert hostname(SshTransport(), host("node02", reach.address["node02"], *args, "-o",
                                         f"CertificateFile={cert}")) == "node02"


def test_bastion_down_the_hidden_nodes_are_errors_naming_it(reach):
    """Last: it takes the bastion off the network."""
    reach.forward.close()
    a1 = reach.address["node01"]
    with pytest.raises(CommandError, match=rf"host node02: jump host bastion01 \({a1}:22\): cannot connect"):
        SshTransport().connect(host("node02", reach.address["node02"], "-F", reach.config("ssh_config"),
                                    "-o", "ProxyJump=bastion01"))
    run_id = f"reach-down-{os.getpid()}"
    proc = provision("burnin", "-i", str(reach.inv), "--limit", "node02,node03", "--scope", "node",
                     "--checks", "xid", "--run-id", run_id)
    assert proc.returncode != 0
    report = json.loads((paths.RUNS / run_id / "report.json").read_text())
    assert set(report["verdicts"].values()) == {"error"}, report["verdicts"]
    assert "jump host bastion01" in proc.stdout + proc.stderr
