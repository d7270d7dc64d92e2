"""Host keys checked as OpenSSH checks them, strictly: known_hosts lines, ``@cert-authority``
host certificates and ``@revoked`` keys (sshd(8) SSH_KNOWN_HOSTS FILE FORMAT).

paramiko reads plain known_hosts lines only (no markers, no host patterns) and does not verify
OpenSSH host certificates, so this module does, on paramiko's primitives: ``PKey`` for the
keys, ``Message`` for the certificate's wire format (PROTOCOL.certkeys in OpenSSH's sources),
``verify_ssh_sig`` for the CA's signature. A host certificate is accepted as OpenSSH's
sshconnect.c ``check_host_cert`` accepts it: a host certificate (type 2), signed by a CA
that an ``@cert-authority`` line trusts for the host's name, valid now, listing the name among
its principals (or listing none), with no critical options. When no CA line matches, the plain
key inside is checked instead, as OpenSSH retries with the plain key. ``check`` raises
``HostKeyRefused`` with what was refused; there is no "accept new key": an unknown key is refused.
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

CERT_SUFFIX = "-cert-v01@openssh.com"
HOST_CERT = 2  # PROTOCOL.certkeys: SSH2_CERT_TYPE_HOST


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
            for number, line in enumerate(f, 1):
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
                entries.append(Entry(marker, fields[0], fields[1], blob, f"{path}:{number}"))
    except OSError:
        pass
    _cache[path] = ((mtime_ns, size), entries)
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


def preferred_types(name: str, files: tuple[str, ...]) -> tuple[str, ...]:
    """Host key algorithms to ask for first: certificates when a CA is trusted for ``name``, then
    the types known_hosts holds for it (OpenSSH orders HostKeyAlgorithms the same way)."""
    entries = matching(name, files)
    first = []
    if any(e.marker == "@cert-authority" for e in entries):
        first += [f"{t}{CERT_SUFFIX}" for t in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                                 "ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256")]
    for e in entries:
        if not e.marker:
            first += ["rsa-sha2-512", "rsa-sha2-256"] if e.key_type == "ssh-rsa" else [e.key_type]
    return tuple(dict.fromkeys(first))


def check(key: paramiko.PKey, name: str, principal: str, files: tuple[str, ...]) -> None:
    """Accept ``key`` (as the server presented it) for ``name`` or raise HostKeyRefused."""
    entries = matching(name, files)
    blob = key.public_blob
    plain_type, plain = key.get_name(), key.asbytes()
    for e in entries:
        if e.marker == "@revoked" and e.blob == plain:
            raise HostKeyRefused(f"host key for {name} is revoked ({e.where})")
    cas = [e for e in entries if e.marker == "@cert-authority"]
    if blob is not None and blob.key_type.endswith(CERT_SUFFIX) and cas:
        _check_cert(blob.key_type, blob.key_blob, name, principal, cas, entries)
        return
    known = [e for e in entries if not e.marker]
    if any(e.key_type == plain_type and e.blob == plain for e in known):
        return
    same = [e.where for e in known if e.key_type == plain_type]
    where = ", ".join(files)
    if same:
        raise HostKeyRefused(f"host key for {name} does not match known_hosts ({', '.join(same)}): "
                             f"{plain_type} {key.fingerprint}")
    ca_note = "; a CA is trusted for it but the host presented no certificate" if cas else ""
    raise HostKeyRefused(f"no {plain_type} host key for {name} in known_hosts ({where}){ca_note}; "
                         f"the host offered {plain_type} {key.fingerprint}")


def _check_cert(cert_type: str, blob: bytes, name: str, principal: str, cas: list[Entry], entries: list[Entry]) -> None:
    try:
        cert = _parse_cert(cert_type, blob)
    except (paramiko.SSHException, ValueError, TypeError, IndexError) as exc:
        raise HostKeyRefused(f"host certificate for {name} cannot be read: {exc}") from None
    what = f"host certificate for {name} (key id {cert['key_id']!r}, serial {cert['serial']})"
    ca = next((e for e in cas if e.blob == cert["ca"]), None)
    if ca is None:
        raise HostKeyRefused(f"{what} is signed by a CA that no @cert-authority line for {name} trusts")
    if any(e.marker == "@revoked" and e.blob == cert["ca"] for e in entries):
        raise HostKeyRefused(f"{what}: its CA is revoked")
    try:
        ca_key = paramiko.PKey.from_type_string(ca.key_type, ca.blob)
        signed = ca_key.verify_ssh_sig(cert["signed"], paramiko.Message(cert["signature"]))
    except (paramiko.SSHException, ValueError, TypeError) as exc:
        raise HostKeyRefused(f"{what}: CA key {ca.where} cannot verify it: {exc}") from None
    if not signed:
        raise HostKeyRefused(f"{what}: the CA's signature does not verify ({ca.where})")
    if cert["type"] != HOST_CERT:
        raise HostKeyRefused(f"{what} is a user certificate, not a host certificate")
    now = time.time()
    if not cert["valid_after"] <= now < cert["valid_before"]:
        raise HostKeyRefused(f"{what} is not valid now (valid {cert['valid_after']} to {cert['valid_before']}, "
                             f"seconds since the epoch)")
    if cert["principals"] and principal not in cert["principals"]:
        raise HostKeyRefused(f"{what} does not name {principal} (principals: {', '.join(cert['principals'])})")
    if cert["critical"]:
        raise HostKeyRefused(f"{what} carries critical options, which no host certificate may")


# The public key fields of each certificate type, after the nonce (PROTOCOL.certkeys).
_KEY_FIELDS = {"ssh-ed25519": ("string",), "ecdsa-sha2-nistp256": ("string", "string"),
               "ecdsa-sha2-nistp384": ("string", "string"), "ecdsa-sha2-nistp521": ("string", "string"),
               "ssh-rsa": ("mpint", "mpint")}


def _parse_cert(cert_type: str, blob: bytes) -> dict[str, Any]:
    m = paramiko.Message(blob)
    if m.get_text() != cert_type:
        raise ValueError(f"type is not {cert_type}")
    fields = _KEY_FIELDS.get(cert_type.removesuffix(CERT_SUFFIX))
    if fields is None:
        raise ValueError(f"certificate type {cert_type} is not supported")
    m.get_string()  # nonce
    for kind in fields:
        m.get_mpint() if kind == "mpint" else m.get_string()
    cert: dict[str, Any] = {"serial": m.get_int64(), "type": m.get_int(), "key_id": m.get_text()}
    principals = paramiko.Message(m.get_string())
    cert["principals"] = []
    while principals.get_remainder():
        cert["principals"].append(principals.get_text())
    cert["valid_after"], cert["valid_before"] = m.get_int64(), m.get_int64()
    cert["critical"] = m.get_string()
    m.get_string()  # extensions
    m.get_string()  # reserved
    cert["ca"] = m.get_string()
    cert["signed"] = blob[:m.packet.tell()]
    cert["signature"] = m.get_string()
    return cert
