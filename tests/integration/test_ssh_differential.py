"""The burn-in's host trust against OpenSSH's own, case by case (``tests/data/ssh_differential/corpus.yaml``).

For each case: an ssh_config, known_hosts files, a RevokedHostKeys list or KRL, and an sshd of the test's
own presenting a key or certificate (one sshd per distinct key set, each on its own 127.x address, shared
by every case). OpenSSH's verdict is ``ssh -F CFG -o BatchMode=yes HOST true`` (an authorized client key,
so a trusted host key means success); the burn-in's is its connect path (``SshConnection``) with the same
options. They must agree, except where a case names a documented difference (``differs``). OpenSSH's
version is printed in the test's output. Needs root and the simulated rack's base root (``make sim-base``),
whose sshd it runs."""
import base64
import hashlib
import hmac
import os
import re
import shutil
import socket
import string
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from provision import paths
from provision.engine.ssh import SshConnection
from provision.engine.sshlink import Links
from provision.errors import CommandError
from provision.sim import base
from tests.conftest import free_address_base

pytestmark = pytest.mark.integration
CORPUS = yaml.safe_load((paths.ROOT / "tests/data/ssh_differential/corpus.yaml").read_text())
KEYS = {"host": "ed25519", "other": "ed25519", "ca": "ed25519", "ca_rsa": "rsa", "ecdsa": "ecdsa", "rsa": "rsa",
        "rsa1024": "rsa:1024", "client": "ed25519"}
COMMON = """\
Host *
  User root
  IdentityFile $dir/client
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $case/known_hosts
  GlobalKnownHostsFile $case/global
  KexAlgorithms curve25519-sha256
  BatchMode yes
  ConnectTimeout 5
  ControlMaster no
  PasswordAuthentication no
  KbdInteractiveAuthentication no
  LogLevel ERROR
"""
SSHD = """\
{listen}
{host_keys}
{cert}
AuthorizedKeysFile {dir}/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile none
LogLevel ERROR
MaxStartups 100:30:200
"""


def _sshd(lib: Path) -> tuple[list[str], dict]:
    """The sshd to run and its environment: the simulated nodes' own (the base root's, as the rack's nodes
    run it; the controller needs no openssh-server), with the one library the controller lacks (libwrap,
    linked from the base into ``lib``) and, in a mount namespace of its own, the base's users (sshd's
    privilege separation user)."""
    root = base.base_path()
    sshd = root / "usr/sbin/sshd"
    if not sshd.exists():
        pytest.skip("no simulated rack base root (make sim-base): its sshd is the nodes' sshd")
    lib.mkdir()
    for wrap in (root / "usr/lib/x86_64-linux-gnu").glob("libwrap.so*"):
        (lib / wrap.name).symlink_to(wrap)
    users = f"mount --bind {root}/etc/passwd /etc/passwd && mount --bind {root}/etc/group /etc/group && exec \"$@\""
    return (["unshare", "--mount", "--propagation", "private", "sh", "-c", users, "sshd", str(sshd)],
            {**os.environ, "LD_LIBRARY_PATH": str(lib)})


def _keygen(path: Path, kind: str) -> None:
    """``kind``: a key type, ``rsa:BITS`` for an RSA key of that size (2048 by default: quicker than 3072)."""
    kind, _, bits = kind.partition(":")
    size = ["-b", bits or "2048"] if kind == "rsa" else []
    subprocess.run(["ssh-keygen", "-q", "-t", kind, *size, "-N", "", "-C", "", "-f", str(path)], check=True)


def _sign(lab, server_dir: Path, spec: dict, values: dict) -> Path:
    """A certificate of the host key in ``server_dir``, as the server's ``cert`` spec says."""
    shutil.copy(lab / "host.pub", server_dir / "host.pub")
    argv = ["ssh-keygen", "-q", "-s", str(lab / spec["ca"]), "-I", spec.get("id", "node"), "-h",
            "-z", str(spec.get("serial", 1))]
    if "principals" in spec:
        argv += ["-n", string.Template(spec["principals"]).substitute(values)]
    if "validity" in spec:
        argv += ["-V", spec["validity"]]
    if "sigtype" in spec:
        argv += ["-t", spec["sigtype"]]
    for option in spec.get("options", ()):
        argv += ["-O", option]
    subprocess.run([*argv, str(server_dir / "host.pub")], check=True, capture_output=True)
    return server_dir / "host-cert.pub"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, request):
    """Keys, one sshd per server of the corpus, and the values cases are written with."""
    if os.geteuid() != 0 or shutil.which("ssh") is None:
        pytest.skip("needs root and OpenSSH's client")
    d = tmp_path_factory.mktemp("lab")
    sshd, env = _sshd(d / "lib")
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    version = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    differ = sum("differs" in c for c in CORPUS["cases"])
    _say(request, f"ssh differential corpus: {len(CORPUS['cases'])} cases against {version} "
                  f"({differ} documented differences)")
    for name, kind in KEYS.items():
        _keygen(d / name, kind)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    servers = CORPUS["servers"]
    first = free_address_base(len(servers)).rsplit(".", 1)
    values = {name: f"{first[0]}.{int(first[1]) + i}" for i, name in enumerate(servers)}
    values.update({f"k_{name}": " ".join((d / f"{name}.pub").read_text().split()[:2]) for name in KEYS})
    values["fp_host"] = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(d / "host.pub")],
                                       capture_output=True, text=True, check=True).stdout.split()[1]
    salt = os.urandom(20)
    digest = hmac.new(salt, values["plain"].encode(), hashlib.sha1).digest()
    values["hashed_plain"] = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    values["dir"], values["openssh"] = str(d), version
    procs = []
    try:
        for name, spec in servers.items():
            sd = d / f"sshd-{name}"
            sd.mkdir()
            cert = f"HostCertificate {_sign(d, sd, spec['cert'], values)}" if "cert" in spec else ""
            listen = "\n".join(f"ListenAddress {values[name]}:{p}" for p in spec.get("ports", [22]))
            (sd / "sshd_config").write_text(SSHD.format(
                listen=listen, cert=cert, dir=d, host_keys="\n".join(f"HostKey {d / k}" for k in spec["keys"])))
            procs.append(subprocess.Popen([*sshd, "-D", "-e", "-f", str(sd / "sshd_config")], env=env,
                                          stdin=subprocess.DEVNULL, stderr=open(sd / "log", "w")))
        for name, spec in servers.items():
            _wait_listening(values[name], spec.get("ports", [22]), d / f"sshd-{name}" / "log")
        yield d, values
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def _say(request, line: str) -> None:
    """A line in the test run's output, not captured (OpenSSH's version is part of the result)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:  # an xdist worker: the version is in each case's properties
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


def _wait_listening(address: str, ports: list[int], log: Path) -> None:
    for port in ports:
        until = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((address, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < until, f"sshd on {address}:{port} did not start: {log.read_text()[-500:]}"
                time.sleep(0.05)


def _write_case(case: dict, lab_dir: Path, values: dict, folder: Path) -> tuple[list[str], str]:
    """The case's files in ``folder``; (options for ssh, the host argument)."""
    values = {**values, "case": str(folder)}
    sub = string.Template

    def lines(items) -> str:
        return "".join(sub(line).substitute(values) + "\n" for line in items)

    for name in ("known", "global", "other"):
        (folder / {"known": "known_hosts"}.get(name, name)).write_text(lines(case.get(name, [])))
    (folder / "empty").write_text("")
    for name, items in case.get("named", {}).items():
        (folder / sub(name).substitute(values)).write_text(lines(items))
    if "revoked" in case:
        (folder / "revoked").write_text(lines(case["revoked"]))
    if "krl" in case:
        _krl(case["krl"], lab_dir, values, folder)
    if "include" in case:
        (folder / "included").write_text(sub(case["include"]).substitute(values))
    config = folder / "ssh_config"
    config.write_text(sub(case.get("config", "") + COMMON).substitute(values))
    args = [sub(a).substitute(values) for a in case.get("args", [])]
    return ["-F", str(config), *args], sub(case.get("host", f"${case['server']}")).substitute(values)


def _krl(specs: list[dict], lab_dir: Path, values: dict, folder: Path) -> None:
    argv = ["ssh-keygen", "-q", "-k", "-f", str(folder / "revoked")]
    inputs = []
    for i, spec in enumerate(specs):
        if "ca" in spec:
            argv += ["-s", str(lab_dir / f"{spec['ca']}.pub")]
        inputs += [str(lab_dir / f"{k}.pub") for k in spec.get("keys", ())]
        if "spec" in spec:
            (folder / f"krl-spec-{i}").write_text(string.Template(spec["spec"]).substitute(values) + "\n")
            inputs.append(str(folder / f"krl-spec-{i}"))
    subprocess.run([*argv, *inputs], check=True, capture_output=True)


def _openssh(options: list[str], host: str, debug: bool = False) -> tuple[bool, str]:
    verbose = ["-o", "LogLevel=DEBUG1"] if debug else []
    done = subprocess.run(["ssh", *verbose, *options, "-o", "BatchMode=yes", host, "true"],
                          capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30)
    return done.returncode == 0, done.stderr.strip()


def _burnin(options: list[str], host: str, case_id: str) -> tuple[bool, str]:
    node = SimpleNamespace(name=case_id, address=host, ssh_options=tuple(options), known_hosts_file=None,
                           port=22, user="root", key_file=None)
    try:
        SshConnection(node, Links()).close()
    except CommandError as exc:
        return False, str(exc)
    return True, ""


@pytest.mark.parametrize("case", CORPUS["cases"], ids=[c["id"] for c in CORPUS["cases"]])
def test_the_burn_in_trusts_what_openssh_trusts(lab, case, tmp_path, record_property):
    lab_dir, values = lab
    record_property("openssh", values["openssh"])
    options, host = _write_case(case, lab_dir, values, tmp_path)
    burnin, refusal = _burnin(options, host, case["id"])  # first: OpenSSH may write known_hosts (accept-new)
    openssh, said = _openssh(options, host)
    if openssh != (case["expect"] == "accept"):
        pytest.fail(f"OpenSSH's verdict is not the case's own: {_openssh(options, host, debug=True)[1][-3000:]}")
    if "differs" in case:
        assert burnin != openssh, f"documented difference ({case['differs']}) no longer holds"
    else:
        assert burnin == openssh, f"OpenSSH {'accepts' if openssh else 'refuses'} ({said}); the burn-in: {refusal}"
    if "says" in case:
        assert refusal and re.search(case["says"], refusal), refusal
