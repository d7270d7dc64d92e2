"""The rack's certificate authority and each BMC's certificate (the ``cryptography`` package's X.509 builder).

A real BMC ships a self-signed certificate that sites replace with one of their CA's; the simulated rack plays the
site: its CA (``bmc/ca.pem`` in the state folder) signs every BMC's certificate, whose subject alternative name is
the BMC's IP address (RFC 6125: a client checks an IP reference identity against an iPAddress SAN), so clients verify
TLS with ``provision_bmc_ca_file``. ``expired`` certificates serve the ``bmc_cert_expired`` fault.
"""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_DAYS = 3650
CERT_DAYS = 397  # the CA/Browser Forum's longest TLS certificate life
EXPIRED_DAYS_AGO = 30


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ensure_ca(folder: Path) -> tuple[Path, Path]:
    """The rack CA's (certificate, key) files in ``folder``, made once."""
    cert_path, key_path = folder / "ca.pem", folder / "ca.key"
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "provision-sim rack BMC CA")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(key, hashes.SHA256()))
    key_path.write_bytes(_pem_key(key))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def issue(folder: Path, name: str, address: str, expired: bool = False) -> tuple[Path, Path]:
    """A certificate for the BMC at ``address`` signed by the CA in ``folder``: (cert, key) files named after
    ``name``; ``expired`` makes one whose validity ended ``EXPIRED_DAYS_AGO`` days ago."""
    ca_cert_path, ca_key_path = ensure_ca(folder)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    end = _now() - datetime.timedelta(days=EXPIRED_DAYS_AGO) if expired else _now() + datetime.timedelta(
        days=CERT_DAYS)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(end - datetime.timedelta(days=CERT_DAYS)).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    suffix = "-expired" if expired else ""
    cert_path, key_path = folder / f"{name}{suffix}.pem", folder / f"{name}{suffix}.key"
    key_path.write_bytes(_pem_key(key))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
