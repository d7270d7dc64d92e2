"""ssh_config(5) RevokedHostKeys: host keys refused whatever known_hosts says, read as OpenSSH reads them.

The file is either a list of public keys, one a line, or a binary Key Revocation List (KRL, made
by ``ssh-keygen -k``). A list is read here: a listed key revokes the same key, and a listed key
that signed a host certificate revokes the certificate (OpenSSH's ``sshkey_in_file`` with
``check_ca``). A KRL is asked of OpenSSH itself, ``ssh-keygen -Q -f KRL KEYFILE``: its serial,
key id and hash sections are OpenSSH's format to read, not ours. A file that is missing or
unreadable refuses every host, as OpenSSH refuses them ("fails closed"). A listed plain key also
revokes a certificate made for that key, as OpenSSH 9.2 does (measured: tests/data/ssh_differential).
"""
from __future__ import annotations

import base64
import binascii
import os
import subprocess
import tempfile

from provision import external
from provision.errors import MissingProgramError

KRL_MAGIC = b"SSHKRL\n\0"
KEYGEN_TIMEOUT_S = 30.0


class Revoked(Exception):
    """The host key (or its certificate's CA) is revoked, or the list cannot be read; the text says which."""


def check(key_type: str, blob: bytes, plain: bytes, ca: bytes | None, path: str) -> None:
    """Raise Revoked when ``path`` revokes the presented key: ``key_type``/``blob`` as presented (a
    certificate or a plain key), ``plain`` its plain public key, ``ca`` its certificate's CA (or None)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise Revoked(f"RevokedHostKeys {path} cannot be read ({exc.strerror or exc}): OpenSSH refuses "
                      "every host then, and so does the burn-in") from None
    if data.startswith(KRL_MAGIC):
        _check_krl(key_type, blob, path)
        return
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#") or len(fields) < 2:
            continue
        try:
            listed = base64.b64decode(fields[1], validate=True)
        except (binascii.Error, ValueError):
            continue  # OpenSSH skips a line it cannot read
        if listed in (blob, plain):
            raise Revoked(f"host key {key_type.removesuffix('-cert-v01@openssh.com')} is revoked by {path}:{number}")
        if ca is not None and listed == ca:
            raise Revoked(f"the CA that signed the host certificate is revoked by {path}:{number}")


def _check_krl(key_type: str, blob: bytes, path: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".pub") as pub:
        pub.write(f"{key_type} {base64.b64encode(blob).decode()}\n")
        pub.flush()
        try:
            done = external.run(["ssh-keygen", "-Q", "-f", path, pub.name], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=KEYGEN_TIMEOUT_S, check=False)
        except (MissingProgramError, subprocess.TimeoutExpired) as exc:
            raise Revoked(f"RevokedHostKeys {path} (a KRL) cannot be checked: {exc}") from None
    said = (done.stdout + done.stderr).replace(pub.name, "the host key").strip()
    if "REVOKED" in done.stdout:
        raise Revoked(f"host key {key_type} is revoked by the KRL {path}")
    if done.returncode != 0 or ": ok" not in done.stdout:
        raise Revoked(f"RevokedHostKeys {os.path.abspath(path)} (a KRL) cannot be read: {said[:300]}")
