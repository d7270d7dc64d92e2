"""Public key login on a paramiko transport, as OpenSSH logs in (ssh_config(5) IdentityFile,
CertificateFile, IdentityAgent, IdentitiesOnly).

``authenticate(transport, target)`` tries, in order: each IdentityFile that exists, first with
each certificate that matches it (CertificateFile, else ``<key>-cert.pub``, loaded with
paramiko's ``load_certificate``), then plain; the agent's copy of an IdentityFile whose private
key is absent but whose ``.pub`` is there; then, unless IdentitiesOnly, the agent's other keys.
The agent is ``IdentityAgent`` (a socket path) else ``$SSH_AUTH_SOCK`` (``sshconfig.py``).
A passphrase-protected or unreadable key is skipped, as ssh in batch mode skips it. Raises
``Refused`` naming the user, the keys tried, the identity files and the agent.
"""
from __future__ import annotations

import os
import socket

import paramiko
from paramiko.agent import AgentSSH
from paramiko.pkey import PublicBlob

from provision.engine.sshconfig import Target

AGENT_TIMEOUT_S = 15.0


class Refused(Exception):
    """No key was accepted; the text says which were tried."""


def authenticate(transport: paramiko.Transport, target: Target) -> None:
    """Log in with public keys in OpenSSH's order (``_keys``). Raises Refused when no key is
    accepted, and paramiko.SSHException when sshd gives no answer within paramiko's ``auth_timeout``
    (30 s): a busy node, which the burn-in retries, not a refusal, which it does not."""
    agent = _agent(target.identity_agent)
    tried = []
    try:
        for label, key in _keys(target, agent.get_keys() if agent else ()):
            try:
                transport.auth_publickey(target.user, key)
            except paramiko.AuthenticationException as exc:
                if "timeout" in str(exc).lower():  # paramiko's auth_timeout: no answer, not a refusal
                    raise paramiko.SSHException(f"no answer to the login as {target.user} within "
                                                f"{transport.auth_timeout:g} s (sshd busy?)") from None
                tried.append(label)
                continue
            if transport.is_authenticated():
                return
    finally:
        if agent is not None:
            agent.close()
    files = ", ".join(target.identity_files) or "none"
    raise Refused(f"authentication as {target.user} refused (tried: {', '.join(tried) or 'no key'}; "
                  f"identity files: {files}; agent: {target.identity_agent or 'none'})")


def _keys(target: Target, agent_keys):
    """(label, key) in OpenSSH's order: identity files (certificate first, then the plain key; the
    agent's copy of a key whose file is absent but whose .pub is there), then the agent's keys."""
    by_blob = {k.asbytes(): k for k in agent_keys}
    used = set()
    for path in target.identity_files:
        key = _load(path)
        if key is not None:
            yield from _certified(path, target.certificate_files)
            used.add(key.asbytes())
            yield path, key
            continue
        blob = _public_blob(f"{path}.pub")
        if blob in by_blob:
            used.add(blob)
            yield f"{path} (agent)", by_blob[blob]
    if not target.identities_only:
        for blob, key in by_blob.items():
            if blob not in used:
                yield f"agent key {key.get_name()} {key.fingerprint}", key


def _certified(path: str, certificate_files: tuple[str, ...]):
    """The key at ``path`` with each certificate that matches it (CertificateFile, ``<key>-cert.pub``)."""
    for cert in (*certificate_files, f"{path}-cert.pub"):
        key = _load(path)
        try:
            if key is not None and os.path.exists(cert):
                key.load_certificate(cert)
                yield f"{path} with {cert}", key
        except (ValueError, OSError, paramiko.SSHException):
            pass  # a certificate of another key


def _public_blob(path: str) -> bytes | None:
    try:
        return PublicBlob.from_file(path).key_blob if os.path.isfile(path) else None
    except (ValueError, OSError):
        return None


def _load(path: str):
    if not os.path.isfile(path):
        return None
    try:
        return paramiko.PKey.from_path(path)
    except (paramiko.SSHException, ValueError, OSError):
        return None  # unreadable, passphrase-protected or not a key: OpenSSH in batch mode skips it too


class _SocketAgent(paramiko.Agent):
    """An ssh-agent at a given socket path (paramiko's Agent reads only $SSH_AUTH_SOCK)."""

    def __init__(self, path: str):
        AgentSSH.__init__(self)  # not Agent's own, which connects to $SSH_AUTH_SOCK
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(AGENT_TIMEOUT_S)
        sock.connect(path)
        self._connect(sock)  # type: ignore[attr-defined]


def _agent(path: str | None) -> paramiko.Agent | None:
    if not path:
        return None
    try:
        return _SocketAgent(path)
    except (OSError, paramiko.SSHException):
        return None  # OpenSSH goes on without an agent it cannot reach
