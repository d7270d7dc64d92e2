"""Helpers for the BMC client's tests: a BmcConfig with a password file of the owner's only."""
from __future__ import annotations

import pytest

from provision.bmc.config import BmcConfig

PASSWORD = "planted-bmc-password-6502"


@pytest.fixture
def password_file(tmp_path):
    path = tmp_path / "bmc-password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def bmc_config(password_file):
    def make(**overrides) -> BmcConfig:
        fields = dict(host="node01", address="127.0.0.1", protocol="redfish", hostname="127.0.0.1", port=443,
                      username="admin", password_file=password_file)
        return BmcConfig(**{**fields, **overrides})
    return make
