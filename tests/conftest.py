"""Test session set-up: runs go to a temporary folder (the user's runs/latest stays theirs),
and simulated racks take a free block of loopback addresses."""
import os
import random
import socket
import tempfile

# Each pytest process (with ``make unit``'s pytest-xdist, each worker) gets a runs folder of its own,
# unless the caller chose one: workers never share runs/latest.
if os.environ.get("PROVISION_RUNS_DIR") in (None, os.environ.get("PROVISION_TEST_RUNS_DIR")):
    os.environ["PROVISION_RUNS_DIR"] = os.environ["PROVISION_TEST_RUNS_DIR"] = tempfile.mkdtemp(
        prefix="provision-test-runs-")
# Every report.json a test writes, in this process or a CLI subprocess, is validated against the
# published schema (provision/results/report.schema.json); a violation fails the write.
os.environ["PROVISION_VALIDATE_REPORTS"] = "1"


def free_address_base(nodes: int) -> str:
    """A 127.X.Y.10 base whose next ``nodes`` addresses have nothing listening on port 22. X stays in 20-99, so that
    the nodes' simulated BMCs (127.X+100.Y.N, ``provision.sim.bmc.daemon.address_of``) never share a block with
    another rack's nodes."""
    rng = random.SystemRandom()
    for _ in range(50):
        base = f"127.{rng.randrange(20, 100)}.{rng.randrange(0, 250)}"
        addresses = [f"{base}.{10 + i}" for i in range(nodes)]
        if not any(_listening(a) for a in addresses):
            return addresses[0]
    raise RuntimeError("no free loopback address block found")


def _listening(address: str) -> bool:
    try:
        socket.create_connection((address, 22), timeout=0.2).close()
        return True
    except OSError:
        return False


def pytest_terminal_summary(terminalreporter):
    """Print the fault matrix's table (written by tests/integration/test_fault_matrix.py)."""
    from pathlib import Path

    table = Path(os.environ["PROVISION_RUNS_DIR"]) / "fault-matrix.txt"
    if table.is_file():
        terminalreporter.write_sep("-", "fault matrix")
        terminalreporter.write(table.read_text())
