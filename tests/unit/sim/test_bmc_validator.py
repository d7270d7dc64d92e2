"""DMTF's Redfish Service Validator (redfish_service_validator, console script ``rf_service_validator``) against
one simulated BMC served standalone over an H100 node's model: every resource reachable from the service root is
checked against the vendored CSDL schemas (``--skipschema --schema_directory``: nothing is downloaded; the
validator's only connections are to the BMC's loopback address), with session authentication. Passes with zero
failures and zero warnings. The validator prints its tally as a table whose value row follows the header row
``| PASS | WARN | FAIL | NOT TESTED |`` (redfish_service_validator/console_scripts.py ``print_summary``).
"""
from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from provision.sim import hwmodel
from provision.sim.bmc import csdl, standalone
from provision.sim.bmc.power import FakePower

VALIDATOR = Path(sys.executable).with_name("rf_service_validator")
ADDRESS = "127.100.250.9"
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*$", re.M)


def tally(output: str) -> dict[str, int]:
    """(PASS, WARN, FAIL, NOT TESTED) from the validator's summary table."""
    found = ROW.findall(output)
    assert found, output[-2000:]
    return dict(zip(("pass", "warn", "fail", "not_tested"), map(int, found[-1])))


def test_tally_reads_the_summary_table():
    table = ("+---+\n|     PASS     |     WARN     |     FAIL     |  NOT TESTED  |\n+--+\n"
             "|  1111  |  0  |  2  |  2018  |\n")
    assert tally(table) == {"pass": 1111, "warn": 0, "fail": 2, "not_tested": 2018}


def test_service_validator_finds_no_failure(tmp_path, profile):
    model = hwmodel.build(copy.deepcopy(profile), "node01", 0)
    power = FakePower()
    server = standalone.serve(model, ADDRESS, tmp_path / "bmc", "validator-password", power)
    server.bmc.switch.reset("PowerCycle")  # SEL entries to validate
    schemas = tmp_path / "schemas"
    shutil.copytree(csdl.FOLDER, schemas)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    try:
        done = subprocess.run(
            [str(VALIDATOR), "--rhost", f"https://{ADDRESS}:{server.server_address[1]}", "--user", "admin",
             "--password", "validator-password", "--authtype", "Session", "--skipschema",
             "--schema_directory", str(schemas), "--logdir", str(tmp_path / "logs"),
             "--config", str(tmp_path / "no-config.ini")],
            cwd=tmp_path, env={**env, "NO_PROXY": "*"}, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    counts = tally(done.stdout + done.stderr)
    assert counts["fail"] == 0 and counts["warn"] == 0, (counts, done.stdout[-3000:])
    assert counts["pass"] > 1000, counts
    assert done.returncode == 0
