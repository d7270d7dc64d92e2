"""SSH keys for the simulated rack, made with the ``cryptography`` library (paramiko's own dependency)."""
from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def write_ed25519(path: Path, comment: str) -> str:
    """Write an OpenSSH ed25519 private key at ``path`` (0600) and ``path.pub``; return the public line."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(private)
    path.chmod(0o600)
    line = f"{public.decode()} {comment}"
    path.with_name(path.name + ".pub").write_text(line + "\n")
    return line
