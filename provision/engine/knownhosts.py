"""Host keys checked as OpenSSH checks them, strictly: known_hosts lines, ``@cert-authority``
host certificates and ``@revoked`` keys (sshd(8) SSH_KNOWN_HOSTS FILE FORMAT).

paramiko reads plain known_hosts lines only (no markers, no host patterns) and does not verify
OpenSSH host certificates, so this module does (the certificate format: ``hostcert.py``). In
OpenSSH's order (sshconnect.c ``verify_host_key``, ``check_host_key``): RequiredRSASize,
RevokedHostKeys (``revocation.py``), ``@revoked`` (the key or its certificate's CA, no fallback),
then a certificate as ``check_host_cert`` accepts it: a host certificate (type 2), signed by a CA
that an ``@cert-authority`` line trusts for the host's name with a signature algorithm that
CASignatureAlgorithms allows, valid now, listing the name among its principals (or listing none),
with no critical options. A certificate that fails any of these is dropped and its plain key
checked as a plain key (OpenSSH's fallback), and a key unknown under ``[host]:port`` is looked for
again under the plain host name (OpenSSH 8.5+). ``check`` raises ``HostKeyRefused`` saying in words
what failed; there is no "accept new key": an unknown key is refused whatever StrictHostKeyChecking
says, and the refusal names the setting not followed (``Policy.lenient``).
"""
from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
import re
import time
from dataclasses import dataclass
from typing import Any

import paramiko

from provision.engine import hostcert, hostscommand, revocation
from provision.engine.hostcert import CERT_SUFFIX, HOST_CERT


class HostKeyRefused(Exception):
    """A host key or certificate that known_hosts does not vouch for; the text says why."""


@dataclass(frozen=True)
class Entry:
    """One known_hosts line: ``marker`` is '', '@cert-authority' or '@revoked'; ``where`` file:line."""

    marker: str
    patterns: str
    key_type: str
    blob: bytes
    where: str

    def matches(self, name: str) -> bool:
        return matches(self.patterns, name)


def load(files: tuple[str, ...]) -> list[Entry]:
    """Every readable line of ``files`` (a missing file is skipped, as OpenSSH skips it)."""
    return [e for f in files for e in _load_file(os.path.abspath(f), *_stamp(f))]


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, -1)
    return (st.st_mtime_ns, st.st_size)


_cache: dict[str, tuple[tuple[int, int], list[Entry]]] = {}
# Per file (as cached above): {lower-case literal name: [line positions]} for lines whose patterns are
# plain names, and the positions of the rest (wildcards, negations, hashed names), checked one by one.
_index: dict[str, tuple[list[Entry], dict[str, list[int]], list[int]]] = {}


def matching(name: str, files: tuple[str, ...]) -> list[Entry]:
    """The lines of ``files`` whose patterns match ``name`` (``matches``), in file and line order.

    A cluster's known_hosts holds a line per node: scanning it for every node was quadratic, and each
    line's patterns became a regular expression compiled again once ``re``'s cache of 512 was full (at
    1,024 nodes most of the controller's CPU went there, measured with py-spy). Plain names are looked
    up in a dict built once per file; only wildcard, negated and hashed lines are matched one by one."""
    out = []
    for f in files:
        path = os.path.abspath(f)
        entries = _load_file(path, *_stamp(f))  # the cached list itself while the file is unchanged
        cached = _index.get(path)
        if cached is None or cached[0] is not entries:
            exact: dict[str, list[int]] = {}
            rest = []
            for i, e in enumerate(entries):
                parts = e.patterns.lower().split(",")
                if e.patterns.startswith("|") or any(c in e.patterns for c in "*?!"):
                    rest.append(i)
                else:
                    for part in dict.fromkeys(parts):
                        exact.setdefault(part, []).append(i)
            cached = _index[path] = (entries, exact, rest)
        positions = set(cached[1].get(name.lower(), ()))
        positions.update(i for i in cached[2] if entries[i].matches(name))
        out += [entries[i] for i in sorted(positions)]
    return out


def _load_file(path: str, mtime_ns: int, size: int) -> list[Entry]:
    cached = _cache.get(path)
    if cached and cached[0] == (mtime_ns, size):
        return cached[1]
    entries = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            entries = _parse(f, path)
    except OSError:
        pass
    _cache[path] = ((mtime_ns, size), entries)
    return entries


def _parse(lines, source: str) -> list[Entry]:
    entries = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else ""
        if len(fields) < 3:
            continue
        try:
            blob = base64.b64decode(fields[2], validate=True)
        except (binascii.Error, ValueError):
            continue  # OpenSSH skips a line it cannot read, too
        if blob[4:4 + int.from_bytes(blob[:4], "big")] != fields[1].encode():
            continue  # not a key of the type it names (KnownHostsCommand's "NONE", a damaged line)
        entries.append(Entry(marker, fields[0], fields[1], blob, f"{source}:{number}"))
    return entries


def matches(patterns: str, name: str) -> bool:
    """OpenSSH's match_hostname: comma-separated patterns with ``*`` and ``?``, ``!`` negates,
    or one hashed ``|1|salt|hash`` name; case-insensitive."""
    if patterns.startswith("|1|"):
        try:
            salt, digest = (base64.b64decode(p) for p in patterns[3:].split("|", 1))
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)
    found = False
    for pattern in patterns.lower().split(","):
        if _compiled(pattern.lstrip("!")).fullmatch(name.lower()):
            if pattern.startswith("!"):
                return False
            found = True
    return found


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern:
    """A known_hosts pattern (``*``, ``?``) as a regular expression, compiled once."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def preferred_types(name: str, files: tuple[str, ...], policy: Policy | None = None) -> tuple[str, ...]:
    """Host key algorithms to ask for first: certificates when a CA is trusted for ``name``, then
    the types known_hosts holds for it (OpenSSH orders HostKeyAlgorithms the same way), KnownHostsCommand's
    lines included (its ORDER run; one that fails refuses the host, as it ends OpenSSH's connection)."""
    entries = matching(name, files)
    if policy is not None and policy.known_hosts_command:
        lines, failed = hostscommand.run(policy.known_hosts_command, dict(policy.tokens), None, None, name)
        if failed:
            raise HostKeyRefused(failed)
        entries += [e for e in _parse(lines, "KnownHostsCommand") if e.matches(name)]
    first = []
    if any(e.marker == "@cert-authority" for e in entries):
        first += [f"{t}{CERT_SUFFIX}" for t in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                                 "ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256")]
    for e in entries:
        if not e.marker:
            first += ["rsa-sha2-512", "rsa-sha2-256"] if e.key_type == "ssh-rsa" else [e.key_type]
    return tuple(dict.fromkeys(first))


@dataclass(frozen=True)
class Policy:
    """What ``ssh -G`` says about trust beyond known_hosts (``sshconfig.py``): RevokedHostKeys (a path or
    None), CASignatureAlgorithms (None: any), RequiredRSASize in bits, and ``lenient``: settings that
    would make OpenSSH trust more than known_hosts, which the burn-in does not follow (always strict),
    named in its refusals so that they are never silently ignored."""

    revoked_host_keys: str | None = None
    ca_signature_algorithms: tuple[str, ...] | None = None
    required_rsa_size: int = 1024
    lenient: tuple[str, ...] = ()
    known_hosts_command: tuple[str, ...] = ()  # its words, tokens unexpanded (hostscommand.py)
    tokens: tuple[tuple[str, str], ...] = ()  # ssh_config(5) TOKENS for it


STRICT = Policy()


class _Unknown(HostKeyRefused):
    """No line vouches for the key and none holds another key of its type (OpenSSH's HOST_NEW)."""


def check(key: paramiko.PKey, name: str, principal: str, files: tuple[str, ...], policy: Policy = STRICT,
          unported: str | None = None) -> None:
    """Accept ``key`` (as the server presented it) for ``name`` or raise HostKeyRefused.

    In OpenSSH's order (sshconnect.c ``verify_host_key``, ``check_host_key``): RequiredRSASize, then
    RevokedHostKeys, then ``@revoked`` (the key, or its certificate's CA: no fallback), then the
    certificate against its CA lines; a certificate that fails any check there is dropped and its plain
    key checked as a plain key is, and the refusal then gives both reasons. ``unported``: the host's name
    without its ``[host]:port`` form, checked again when no line knows the key under that form (OpenSSH
    8.5 and later: "checking without port identifier"; not when HostKeyAlias is set)."""
    try:
        try:
            _check(key, name, principal, files, policy)
        except _Unknown as exc:
            if not unported:
                raise
            try:
                _check(key, unported, principal, files, policy)
            except HostKeyRefused as again:
                raise HostKeyRefused(f"{exc}; without the port: {again}") from None
    except HostKeyRefused as exc:
        if policy.lenient:
            raise HostKeyRefused(f"{exc} (not followed, the burn-in is always strict: "
                                 f"{', '.join(policy.lenient)})") from None
        raise


def _check(key: paramiko.PKey, name: str, principal: str, files: tuple[str, ...], policy: Policy) -> None:
    plain_type, plain = key.get_name(), key.asbytes()
    if plain_type == "ssh-rsa" and key.get_bits() < policy.required_rsa_size:
        raise HostKeyRefused(f"the RSA host key of {name} has {key.get_bits()} bits, fewer than RequiredRSASize "
                             f"{policy.required_rsa_size}")
    blob = key.public_blob
    is_cert = blob is not None and blob.key_type.endswith(CERT_SUFFIX)
    cert_type, cert_blob = (blob.key_type, blob.key_blob) if blob and is_cert else ("", b"")
    cert = None
    if cert_type:
        try:
            cert = hostcert.parse(cert_type, cert_blob)
        except (paramiko.SSHException, ValueError, TypeError, IndexError) as exc:
            raise HostKeyRefused(f"host certificate for {name} cannot be read: {exc}") from None
    if policy.revoked_host_keys:
        try:
            revocation.check(cert_type or plain_type, cert_blob or plain, plain, cert["ca"] if cert else None,
                             policy.revoked_host_keys)
        except revocation.Revoked as exc:
            raise HostKeyRefused(f"{name}: {exc}") from None
    entries = matching(name, files)
    command_note = ""
    if policy.known_hosts_command:
        lines, command_note = hostscommand.run(policy.known_hosts_command, dict(policy.tokens),
                                               cert_type or plain_type, cert_blob or plain, name)
        entries += [e for e in _parse(lines, "KnownHostsCommand") if e.matches(name)]
        files = (*files, "KnownHostsCommand")
    _check_marked(plain, cert, name, entries)
    cas = [e for e in entries if e.marker == "@cert-authority"]
    cert_failed = ""
    if cert is not None and cas:
        try:
            _check_cert(cert_type, cert_blob, name, principal, cas, entries, policy)
            return
        except HostKeyRefused as exc:  # OpenSSH drops the certificate and retries the plain key
            cert_failed = f"{exc}; and as a plain key: "
    ca_note = "; a CA is trusted for it but the host presented no certificate" if cas and cert is None else ""
    _check_plain(key, name, files, entries, cert_failed, ca_note + (f"; {command_note}" if command_note else ""))


def _check_marked(plain: bytes, cert: dict[str, Any] | None, name: str, entries: list[Entry]) -> None:
    """``@revoked``: the key, or its certificate's CA (OpenSSH's HOST_REVOKED: no fallback to the plain key)."""
    for e in entries:
        if e.marker == "@revoked" and e.blob == plain:
            raise HostKeyRefused(f"host key for {name} is revoked ({e.where})")
        if e.marker == "@revoked" and cert and e.blob == cert["ca"]:
            raise HostKeyRefused(f"host certificate for {name}: its CA is revoked ({e.where})")


def _check_plain(key: paramiko.PKey, name: str, files: tuple[str, ...], entries: list[Entry], before: str,
                 after: str) -> None:
    plain_type, plain = key.get_name(), key.asbytes()
    known = [e for e in entries if not e.marker]
    if any(e.key_type == plain_type and e.blob == plain for e in known):
        return
    same = [e.where for e in known if e.key_type == plain_type]
    if same:
        raise HostKeyRefused(f"{before}host key for {name} does not match known_hosts ({', '.join(same)}): "
                             f"{plain_type} {key.fingerprint}")
    raise _Unknown(f"{before}no {plain_type} host key for {name} in known_hosts ({', '.join(files) or 'none'})"
                   f"{after}; the host offered {plain_type} {key.fingerprint}")


def _check_cert(cert_type: str, blob: bytes, name: str, principal: str, cas: list[Entry], entries: list[Entry],
                policy: Policy = STRICT) -> None:
    try:
        cert = hostcert.parse(cert_type, blob)
    except (paramiko.SSHException, ValueError, TypeError, IndexError) as exc:
        raise HostKeyRefused(f"host certificate for {name} cannot be read: {exc}") from None
    what = f"host certificate for {name} (key id {cert['key_id']!r}, serial {cert['serial']})"
    ca = next((e for e in cas if e.blob == cert["ca"]), None)
    if ca is None:
        raise HostKeyRefused(f"{what} is signed by a CA that no @cert-authority line for {name} trusts")
    if any(e.marker == "@revoked" and e.blob == cert["ca"] for e in entries):
        raise HostKeyRefused(f"{what}: its CA is revoked")
    if cert["type"] != HOST_CERT:
        raise HostKeyRefused(f"{what} is a user certificate, not a host certificate")
    _check_signature(what, ca, cert, policy)
    now = time.time()
    if now < cert["valid_after"]:
        raise HostKeyRefused(f"{what} is not valid before {hostcert.when(cert['valid_after'])}")
    if now >= cert["valid_before"]:
        raise HostKeyRefused(f"{what} expired on {hostcert.when(cert['valid_before'])}")
    if cert["principals"] and principal not in cert["principals"]:
        raise HostKeyRefused(f"{what} does not name {principal} (principals: {', '.join(cert['principals'])})")
    if cert["critical"]:
        raise HostKeyRefused(f"{what} carries critical options, which no host certificate may")


def _check_signature(what: str, ca: Entry, cert: dict[str, Any], policy: Policy) -> None:
    """CASignatureAlgorithms, then the CA's signature itself."""
    algorithm = paramiko.Message(cert["signature"]).get_text()
    if policy.ca_signature_algorithms is not None and algorithm not in policy.ca_signature_algorithms:
        raise HostKeyRefused(f"{what}: CA signature algorithm {algorithm} not allowed by CASignatureAlgorithms "
                             f"({','.join(policy.ca_signature_algorithms)})")
    try:
        ca_key = paramiko.PKey.from_type_string(ca.key_type, ca.blob)
        signed = hostcert.verify(ca_key, cert["signed"], cert["signature"])
    except (paramiko.SSHException, ValueError, TypeError) as exc:
        raise HostKeyRefused(f"{what}: CA key {ca.where} cannot verify it: {exc}") from None
    if not signed:
        raise HostKeyRefused(f"{what}: the CA's signature does not verify ({ca.where})")
