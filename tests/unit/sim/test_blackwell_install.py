"""What the simulated rack gives the Blackwell install roles (issue 24 item 3): Fabric Manager's service starting
NVLSM where nvlsm is installed, nvidia-smi's GPU reset, each GB200 tray's NVLink domain in the inventory, and
the nvidia module's character devices the IMEX role reads channel 0's major from."""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import yaml

from provision import profiles
from provision.sim import hwmodel, rack, repo, snapshot
from provision.sim.rack import SimNode


def test_nvlsm_ships_its_daemon_at_nvidias_path_and_no_unit():
    for target in snapshot.ALL_TARGETS:
        pkg = snapshot.load(target).package("nvlsm")
        assert pkg.ships == ("/opt/nvidia/nvlsm/sbin/nvlsm",), target
        assert any("nvlsm.spec" in s for s in pkg.sources), target


def _unit(tmp_path: Path, name: str = "nvidia-fabricmanager", version: str | None = "580.105.08-1") -> str:
    snap = snapshot.load("debian12")
    pkg = snap.package(name, version) if version else snap.package(name)
    root = repo.package_tree(snap, pkg, tmp_path / name)
    assert not (root / "etc/init.d").exists()  # the nodes boot systemd: units only, as NVIDIA's packages ship
    return next(root.glob(f"**/systemd/system/{name}.service")).read_text()


def _exec_start(unit: str) -> str:
    line = next(row for row in unit.splitlines() if row.startswith("ExecStart="))
    return line.removeprefix("ExecStart=")


def test_fabric_managers_unit_starts_nvlsm_where_installed(tmp_path):
    start = _exec_start(_unit(tmp_path))
    assert "if [ -x /opt/nvidia/nvlsm/sbin/nvlsm ]; then /opt/nvidia/nvlsm/sbin/nvlsm nvlsm & fi" in start
    assert start.endswith("exec /usr/bin/nv-fabricmanager nvidia-fabricmanager'")
    assert "nvlsm" not in _unit(tmp_path, "nvidia-imex", None)


def test_the_units_command_runs_nvlsm_beside_fabric_manager(tmp_path):
    """The unit's ExecStart, run for real with the daemons' paths moved under tmp_path: both daemons start and
    keep their pid files; stopping the unit's processes (as systemd stops its cgroup) removes them."""
    daemon = tmp_path / "daemon.py"
    daemon.write_text((Path(repo.HERE) / "tools/daemon.py").read_text())
    daemon.chmod(0o755)
    command = _exec_start(_unit(tmp_path)).replace("/opt/nvidia/nvlsm/sbin/nvlsm", str(daemon))
    command = command.replace("/usr/bin/nv-fabricmanager", str(daemon))
    argv = shlex.split(command)  # /bin/sh -c '...', as systemd splits ExecStart=
    proc = subprocess.Popen(argv, env={**os.environ, "PROVISION_SIM_RUN_DIR": str(tmp_path / "run")},
                            start_new_session=True)
    files = [tmp_path / f"run/{n}/{n}.pid" for n in ("nvidia-fabricmanager", "nvlsm")]
    try:
        deadline = time.monotonic() + 30
        while not all(f.is_file() and f.read_text().strip() for f in files) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [int(f.read_text()) for f in files]
        assert all(os.path.exists(f"/proc/{p}") for p in pids)
        assert proc.pid == pids[0]  # `exec`: the unit's main process is Fabric Manager itself
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(f.exists() for f in files) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(f.exists() for f in files)


def test_gpu_reset_prints_each_gpu_and_all_done(sim):
    import nvidia_smi

    status, out, _ = sim.run(nvidia_smi, ["--gpu-reset"])
    assert status == 0
    lines = out.splitlines()
    assert lines[-1] == "All done."
    assert lines[:-1] == [f"GPU {g['bus_id']} was successfully reset." for g in sim.model["gpus"]]
    status, out, _ = sim.run(nvidia_smi, ["-r", "-i", "1"])
    assert out == f"GPU {sim.model['gpus'][1]['bus_id']} was successfully reset.\nAll done.\n"


def test_each_gb200_tray_names_its_nvlink_domain_and_an_hgx_board_none(tmp_path):
    nodes = [SimNode(f"node{i:02d}", f"127.0.1.{10 + i}", 0) for i in range(20)]
    (tmp_path / "gb").mkdir()
    rack._write_inventory(tmp_path / "gb", nodes, ["ubuntu2404"] * 20, "gb200-nvl72", "http://127.0.0.1:40000")
    hosts = yaml.safe_load((tmp_path / "gb/hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    domains = [hosts[n.name]["provision_nvlink_domain"] for n in nodes]
    assert domains == ["nvl000"] * 18 + ["nvl001"] * 2  # 18 trays a domain (hwmodel.nvlink_domain)
    profile = profiles.load("gb200-nvl72").data
    assert [hwmodel.nvlink_domain(profile, i) for i in (0, 17, 18)] == [0, 0, 1]
    (tmp_path / "hgx").mkdir()
    rack._write_inventory(tmp_path / "hgx", nodes[:2], ["debian12"] * 2, "b200-hgx", "http://127.0.0.1:40000")
    hosts = yaml.safe_load((tmp_path / "hgx/hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    assert not any("provision_nvlink_domain" in h for h in hosts.values())


def test_a_gpu_node_lists_the_imex_channel_device_where_the_site_points_the_role(tmp_path):
    model = hwmodel.build(profiles.load("gb200-nvl72").data, "node01", 0)
    rack.write_kernel_views(tmp_path, model)
    text = (tmp_path / rack.SIM_PROC_DEVICES.lstrip("/")).read_text()
    assert text.startswith("Character devices:\n")
    assert "235 nvidia-caps-imex-channels\n" in text
    site = yaml.safe_load(rack.SITE_VARS.read_text())
    assert site["nvidia_imex_proc_devices"] == rack.SIM_PROC_DEVICES
    bare = tmp_path / "bare"
    rack.write_kernel_views(bare, {**model, "gpus": []})
    assert not (bare / rack.SIM_PROC_DEVICES.lstrip("/")).exists()


