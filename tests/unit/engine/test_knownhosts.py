"""known_hosts as OpenSSH reads it: host patterns, hashed names, @revoked, and OpenSSH host
certificates made by ssh-keygen (a CA, ``-h``, principals, validity) checked on paramiko's primitives."""
import base64
import hashlib
import hmac
import shutil
import subprocess

import paramiko
import pytest

from provision.engine import knownhosts
from provision.engine.knownhosts import HostKeyRefused

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")


def _keygen(path, *args):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path), *args], check=True)
    return path


def _sign(ca, key, *args):
    subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "node-cert", *args, f"{key}.pub"], check=True,
                   capture_output=True)
    host_key = paramiko.PKey.from_path(key)
    host_key.load_certificate(f"{key}-cert.pub")
    return host_key


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    return {n: _keygen(d / n) for n in ("ca", "other_ca", "host", "changed")}


def _pub(path):
    return (path.parent / f"{path.name}.pub").read_text().split()[:2]


def _known(tmp_path, *lines):
    f = tmp_path / "known_hosts"
    f.write_text("\n".join(lines) + "\n")
    return (str(f),)


def test_plain_key_accepted_changed_key_refused_naming_the_line(tmp_path, keys):
    files = _known(tmp_path, "node01,127.0.1.1 " + " ".join(_pub(keys["host"])))
    knownhosts.check(paramiko.PKey.from_path(keys["host"]), "127.0.1.1", "127.0.1.1", files)
    with pytest.raises(HostKeyRefused, match=r"host key for 127.0.1.1 does not match known_hosts \(.*known_hosts:1\)"):
        knownhosts.check(paramiko.PKey.from_path(keys["changed"]), "127.0.1.1", "127.0.1.1", files)
    with pytest.raises(HostKeyRefused, match=r"no ssh-ed25519 host key for 127.0.1.2 in known_hosts"):
        knownhosts.check(paramiko.PKey.from_path(keys["host"]), "127.0.1.2", "127.0.1.2", files)


def test_revoked_key_refused(tmp_path, keys):
    t, b64 = _pub(keys["host"])
    files = _known(tmp_path, f"127.0.1.1 {t} {b64}", f"@revoked * {t} {b64}")
    with pytest.raises(HostKeyRefused, match="revoked"):
        knownhosts.check(paramiko.PKey.from_path(keys["host"]), "127.0.1.1", "127.0.1.1", files)


@pytest.mark.parametrize("patterns, name, found", [
    ("node*,!node13", "node12", True), ("node*,!node13", "node13", False),
    ("[127.0.1.5]:2222", "[127.0.1.5]:2222", True),
    ("127.0.1.5", "[127.0.1.5]:2222", False), ("NODE0?", "node07", True), ("*.lab", "x.lab.evil", False)])
def test_patterns(patterns, name, found):
    assert knownhosts.matches(patterns, name) is found


def test_hashed_name():
    salt = b"0123456789abcdef0123"
    digest = hmac.new(salt, b"127.0.1.1", hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    assert knownhosts.matches(hashed, "127.0.1.1") and not knownhosts.matches(hashed, "127.0.1.2")


def test_host_certificate(tmp_path, keys):
    """Accepted only as OpenSSH's check_host_cert accepts it; the plain host key is in no line."""
    files = _known(tmp_path, "@cert-authority 127.0.1.* " + " ".join(_pub(keys["ca"])))
    good = _sign(keys["ca"], keys["host"], "-h", "-n", "node01,127.0.1.1")
    assert knownhosts.preferred_types("127.0.1.1", files)[0] == "ssh-ed25519-cert-v01@openssh.com"
    knownhosts.check(good, "127.0.1.1", "127.0.1.1", files)
    with pytest.raises(HostKeyRefused, match=r"does not name 127.0.1.9 \(principals: node01, 127.0.1.1\)"):
        knownhosts.check(good, "127.0.1.9", "127.0.1.9", files)
    refusals = {"expired on 2020-01-02 00:00:00 UTC": ("-h", "-n", "127.0.1.1", "-V", "20200101:20200102"),
                "not valid before 2999-01-01": ("-h", "-n", "127.0.1.1", "-V", "29990101:29990102"),
                "a user certificate": ("-n", "127.0.1.1"),
                "critical options": ("-h", "-n", "127.0.1.1", "-O", "force-command=/bin/true")}
    for why, args in refusals.items():
        with pytest.raises(HostKeyRefused, match=why):
            knownhosts.check(_sign(keys["ca"], keys["host"], *args), "127.0.1.1", "127.0.1.1", files)
    with pytest.raises(HostKeyRefused, match="signed by a CA that no @cert-authority line"):
        other = _sign(keys["other_ca"], keys["host"], "-h", "-n", "127.0.1.1")
        knownhosts.check(other, "127.0.1.1", "127.0.1.1", files)


def test_forged_certificate_signature_refused(tmp_path, keys):
    files = _known(tmp_path, "@cert-authority * " + " ".join(_pub(keys["ca"])))
    cert = _sign(keys["ca"], keys["host"], "-h", "-n", "127.0.1.1")
    blob = bytearray(cert.public_blob.key_blob)
    blob[-5] ^= 1  # inside the CA's signature
    with pytest.raises(HostKeyRefused, match="signature does not verify|cannot verify"):
        knownhosts._check_cert(cert.public_blob.key_type, bytes(blob), "127.0.1.1", "127.0.1.1",
                               [e for e in knownhosts.load(files)], knownhosts.load(files))


def test_certificate_without_a_ca_line_falls_back_to_the_plain_key(tmp_path, keys):
    """OpenSSH retries a certificate no CA vouches for as its plain key."""
    cert = _sign(keys["ca"], keys["host"], "-h", "-n", "127.0.1.1")
    knownhosts.check(cert, "127.0.1.1", "127.0.1.1", _known(tmp_path, "127.0.1.1 " + " ".join(_pub(keys["host"]))))


def test_a_failing_certificate_falls_back_to_a_pinned_plain_key(tmp_path, keys):
    """OpenSSH drops a certificate that fails a check (expired, another CA, a refused CA signature
    algorithm) and accepts its plain key when known_hosts pins it; a CA @revoked has no fallback."""
    ca, plain = " ".join(_pub(keys["ca"])), " ".join(_pub(keys["host"]))
    files = _known(tmp_path, f"@cert-authority 127.0.1.* {ca}", f"127.0.1.1 {plain}")
    expired = _sign(keys["ca"], keys["host"], "-h", "-n", "127.0.1.1", "-V", "20200101:20200102")
    knownhosts.check(expired, "127.0.1.1", "127.0.1.1", files)
    policy = knownhosts.Policy(ca_signature_algorithms=("rsa-sha2-512",))
    good = _sign(keys["ca"], keys["host"], "-h", "-n", "127.0.1.2")
    with pytest.raises(HostKeyRefused, match="CA signature algorithm ssh-ed25519 not allowed by CASignatureAlgorithms"):
        knownhosts.check(good, "127.0.1.2", "127.0.1.2", files, policy)
    knownhosts.check(good, "127.0.1.1", "127.0.1.1", files, policy)  # pinned: the plain key is accepted
    revoked = _known(tmp_path, f"@cert-authority 127.0.1.* {ca}", f"127.0.1.1 {plain}", f"@revoked * {ca}")
    with pytest.raises(HostKeyRefused, match="its CA is revoked"):
        knownhosts.check(expired, "127.0.1.1", "127.0.1.1", revoked)


def test_revoked_host_keys_file_list_krl_and_unreadable(tmp_path, keys):
    """RevokedHostKeys: a list (the key, or the CA of its certificate, naming FILE:LINE), a KRL (asked of
    ssh-keygen -Q), and a missing file, which refuses every host (OpenSSH fails closed)."""
    files = _known(tmp_path, "127.0.1.1 " + " ".join(_pub(keys["host"])))
    listed = tmp_path / "revoked"
    listed.write_text("# revoked\n" + " ".join(_pub(keys["host"])) + "\n")
    host = paramiko.PKey.from_path(keys["host"])
    with pytest.raises(HostKeyRefused, match=f"revoked by {listed}:2"):
        knownhosts.check(host, "127.0.1.1", "127.0.1.1", files, knownhosts.Policy(revoked_host_keys=str(listed)))
    krl = tmp_path / "krl"
    subprocess.run(["ssh-keygen", "-q", "-k", "-f", str(krl), f"{keys['host']}.pub"], check=True)
    with pytest.raises(HostKeyRefused, match="revoked by the KRL"):
        knownhosts.check(host, "127.0.1.1", "127.0.1.1", files, knownhosts.Policy(revoked_host_keys=str(krl)))
    other = paramiko.PKey.from_path(keys["changed"])
    with pytest.raises(HostKeyRefused, match="does not match"):  # the KRL passes it; known_hosts refuses it
        knownhosts.check(other, "127.0.1.1", "127.0.1.1", files, knownhosts.Policy(revoked_host_keys=str(krl)))
    with pytest.raises(HostKeyRefused, match="cannot be read .*refuses every host"):
        knownhosts.check(host, "127.0.1.1", "127.0.1.1", files,
                         knownhosts.Policy(revoked_host_keys=str(tmp_path / "no")))
    ca_listed = tmp_path / "ca-revoked"
    ca_listed.write_text(" ".join(_pub(keys["ca"])) + "\n")
    cert = _sign(keys["ca"], keys["host"], "-h", "-n", "127.0.1.1")
    with pytest.raises(HostKeyRefused, match="CA that signed the host certificate is revoked"):
        knownhosts.check(cert, "127.0.1.1", "127.0.1.1", files, knownhosts.Policy(revoked_host_keys=str(ca_listed)))


def test_matching_lines_are_those_each_line_s_patterns_match(tmp_path):
    """knownhosts.matching (a dict for plain names, one by one for the rest) finds exactly the lines
    that matches() finds, in file order, for plain, listed, wildcard, negated, bracketed and hashed names."""
    import base64
    import hashlib
    import hmac

    salt = b"0123456789abcdefghij"
    hashed = "|1|%s|%s" % (base64.b64encode(salt).decode(),
                           base64.b64encode(hmac.new(salt, b"node7", hashlib.sha1).digest()).decode())
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    lines = ["node1 ssh-ed25519 " + blob, "Node2,node3 ssh-ed25519 " + blob, "node* ssh-ed25519 " + blob,
             "*,!node5 ssh-ed25519 " + blob, "[127.0.0.9]:2222 ssh-ed25519 " + blob, hashed + " ssh-ed25519 " + blob,
             "@cert-authority node? ssh-ed25519 " + blob, "@revoked node3 ssh-ed25519 " + blob,
             "node1 ssh-ed25519 " + blob]
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("\n".join(lines[:5]) + "\n")
    second.write_text("\n".join(lines[5:]) + "\n")
    files = (str(first), str(second))
    for name in ("node1", "NODE2", "node3", "node5", "node7", "node12", "[127.0.0.9]:2222", "other", "node"):
        expected = [e for e in knownhosts.load(files) if e.matches(name)]
        assert knownhosts.matching(name, files) == expected, name
    assert [e.where[-1] for e in knownhosts.matching("node3", files)] == ["2", "3", "4", "2", "3"]


def test_plain_names_are_looked_up_not_scanned(tmp_path, monkeypatch):
    """A known_hosts of 2,000 nodes: finding one node's line matches no other line's patterns."""
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    path = tmp_path / "known_hosts"
    path.write_text("".join(f"node{i:04d} ssh-ed25519 {blob}\n" for i in range(2000)))
    calls = []
    real = knownhosts.matches
    monkeypatch.setattr(knownhosts, "matches", lambda patterns, name: calls.append(patterns) or real(patterns, name))
    [found] = knownhosts.matching("node1234", (str(path),))
    assert found.patterns == "node1234" and calls == []
    built = knownhosts._index[str(path)]
    assert knownhosts.matching("node0007", (str(path),))[0].patterns == "node0007"
    assert knownhosts._index[str(path)] is built  # the index is built once per file, not once per node


def test_known_hosts_command_lines_follow_the_files(tmp_path, keys):
    """KnownHostsCommand: no shell, tokens per word (%H name, %t type, %K key), read as known_hosts lines;
    its ORDER run (no key) orders the algorithms; a command that fails refuses, saying so."""
    files = _known(tmp_path, "# nothing")
    host = paramiko.PKey.from_path(keys["changed"])  # never signed: no certificate beside it
    echo = knownhosts.Policy(known_hosts_command=("/bin/echo", "%H", "%t", "%K"))
    knownhosts.check(host, "127.0.1.1", "127.0.1.1", files, echo)
    assert knownhosts.preferred_types("127.0.1.1", files, echo) == ()  # ORDER: "127.0.1.1 NONE NONE"
    failing = knownhosts.Policy(known_hosts_command=("/bin/false",))
    with pytest.raises(HostKeyRefused, match="KnownHostsCommand /bin/false exited 1"):
        knownhosts.check(host, "127.0.1.1", "127.0.1.1", files, failing)
    with pytest.raises(HostKeyRefused, match="must be an absolute path"):
        knownhosts.preferred_types("127.0.1.1", files, knownhosts.Policy(known_hosts_command=("echo", "x")))
