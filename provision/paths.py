"""Where things are: the project root, run results, and tools in this virtualenv."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = Path(os.environ.get("PROVISION_RUNS_DIR", ROOT / "runs"))  # tests point it elsewhere
PLAYBOOKS = ROOT / "playbooks"


def tool(name: str) -> str:
    """Path of a console tool installed beside this Python (the virtualenv), else from PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name) or name
