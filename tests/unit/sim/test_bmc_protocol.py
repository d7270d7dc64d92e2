"""DMTF's Redfish Protocol Validator (redfish-protocol-validator, console script ``rf_protocol_validator``) against
one simulated BMC served standalone: DSP0266's protocol assertions (methods and their status codes, headers such as
Allow, ETag, Link, OData-Version, Cache-Control, sessions and Basic authentication, predefined roles, TLS) pass with
no failure and no warning. The validator is a dev dependency (pyproject.toml), installed beside this Python. Its
connections are only to the BMC's
loopback address (``--ca-bundle`` and REQUESTS_CA_BUNDLE: the validator's unauthenticated requests use requests'
default trust, so both are needed for verification to succeed); it takes about 24 s.
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

from provision.sim import hwmodel
from provision.sim.bmc import standalone

ADDRESS = "127.100.250.11"
SUMMARY = re.compile(r"Summary - PASS: (\d+), WARN: (\d+), FAIL: (\d+), NOT_TESTED: (\d+)")


VALIDATOR = Path(sys.executable).with_name("rf_protocol_validator")


def test_protocol_validator_finds_no_failure(tmp_path, profile):
    model = hwmodel.build(copy.deepcopy(profile), "node01", 0)
    server = standalone.serve(model, ADDRESS, tmp_path / "bmc", "protocol-password")
    ca = str(tmp_path / "bmc" / "ca.pem")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    try:
        done = subprocess.run(
            [str(VALIDATOR), "--rhost", f"https://{ADDRESS}:{server.server_address[1]}", "--user", "admin",
             "--password", "protocol-password", "--ca-bundle", ca, "--report-dir", str(tmp_path / "report"),
             "--report-type", "tsv", "--avoid-http-redirect", "--config", str(tmp_path / "no-config.ini")],
            cwd=tmp_path, env={**env, "NO_PROXY": "*", "REQUESTS_CA_BUNDLE": ca}, capture_output=True, text=True,
            timeout=180)
    finally:
        server.shutdown()
        server.server_close()
    found = SUMMARY.findall(done.stdout + done.stderr)
    assert found, done.stdout[-3000:] + done.stderr[-3000:]
    passed, warned, failed, _ = map(int, found[-1])
    report = "".join(p.read_text() for p in (tmp_path / "report").glob("*.tsv"))
    bad = [line for line in report.splitlines() if "\tFAIL\t" in line or "\tWARN\t" in line]
    assert failed == 0 and warned == 0, bad
    assert passed > 200
