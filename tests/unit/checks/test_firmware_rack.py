"""The firmware checks at rack scale: 64 simulated nodes of one profile (each its own hardware model, their
tools the simulator's, run through the burn-in engine as on a rack), one GPU of node17 flashed to another VBIOS
and one HCA of node42 to other firmware (``provision sim fault`` kinds vbios_mismatch and hca_firmware): exactly
those two are named, every other node passes, and the fleet's distribution is in report.json, the console and the
HTML report. The node's sshd is left out (the simulated rack's own tests run the checks over SSH:
tests/integration/test_node_speed.py); what runs is the tools' real output format, the parsers, the checks, the
engine and the report."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from provision import profiles, targets
from provision.engine import burnin
from provision.engine.control import Control
from provision.engine.transport import CommandResult
from provision.inventory import Host
from provision.report import html, summary
from provision.results.model import HostRecord, Outcome, Run
from provision.results.store import RunStore
from provision.sim import faults, hwmodel, repo

TOOLS = Path(hwmodel.__file__).with_name("tools")
PROFILE = "h100-sxm5-80g-ndr"
NODES = 64


class Finished:
    def __init__(self, result):
        self.result = result

    def wait(self):
        return self.result

    def close(self):
        return self.result


class SimConnection:
    """Runs a step's tool as the simulated node would: the simulator's script for a hardware or shipped tool,
    with this node's model; any other command (uname) as it is."""

    def __init__(self, folder: Path):
        self.env = dict(os.environ, PROVISION_SIM_HW=str(folder / "hw.yaml"),
                        PROVISION_SIM_DRIVER=str(folder / "driver.json"),
                        PROVISION_SIM_PERSISTENCED_PID=str(folder / "pid"))

    def start(self, argv, timeout_s):
        tool = {**repo.SIM_TOOLS, **repo.HARDWARE_TOOLS}.get(argv[0])
        command = [sys.executable, str(TOOLS / f"{tool}.py"), *argv[1:]] if tool else list(argv)
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout_s)
        return Finished(CommandResult(list(argv), done.returncode, done.stdout, done.stderr, 0.0, False))

    def run(self, argv, timeout_s):
        return self.start(argv, timeout_s).wait()

    def close(self):
        pass


class SimTransport:
    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def connect(self, host):
        return SimConnection(self.folders[host.name])


def test_64_nodes_one_odd_gpu_and_one_odd_hca_are_exactly_the_two_named(tmp_path):
    profile = profiles.load(PROFILE)
    names = [f"node{i:02d}" for i in range(1, NODES + 1)]
    folders = {}
    for index, name in enumerate(names):
        folder = tmp_path / name
        folder.mkdir()
        model = hwmodel.build(dict(profile.data), name, index)
        if name == "node17":
            faults.KINDS["vbios_mismatch"].apply(model, "3", "96.00.99.00.01")
        if name == "node42":
            faults.KINDS["hca_firmware"].apply(model, "mlx5_5", "28.40.1000")
        (folder / "hw.yaml").write_text(yaml.safe_dump(model))
        (folder / "driver.json").write_text(json.dumps({"version": profile.stack["driver_version"],
                                                        "cuda_version": "12.4"}))
        (folder / "pid").write_text(str(os.getpid()))
        folders[name] = folder
    hosts = [Host(n, "127.0.0.1", 22, "root", None, None, PROFILE) for n in names]
    rundir = RunStore(tmp_path / "runs").create("rack")
    run = Run(run_id="rack", phases=["burnin"], hosts={h.name: HostRecord(PROFILE) for h in hosts})
    run.results = burnin.run(targets.build(hosts), burnin.BurninRequest(["firmware_fleet"]), SimTransport(folders),
                             burnin.Sink(rundir, run.hosts, Control(progress=lambda _: None))).results
    run.finished = "now"
    rundir.save(run)

    nodes = {r.host: r for r in run.results if r.check == "firmware"}
    assert len(nodes) == NODES
    # Each node's own check names its odd device too (7 of its 8 GPUs, 7 of its 8 HCAs run the other version).
    assert {h for h, r in nodes.items() if r.outcome is not Outcome.PASS} == {"node17", "node42"}, \
        [r.message for r in nodes.values() if r.outcome is not Outcome.PASS][:3]
    assert "GPU3" in nodes["node17"].message and "mlx5_5: hca_fw = '28.40.1000'" in nodes["node42"].message
    [fleet] = [r for r in run.results if r.check == "firmware_fleet"]
    bad = [(f.host, f.device, f.metric, f.value, f.expected) for f in fleet.findings if not f.ok]
    gpu3 = hwmodel.build(dict(profile.data), "node17", 16)["gpus"][3]["bus_id"]
    assert bad == [("node17", f"GPU3 {gpu3}", "vbios", "96.00.99.00.01", _healthy(profile, "vbios")),
                   ("node42", "mlx5_5", "hca_fw", "28.40.1000", _healthy(profile, "hca_fw"))]
    assert fleet.blamed() == ("node17", "node42")
    verdicts = run.verdicts()
    assert {h for h, v in verdicts.items() if v != "pass"} == {"node17", "node42"}

    report = json.loads(rundir.report.read_text())
    [row] = [r for r in report["results"] if r["check"] == "firmware_fleet"]
    shown = {(f["metric"], f["value"]): (f["device"], f["detail"]) for f in row["findings"]
             if f["metric"].endswith("_distribution")}
    assert shown[("vbios_distribution", "96.00.99.00.01")] == ("1 GPU", "node17")
    assert shown[("hca_fw_distribution", "28.40.1000")] == ("1 HCA", "node42")
    page = html.render(run)
    assert "Firmware and versions across the fleet" in page
    assert "<td>96.00.99.00.01</td><td>1 GPU</td><td>node17</td>" in page
    assert f"<td>{_healthy(profile, 'vbios')}</td><td>511 GPUs</td><td>node[01-64]</td>" in page
    text = summary.render(run)
    assert "versions across 64 hosts (firmware_fleet): 2 fields differ" in text
    assert "vbios: " in text and "96.00.99.00.01 on 1 GPU (node17)" in text


def _healthy(profile, field: str) -> str:
    model = hwmodel.build(dict(profile.data), "node01", 0)
    return model["gpus"][0]["vbios_version"] if field == "vbios" else model["hcas"][0]["fw_ver"]
