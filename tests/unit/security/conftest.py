"""Helpers for the security tests: write an inventory, read it as `provision` does."""
import subprocess
import sys

import pytest

from provision import inventory

PROFILE = "h100-sxm5-80g-ndr"


@pytest.fixture
def read_inventory(tmp_path):
    """read_inventory(hosts_yml_text) -> the Inventory ``provision`` would read (problems collected)."""
    def read(text: str, name: str = "hosts.yml"):
        path = tmp_path / name
        path.write_text(text)
        return inventory.read(path)
    return read


def provision(*args):
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=120)


def one_error(proc) -> str:
    """The single ``provision: error:`` line of a run that exited 2."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("provision: error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]
