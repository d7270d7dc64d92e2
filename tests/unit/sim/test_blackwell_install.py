"""What the simulated rack gives the Blackwell install roles (issue 24 item 3): Fabric Manager's service starting
NVLSM where nvlsm is installed, nvidia-smi's GPU reset, each GB200 tray's NVLink domain in the inventory, and
the nvidia module's character devices the IMEX role reads channel 0's major from."""
from __future__ import annotations

import os
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


def _service_script(tmp_path: Path) -> Path:
    snap = snapshot.load("debian12")
    root = repo.package_tree(snap, snap.package("nvidia-fabricmanager", "580.105.08-1"), tmp_path / "fm")
    return root / "etc/init.d/nvidia-fabricmanager"


def test_fabric_managers_service_starts_and_stops_nvlsm_where_installed(tmp_path):
    script = _service_script(tmp_path).read_text()
    assert "[ -x /opt/nvidia/nvlsm/sbin/nvlsm ]" in script
    start, stop = script.index("start)"), script.index("stop)")
    assert start < script.index("--pidfile /run/nvlsm/nvlsm.pid --exec /opt/nvidia/nvlsm/sbin/nvlsm") < stop
    assert script.index("--stop --quiet --pidfile /run/nvlsm/nvlsm.pid") > stop
    imex = repo.package_tree(snapshot.load("debian12"), snapshot.load("debian12").package("nvidia-imex"),
                             tmp_path / "imex")
    assert "nvlsm" not in (imex / "etc/init.d/nvidia-imex").read_text()


def test_the_service_script_runs_nvlsm_beside_fabric_manager(tmp_path):
    """The rendered script, run for real with its paths moved under tmp_path: both daemons start, both stop."""
    daemon = tmp_path / "daemon"
    daemon.write_text("#!/bin/sh\nexec sleep 300\n")
    daemon.chmod(0o755)
    script = _service_script(tmp_path).read_text()
    script = script.replace("/run/", f"{tmp_path}/run/").replace("/opt/nvidia/nvlsm/sbin/nvlsm", str(daemon))
    script = script.replace("DAEMON=/usr/bin/nv-fabricmanager", f"DAEMON={daemon}")
    path = tmp_path / "fm.sh"
    path.write_text(script)
    path.chmod(0o755)
    subprocess.run([str(path), "start"], check=True, timeout=30)
    try:
        time.sleep(0.3)
        pids = [int((tmp_path / f"run/{n}/{n}.pid").read_text()) for n in ("nvidia-fabricmanager", "nvlsm")]
        assert all(os.path.exists(f"/proc/{p}") for p in pids)
    finally:
        subprocess.run([str(path), "stop"], check=True, timeout=30)
    assert not (tmp_path / "run/nvlsm/nvlsm.pid").exists()


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


def test_status_prints_a_line_so_that_service_status_all_counts_it(tmp_path):
    """Debian's `service --status-all` ([ + ] only for exit 0 with output) is what service_facts reads here."""
    script = _service_script(tmp_path).read_text().replace("/run/", f"{tmp_path}/run/")
    path = tmp_path / "fm.sh"
    path.write_text(script)
    path.chmod(0o755)
    stopped = subprocess.run([str(path), "status"], capture_output=True, text=True, timeout=30, check=False)
    assert stopped.returncode != 0 and stopped.stdout == "nvidia-fabricmanager is not running\n"
    (tmp_path / "run/nvidia-fabricmanager").mkdir(parents=True)
    (tmp_path / "run/nvidia-fabricmanager/nvidia-fabricmanager.pid").write_text(f"{os.getpid()}\n")
    running = subprocess.run([str(path), "status"], capture_output=True, text=True, timeout=30, check=False)
    assert running.returncode == 0 and running.stdout == "nvidia-fabricmanager is running\n"
