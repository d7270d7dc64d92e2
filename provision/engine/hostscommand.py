"""ssh_config(5) KnownHostsCommand: a command whose output is read as more known_hosts lines.

Run as OpenSSH's sshconnect.c ``load_hostkeys_command`` runs it, once per host key check: the
command line split into words (no shell), each word's ``%`` tokens expanded, the program an
absolute path, its standard output read as known_hosts lines after UserKnownHostsFile and
GlobalKnownHostsFile; and once before the key exchange, to order the host key algorithms (``%I``
ORDER, no key). Its own tokens: ``%H`` the name the key is looked up under, ``%I`` the
invocation (HOSTNAME or ORDER), ``%t`` the key's algorithm name, ``%f`` its SHA256 fingerprint, ``%K`` its
base64 blob; the rest as ssh_config(5) TOKENS (resolved in ``sshconfig.py``). A command that cannot
run, times out or exits non-zero gives no lines (stricter than OpenSSH, which keeps what it printed),
and ``run`` says why, for the refusal.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess

TIMEOUT_S = 30.0


def run(argv: tuple[str, ...], tokens: dict[str, str], key_type: str | None, blob: bytes | None,
        name: str) -> tuple[list[str], str]:
    """(output lines, '' or why there are none). ``key_type`` None: before the key is known, to order
    the host key algorithms (OpenSSH's ``ORDER`` invocation, its key tokens ``NONE``)."""
    if key_type is None or blob is None:
        own = {**tokens, "H": name, "I": "ORDER", "t": "NONE", "f": "NONE", "K": "NONE"}
    else:
        digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
        own = {**tokens, "H": name, "I": "HOSTNAME", "t": key_type, "f": f"SHA256:{digest}",
               "K": base64.b64encode(blob).decode()}
    words = [re.sub(r"%(.)", lambda m: own.get(m.group(1), m.group(0)), w) for w in argv]
    if not words or not os.path.isabs(words[0]):
        return [], f"KnownHostsCommand {' '.join(argv)}: the program must be an absolute path, as OpenSSH requires"
    try:
        done = subprocess.run(words, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"KnownHostsCommand {words[0]} failed: {exc}"
    if done.returncode != 0:
        return [], f"KnownHostsCommand {words[0]} exited {done.returncode}"
    return done.stdout.splitlines(), ""
