"""Make the bmc check's captures: what ``provision.bmc.transport`` answers for the check's steps (status, sel,
sensors), read by the real client (``provision.bmc.redfish`` over DMTF's ``redfish`` library, TLS verified) from

- DMTF's public Redfish mockup ``public-rackmount1`` (tests/data/redfish_client/, served through the client's test
  stand-in for the library's HTTP client): ``dmtf_rackmount1.*``;
- the simulated rack's BMC (``provision.sim.bmc.standalone`` over an H100 node's hardware model, with the case's
  fault as ``provision sim fault`` applies it): ``sim_h100_*``.

Run: ``.venv/bin/python tests/data/bmc/capture.py``. The SEL's ``Created`` times and the session ids differ from run
to run; what the check judges does not.
"""
from __future__ import annotations

import copy
import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from provision.bmc import redfish  # noqa: E402
from provision.bmc.config import BmcConfig  # noqa: E402
from provision.sim import hwmodel  # noqa: E402
from provision.sim.bmc import faultkinds, standalone  # noqa: E402
from provision.sim.bmc.power import FakePower  # noqa: E402
from tests.unit.bmc._fake import FakeClient  # noqa: E402

HERE = Path(__file__).resolve().parent
ADDRESS = "127.100.250.11"
PASSWORD = "capture-pw-31415"
STEPS = ("status", "sel", "sensors", "firmware")  # firmware: the firmware check's bmc_firmware step
FAULTS = {"healthy": None, "sel_critical": ("sel_critical", None), "psu_lost": ("psu_lost", "2"),
          "over_temp": ("over_temp", "3"), "firmware_stale": ("firmware_stale", "node")}


def write(name: str, bmc) -> None:
    for step in STEPS:
        (HERE / f"{name}.{step}.json").write_text(bmc.raw(step) + "\n")


def mockup() -> None:
    cfg = BmcConfig(host="node07", address="127.0.9.1", protocol="redfish", hostname="127.0.9.1", port=443,
                    username="admin", password_env="UNUSED")
    # the mockup's LogEntry collection names a next page (?$skiptoken=2) the mockup does not hold: it is given as
    # the empty last page it would be (tests/data/redfish_client/SOURCE.md)
    last = "/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries?$skiptoken=2"
    pages = {last: {"@odata.id": last, "Members": [], "Members@odata.count": 0}}
    write("dmtf_rackmount1", redfish.RedfishBmc(cfg, 10, factory=lambda **kw: FakeClient(pages=pages, **kw)))


def simulated(case: str, fault) -> None:
    profile = yaml.safe_load((ROOT / "provision/profiles/data/h100-sxm5-80g-ndr.yaml").read_text())
    model = hwmodel.build(copy.deepcopy(profile), "node07", 6)
    with tempfile.TemporaryDirectory() as tmp:
        folder, faults = Path(tmp), {}
        if fault is not None:
            kind, device = fault
            label = kind
            if kind in faultkinds.BMC_KINDS:
                faults[kind] = {"kind": kind}
            else:  # as provision.sim.faults.inject: the fault edits the model, its label names the unit
                label = getattr(faultkinds, kind)(model, device, None)
            faultkinds.sel_event(folder, "node07", {"kind": kind, "device": device, "label": label}, model)
        server = standalone.serve(model, ADDRESS, folder, PASSWORD, FakePower(), faults)
        password = folder / "password"
        password.write_text(PASSWORD + "\n")
        os.chmod(password, 0o600)
        port = server.server_address[1]
        cfg = BmcConfig(host="node07", address=f"{ADDRESS}:{port}", protocol="redfish", hostname=ADDRESS, port=port,
                        username="admin", password_file=str(password), ca_file=str(folder / "ca.pem"))
        bmc = redfish.RedfishBmc(cfg, 10)
        try:
            write(f"sim_h100_{case}", bmc)
        finally:
            bmc.close()
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    mockup()
    for case, fault in FAULTS.items():
        simulated(case, fault)
