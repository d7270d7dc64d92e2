"""The burn-in reaches a host where Ansible would: for each inventory + ssh_config case, what we
resolve equals what ``ssh -G`` prints for the command line Ansible's own ssh connection plugin
builds, and both equal the expected host, port, user, key and jump chain of the table."""
import os
import shutil

import pytest
import yaml

from provision import inventory
from provision.engine import sshconfig
from provision.errors import CommandError
from provision.inventory import sshargs

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client (openssh-client)")

PROFILE = "h100-sxm5-80g-ndr"
SSH_CONFIG = """\
Host gpu-alias
  HostName 127.0.1.7
  User alice
  Port 2200
  IdentityFile /keys/alias_%r
  CertificateFile /keys/alias-cert.pub
  UserKnownHostsFile /kh/alias
Host n3.lab
  HostName 127.0.1.9
  Port 2201
Host node04
  HostName 127.0.9.9
Host hop2
  HostName 127.0.3.2
  User hopper
Host bast
  HostName 127.0.3.1
  ProxyJump outer
Host outer
  HostName 127.0.3.9
  Port 2022
Match host 127.0.1.11 user root
  IdentityFile /keys/matched
Host *
  IdentityAgent none
"""

# name: (host vars, expected: hostname, port, user, first identity file, jump chain as user@host:port)
CASES = {
    "plain": ({"ansible_host": "127.0.1.5", "ansible_port": 2222, "ansible_user": "bob",
               "ansible_ssh_private_key_file": "/keys/k"}, ("127.0.1.5", 2222, "bob", "/keys/k", [])),
    "gpu-alias": ({}, ("127.0.1.7", 2200, "alice", "/keys/alias_alice", [])),
    "by_address": ({"ansible_host": "n3.lab", "ansible_user": "root"}, ("127.0.1.9", 2201, "root", None, [])),
    "node04": ({"ansible_host": "127.0.1.10", "ansible_user": "root"}, ("127.0.1.10", 22, "root", None, [])),
    "port_wins": ({"ansible_host": "n3.lab", "ansible_port": 2300, "ansible_user": "root"},
                  ("127.0.1.9", 2300, "root", None, [])),
    "two_hops": ({"ansible_host": "127.0.1.12", "ansible_user": "root",
                  "ansible_ssh_extra_args": "-J jim@hop1:2201,hop2"},
                 ("127.0.1.12", 22, "root", None, ["jim@hop1:2201", "hopper@127.0.3.2:22"])),
    "nested_jump": ({"ansible_host": "127.0.1.13", "ansible_user": "root",
                     "ansible_ssh_extra_args": "-o ProxyJump=bast"},
                    ("127.0.1.13", 22, "root", None, ["root@127.0.3.9:2022", "root@127.0.3.1:22"])),
    "options": ({"ansible_host": "127.0.1.14", "ansible_ssh_extra_args":
                 "-o IdentityFile=/keys/a -i /keys/b -o User=carl -p 2022 -o CertificateFile=/keys/c"},
                ("127.0.1.14", 2022, "carl", "/keys/a", [])),
    "matched": ({"ansible_host": "127.0.1.11", "ansible_user": "root"},
                ("127.0.1.11", 22, "root", "/keys/matched", [])),
}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inv")
    config = folder / "ssh_config"
    config.write_text(SSH_CONFIG)
    common = f"-F {config} -o UserKnownHostsFile=/kh/main"
    data = {"all": {"vars": {"ansible_ssh_common_args": common, "provision_profile": PROFILE},
                    "hosts": {name: vars_ for name, (vars_, _) in CASES.items()}}}
    (folder / "hosts.yml").write_text(yaml.safe_dump(data))
    inv = inventory.load(folder / "hosts.yml")
    return {h.name: h for h in inv.hosts}, common


def _ansible_command(host_vars: dict, address: str) -> list[str]:
    """The command line ansible-core's ssh connection plugin builds for the host (its private
    ``_build_command``, the one it runs)."""
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import connection_loader

    conn = connection_loader.get("ssh", PlayContext(), None)
    conn.set_options(var_options=host_vars)
    return [a.decode() for a in conn._build_command("ssh", "ssh", address)]


def _hop(t: sshconfig.Target) -> str:
    return f"{t.user}@{t.hostname}:{t.port}"


@pytest.mark.parametrize("name", CASES)
def test_resolved_as_ssh_G_prints_for_ansibles_command(hosts, name):
    by_name, common = hosts
    host = by_name[name]
    vars_, (hostname, port, user, key, chain) = CASES[name]
    target = sshconfig.resolve(host)
    argv = _ansible_command({**vars_, "ansible_ssh_common_args": common}, host.address)
    printed = sshconfig.ask(argv[1:-1], argv[-1])
    assert (target.hostname, target.port, target.user) == (printed["hostname"][0], int(printed["port"][0]),
                                                           printed["user"][0]) == (hostname, port, user)
    # ssh -G prints IdentityFile before its ~ and %r are expanded (at connect time)
    assert [os.path.expanduser(f).replace("%r", user) for f in printed["identityfile"]] == list(target.identity_files)
    if key:
        assert target.identity_files[0] == key
    assert printed.get("proxyjump", [None])[0] == (CASES[name][0].get("ansible_ssh_extra_args", "").split("=")[-1]
                                                  .removeprefix("-J ") if chain else None)
    assert [_hop(h) for h in target.chain()] == chain
    assert target.known_hosts_files[0] == "/kh/main"  # the command line's -o comes before every file
    assert target.identity_agent is None  # IdentityAgent none for every host


def test_hops_resolved_as_ssh_resolves_them(hosts):
    """ssh.c turns ProxyJump a,b into `ssh [-l] [-p] -J a [-F FILE] b`: the last hop's ssh_config applies."""
    by_name, common = hosts
    hop1, hop2 = sshconfig.resolve(by_name["two_hops"]).chain()
    printed = sshconfig.ask(["-l", "jim", "-p", "2201", "-F", common.split()[1]], "hop1")
    assert (hop1.hostname, hop1.port, hop1.user) == ("hop1", 2201, "jim") == (
        printed["hostname"][0], int(printed["port"][0]), printed["user"][0])
    assert hop2.via == hop1 and hop1.via is None


def test_certificate_and_proxy_command(hosts, tmp_path):
    by_name, _ = hosts
    assert sshconfig.resolve(by_name["options"]).certificate_files == ("/keys/c",)
    assert sshconfig.resolve(by_name["gpu-alias"]).certificate_files == ("/keys/alias-cert.pub",)
    host = by_name["plain"]
    proxied = sshconfig.resolve(type(host)(**{**host.__dict__, "ssh_options": (
        *host.ssh_options, "-o", "ProxyCommand=nc %h %p %r")}))
    assert proxied.proxy_command == "nc 127.0.1.5 2222 bob" and proxied.via is None


def test_options_follow_ansibles_order():
    """Ansible's own values come before the args, so (first value wins) ansible_port beats -o Port."""
    opts = sshargs.options({"ansible_port": 2200, "ansible_ssh_common_args": "-o Port=2300 -F /x"})
    assert opts.index("Port=2200") < opts.index("Port=2300") and opts[-2:] == ("-F", "/x")
    assert sshconfig.config_file(opts) == "/x"


def test_a_broken_config_is_one_line_naming_the_host(tmp_path):
    (tmp_path / "bad").write_text("Host x\n  NoSuchOption 1\n")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"n1": {
        "ansible_ssh_common_args": f"-F {tmp_path / 'bad'}", "provision_profile": PROFILE}}}}))
    host = inventory.load(tmp_path / "hosts.yml").hosts[0]
    with pytest.raises(CommandError, match=r"(?i)host n1: OpenSSH cannot resolve n1 .*line 2: Bad configuration "
                                           r"option: nosuchoption"):
        sshconfig.resolve(host)


@pytest.mark.parametrize("spec, parsed", [("h", (None, "h", None)), ("u@h:2", ("u", "h", "2")),
                                          ("ssh://u@[::1]:3", ("u", "::1", "3"))])
def test_parse_hop(spec, parsed):
    assert sshconfig.parse_hop(spec) == parsed


def test_a_proxyjump_loop_is_one_line_naming_the_hops(tmp_path):
    """ssh_config blocks whose ProxyJumps lead back to themselves: OpenSSH would follow them for ever."""
    (tmp_path / "cfg").write_text("Host hop-a\n  HostName 127.9.9.1\n  ProxyJump hop-b\n"
                                  "Host hop-b\n  HostName 127.9.9.2\n  ProxyJump hop-a\n")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"n1": {
        "ansible_host": "127.9.9.3", "ansible_ssh_common_args": f"-F {tmp_path / 'cfg'} -J hop-a",
        "provision_profile": PROFILE}}}}))
    host = inventory.load(tmp_path / "hosts.yml").hosts[0]
    with pytest.raises(CommandError, match=r"^host n1: ProxyJump loop or a chain of more than 16 hops: "
                                           r"hop-a -> hop-b -> hop-a"):
        sshconfig.resolve(host)


def _node(tmp_path, config: str, file: str = "cfg"):
    """A node whose ssh options name ``config`` (a file of its own: resolutions are cached per options)."""
    from types import SimpleNamespace

    (tmp_path / file).write_text(config)
    return SimpleNamespace(name="n1", address="127.0.1.9", ssh_options=("-F", str(tmp_path / file)),
                           known_hosts_file=None)


def test_host_trust_options_are_read_from_ssh_G(tmp_path):
    """RevokedHostKeys (tokens expanded), CASignatureAlgorithms, HostKeyAlgorithms (None while OpenSSH's
    default), RequiredRSASize, and the settings that would trust more, named to be refused as such."""
    target = sshconfig.resolve(_node(tmp_path, "Host *\n  RevokedHostKeys /krl/%h\n  CASignatureAlgorithms ssh-ed25519"
                                               "\n  StrictHostKeyChecking accept-new\n  RequiredRSASize 2048\n"))
    assert target.trust.revoked_host_keys == "/krl/127.0.1.9"
    assert target.trust.ca_signature_algorithms == ("ssh-ed25519",) and target.trust.required_rsa_size == 2048
    assert target.trust.lenient == ("StrictHostKeyChecking accept-new",) and target.host_key_algorithms is None
    explicit = sshconfig.resolve(_node(tmp_path, "Host *\n  HostKeyAlgorithms -ssh-ed25519*\n  Port 2222\n", "cfg2"))
    assert explicit.host_key_algorithms and "ssh-ed25519" not in explicit.host_key_algorithms
    assert explicit.unported_name == "127.0.1.9" and explicit.key_name == "[127.0.1.9]:2222"


@pytest.mark.parametrize("line, option", [("CanonicalizeHostname yes", "CanonicalizeHostname"),
                                          ("CheckHostIP yes\n  HostName node9.invalid", "CheckHostIP")])
def test_trust_options_not_followed_are_refused_naming_them(tmp_path, line, option):
    with pytest.raises(CommandError, match=rf"^host n1: {option} .* is not supported by the burn-in's SSH connection"):
        sshconfig.resolve(_node(tmp_path, f"Host *\n  {line}\n"))
