"""Run the simulated ibnetdiscover (provision/sim/tools/ibnetdiscover.py) as the node would: a subprocess
reading a world file (``PROVISION_SIM_FABRIC``) as host ``PROVISION_SIM_HOSTNAME``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

TOOL = Path(__file__).resolve().parents[3] / "provision" / "sim" / "tools" / "ibnetdiscover.py"


def run_tool(world: dict, tmp: Path, host: str, *args: str) -> subprocess.CompletedProcess:
    path = tmp / "fabric.yaml"
    path.write_text(yaml.safe_dump(world))
    env = {**os.environ, "PROVISION_SIM_FABRIC": str(path), "PROVISION_SIM_HOSTNAME": host}
    return subprocess.run([sys.executable, str(TOOL), *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
