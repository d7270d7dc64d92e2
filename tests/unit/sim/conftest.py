"""Fixtures for the simulated hardware: a model from the H100 profile and a driver file.

Tools read ``PROVISION_SIM_HW`` / ``PROVISION_SIM_DRIVER`` / ``PROVISION_SIM_PERSISTENCED_PID``;
``sim.write(model)`` rewrites the model file after a test changes the hardware.
"""
from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from provision.sim import hwmodel

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "provision" / "sim" / "tools"
PROFILE = ROOT / "provision" / "profiles" / "data" / "h100-sxm5-80g-ndr.yaml"
DRIVER = {"version": "550.127.05", "cuda_version": "12.4"}

if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


@pytest.fixture(scope="session")
def profile() -> dict:
    return yaml.safe_load(PROFILE.read_text())


class Sim:
    """A simulated node's files in a temp dir, and a runner for the tools' ``main``."""

    def __init__(self, tmp: Path, model: dict, capsys) -> None:
        self.tmp, self.model, self.capsys = tmp, model, capsys
        self.hw, self.driver = tmp / "hardware.yaml", tmp / "nvidia-driver.json"
        self.write(model)
        self.driver.write_text(json.dumps(DRIVER))

    def write(self, model: dict | None = None) -> None:
        self.model = self.model if model is None else model
        self.hw.write_text(hwmodel.dump(self.model))

    def run(self, module, argv: list[str]) -> tuple[int, str, str]:
        """``(exit status, stdout, stderr)`` of ``module.main(argv)``."""
        self.capsys.readouterr()
        status = module.main(argv)
        out = self.capsys.readouterr()
        return status, out.out, out.err

    def env(self) -> dict:
        return {**os.environ, "PROVISION_SIM_HW": str(self.hw), "PROVISION_SIM_DRIVER": str(self.driver),
                "PROVISION_SIM_PERSISTENCED_PID": str(self.tmp / "none.pid"), "PROVISION_SIM_ADDR": "127.0.0.1"}


@pytest.fixture
def sim(tmp_path, monkeypatch, capsys, profile) -> Sim:
    model = hwmodel.build(copy.deepcopy(profile), "node01", 0)
    s = Sim(tmp_path, model, capsys)
    for key, value in s.env().items():
        if key.startswith("PROVISION_SIM_"):
            monkeypatch.setenv(key, value)
    return s
