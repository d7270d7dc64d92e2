"""OpenSSH host certificates (PROTOCOL.certkeys in OpenSSH's sources) read on paramiko's primitives:
``parse`` their wire format (``Message``), ``verify`` a CA's signature (``verify_ssh_sig``, plus the
``ssh-rsa`` SHA-1 signature paramiko 5 no longer verifies), ``when`` a validity bound as text.
What a certificate must be to be trusted is ``knownhosts.py``'s."""
from __future__ import annotations

import time
from typing import Any

import paramiko
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CERT_SUFFIX = "-cert-v01@openssh.com"
HOST_CERT = 2  # PROTOCOL.certkeys: SSH2_CERT_TYPE_HOST


def verify(ca_key: paramiko.PKey, data: bytes, signature: bytes) -> bool:
    """The CA's signature over ``data``. paramiko 5 no longer verifies ``ssh-rsa`` (RSA with SHA-1); OpenSSH
    does when CASignatureAlgorithms allows it (checked before this), so it is verified here on the same
    primitive paramiko uses for the SHA-2 ones."""
    m = paramiko.Message(signature)
    if m.get_text() != "ssh-rsa" or not isinstance(ca_key, paramiko.RSAKey):
        return ca_key.verify_ssh_sig(data, paramiko.Message(signature))
    sign, public = m.get_binary(), ca_key.key
    if not isinstance(public, rsa.RSAPublicKey):
        return False
    sign = b"\x00" * max(0, (public.key_size + 7) // 8 - len(sign)) + sign
    try:
        public.verify(sign, data, padding.PKCS1v15(), hashes.SHA1())
    except InvalidSignature:
        return False
    return True


def when(seconds: int) -> str:
    """A certificate time as UTC text (OpenSSH's "forever" is 2**64-1)."""
    if seconds >= 2**63:
        return "forever"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


# The public key fields of each certificate type, after the nonce (PROTOCOL.certkeys).
_KEY_FIELDS = {"ssh-ed25519": ("string",), "ecdsa-sha2-nistp256": ("string", "string"),
               "ecdsa-sha2-nistp384": ("string", "string"), "ecdsa-sha2-nistp521": ("string", "string"),
               "ssh-rsa": ("mpint", "mpint")}


def parse(cert_type: str, blob: bytes) -> dict[str, Any]:
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
