"""What a BMC that accepts TCP and never answers costs the client (provision.bmc), against the simulated rack's BMC
(provision.sim.bmc.standalone, fault bmc_unresponsive) on an unused loopback address: seconds from connect to the
one-line error, per request timeout. DMTF's library alone would retry 10 times with a 1 s sleep (11 x the timeout);
provision.bmc.http bounds it to one timeout.

    .venv/bin/python bench/bmc_timeouts.py
"""
from __future__ import annotations

import copy
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provision import paths  # noqa: E402
from provision.bmc import client  # noqa: E402
from provision.bmc.config import BmcConfig  # noqa: E402
from provision.errors import BmcError  # noqa: E402
from provision.sim import hwmodel  # noqa: E402
from provision.sim.bmc import standalone  # noqa: E402

ADDRESS, PASSWORD = "127.100.250.13", "bench-password-1"


def main() -> None:
    profile = yaml.safe_load((paths.ROOT / "provision/profiles/data/h100-sxm5-80g-ndr.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        faults: dict = {"bmc_unresponsive": {}}
        server = standalone.serve(hwmodel.build(copy.deepcopy(profile), "node01", 0), ADDRESS, folder, PASSWORD,
                                  faults=faults)
        (folder / "password").write_text(PASSWORD + "\n")
        os.chmod(folder / "password", 0o600)
        port = server.server_address[1]
        cfg = BmcConfig(host="node01", address=f"{ADDRESS}:{port}", protocol="redfish", hostname=ADDRESS, port=port,
                        username="admin", password_file=str(folder / "password"), ca_file=str(folder / "ca.pem"))
        print("timeout_s  seconds_to_error")
        for timeout in (1.0, 2.0, 5.0):
            started = time.monotonic()
            try:
                client.connect(cfg, timeout).close()
            except BmcError:
                pass
            print(f"{timeout:9.1f}  {time.monotonic() - started:16.2f}")
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
