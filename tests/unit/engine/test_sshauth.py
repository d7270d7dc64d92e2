"""Logging in: a refusal is for good, no answer within paramiko's auth_timeout is a busy node (retried)."""
import paramiko
import pytest

from provision.engine import burnin, sshauth
from provision.engine.sshconfig import Target


def target(key_file):
    return Target(name="node1", hostname="127.0.9.1", port=22, user="root", identity_files=(str(key_file),),
                  certificate_files=(), known_hosts_files=(), host_key_alias=None, identity_agent=None,
                  identities_only=True, proxy_command=None, via=None)


class Transport:
    auth_timeout = 30

    def __init__(self, error):
        self.error, self.tried = error, 0

    def auth_publickey(self, user, key):
        self.tried += 1
        raise self.error

    def is_authenticated(self):
        return False


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "id_ed25519"
    key = paramiko.RSAKey.generate(1024)
    key.write_private_key_file(str(path))
    return path


def test_a_refused_key_is_refused_for_good(key_file):
    with pytest.raises(sshauth.Refused) as refused:
        sshauth.authenticate(Transport(paramiko.AuthenticationException("Authentication failed.")), target(key_file))
    assert f"authentication as root refused (tried: {key_file}" in str(refused.value)
    assert burnin._refused_for_good(str(refused.value))


def test_no_answer_within_the_auth_timeout_is_a_busy_node_retried(key_file):
    transport = Transport(paramiko.AuthenticationException("Authentication timeout."))
    with pytest.raises(paramiko.SSHException) as busy:
        sshauth.authenticate(transport, target(key_file))
    assert not isinstance(busy.value, sshauth.Refused) and transport.tried == 1
    assert str(busy.value) == "no answer to the login as root within 30 s (sshd busy?)"
    assert not burnin._refused_for_good(f"SSH failed: {busy.value}")
