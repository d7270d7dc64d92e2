"""Blackwell nodes on the simulated rack (issue 24 item 3): a 2-node HGX B200 rack and a 2-tray GB200 NVL72
rack (one NVLink domain) install (nvidia_driver with Fabric Manager, NVLSM and the GPU reset on the B200;
nvidia_imex on the GB200) and burn in healthy; a second install of the Blackwell roles changes nothing; then
faults on the GB200 rack, one at a time, fail the right node, GPU and check with the catalogue's action.

One installed rack per profile (module fixtures). The healthy burn-in is a plain `provision burnin` (every check
of the default set, node and cluster scope): every node check has its reference row on both profiles (measured ones
cite their measurement; gpu_stress is derived from NVIDIA's FP32 peak, as its row says). The fault runs judge the
node checks a fault can touch.
"""
import json
import time
import uuid

import pytest
import yaml

from provision import paths
from provision.sim import faults, rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
FAULT_CHECKS = "gpu_health,xid,nvlink,imex"
RUN = f"blackwell-{uuid.uuid4().hex[:8]}"  # this session's run ids: runs/ keeps every earlier one


@pytest.fixture(scope="module")
def b200(tmp_path_factory):
    with own_rack(tmp_path_factory.mktemp("b200"), nodes=2, profile="b200-hgx") as inv:
        yield inv, install(inv, "b200-install")


@pytest.fixture(scope="module")
def gb200(tmp_path_factory):
    with own_rack(tmp_path_factory.mktemp("gb200"), nodes=2, profile="gb200-nvl72") as inv:
        yield inv, install(inv, "gb200-install")


def report(run_id):
    return json.loads((paths.RUNS / f"{RUN}-{run_id}" / "report.json").read_text())


def install(inv, run_id, *options):
    return provision("install", "-i", str(inv), "--run-id", f"{RUN}-{run_id}", *options)


def burnin(inv, run_id, checks=None):
    """`provision burnin` of ``checks`` at node scope; None: a plain burn-in (the default set, every scope)."""
    options = ["--checks", checks, "--scope", "node"] if checks else []
    proc = provision("burnin", "-i", str(inv), "--run-id", f"{RUN}-{run_id}", *options)
    return proc, report(run_id)


def node_file(inv, node, path):
    node = next(n for n in rack.load_nodes(inv) if n.name == node)
    return node.root() / path.lstrip("/")


def assert_healthy(inv, run_id):
    proc, rep = burnin(inv, run_id)
    assert proc.returncode == 0, proc.stdout[-3000:]
    judged = [r for r in rep["results"] if r["outcome"] != "skipped"]
    assert judged and all(r["outcome"] == "pass" for r in judged), [
        (r["check"], r["hosts"], r["message"]) for r in judged if r["outcome"] != "pass"]
    fabric = [f for r in judged if r["check"] == "gpu_health" for f in r["findings"]
              if f["metric"].startswith(("fabric_", "nvlink_clique"))]
    assert fabric and all(f["ok"] for f in fabric)
    assert {f["metric"] for f in fabric} >= {"fabric_state", "fabric_status", "fabric_health"}
    return rep


def test_b200_installs_fabric_manager_with_nvlsm_and_burns_in_healthy(b200):
    inv, installed = b200
    assert installed.returncode == 0, installed.stdout[-3000:]
    for node in ("node01", "node02"):
        assert node_file(inv, node, "/run/nvidia-fabricmanager/nvidia-fabricmanager.pid").is_file()
        assert node_file(inv, node, "/run/nvlsm/nvlsm.pid").is_file()  # started by Fabric Manager's service
        assert not node_file(inv, node, "/etc/nvidia-imex/nodes_config.cfg").exists()  # no IMEX on an HGX board
        holds = node_file(inv, node, "/var/lib/dpkg/status").read_text()
        for package in ("nvidia-fabricmanager", "nvlsm", "libnvsdm"):
            assert f"Package: {package}\nStatus: hold ok installed" in holds, package
    rep = assert_healthy(inv, "b200-healthy")
    # no NVLink domain on an HGX board: its checks are skipped, naming why
    skipped = {r["check"] for r in rep["results"] if r["outcome"] == "skipped"}
    assert skipped == {"imex", "imex_domain", "nvlink_domain", "nvlink_clique"}
    again = install(inv, "b200-again", "--tags", "driver,imex")
    assert again.returncode == 0, again.stdout[-3000:]
    assert all(h["changed"] == 0 for h in report("b200-again")["install"].values()), report("b200-again")["install"]


def test_gb200_installs_imex_for_its_domain_and_burns_in_healthy(gb200):
    inv, installed = gb200
    assert installed.returncode == 0, installed.stdout[-3000:]
    addresses = [n.address for n in rack.load_nodes(inv)]
    for node in ("node01", "node02"):
        assert node_file(inv, node, "/etc/nvidia-imex/nodes_config.cfg").read_text() == "".join(
            f"{a}\n" for a in addresses)
        modprobe = node_file(inv, node, "/etc/modprobe.d/nvidia-imex-channel0.conf").read_text()
        assert "options nvidia NVreg_CreateImexChannel0=1" in modprobe
        assert not node_file(inv, node, "/run/nvidia-fabricmanager/nvidia-fabricmanager.pid").exists()
    rep = assert_healthy(inv, "gb200-healthy")
    imex = [r for r in rep["results"] if r["check"] == "imex"]
    assert sorted(h for r in imex for h in r["hosts"]) == ["node01", "node02"]
    assert all(r["outcome"] == "pass" for r in imex)
    again = install(inv, "gb200-again", "--tags", "driver,imex")
    assert again.returncode == 0, again.stdout[-3000:]
    assert all(h["changed"] == 0 for h in report("gb200-again")["install"].values()), report("gb200-again")["install"]


def _failed(rep):
    """(check, host, device, fault, action) of every failing finding."""
    return [(r["check"], r["hosts"][0], f["device"], f.get("fault", ""), f.get("action", ""))
            for r in rep["results"] if r["outcome"] == "fail" for f in r["findings"] if not f["ok"]]


def _gpu(inv, node, index):
    text = node_file(inv, node, "/" + faults.MODEL).read_text()
    return next(g for g in yaml.safe_load(text)["gpus"] if g["index"] == index)


# (node, kind, device, value, check, fault code): each a GB200 fault of issue 24 item 5.
GB200_FAULTS = [
    ("node02", "fabric_in_progress", "1", None, "gpu_health", "NVLINK_FABRIC_NOT_TRAINED"),
    ("node01", "fabric_limited", "3", None, "gpu_health", "NVLINK_FABRIC_DEGRADED"),
    ("node02", "gpu_lost", "2", None, "gpu_health", "GPU_LOST"),
    ("node01", "recovery_action", "0", "Node Reboot", "gpu_health", "GPU_RECOVERY_ACTION"),
    ("node02", "nvlink5_xid", "3", "149:5", "xid", "XID_NVLINK5"),
]


def test_gb200_faults_fail_the_right_node_gpu_and_check(gb200):
    inv, installed = gb200
    assert installed.returncode == 0, installed.stdout[-3000:]
    for node, kind, device, value, check, code in GB200_FAULTS:
        for n in rack.load_nodes(inv):
            faults.heal(inv, n.name)
        bus_id = _gpu(inv, node, int(device))["bus_id"]
        faults.inject(inv, node, kind, device, value)
        proc, rep = burnin(inv, f"gb200-{kind}", FAULT_CHECKS)
        assert proc.returncode == 1, (kind, proc.stdout[-2000:])
        failed = _failed(rep)
        assert {host for _, host, *_ in failed} == {node}, (kind, failed)
        hits = [f for f in failed if f[0] == check and f[3] == code]
        assert hits, (kind, failed)
        assert all(action for *_, action in hits), (kind, hits)
        # The GPU by its PCI address (gpu_health "GPU1 00000000:3F:00.0", a lost one as nvidia-smi's error line
        # prints it, "0000:9C:00.0"; xid "PCI 0000:9c:00"): the short form is in every one of them.
        short = bus_id.lower()[4:].split(".")[0]
        assert any(short in dev.lower() for _, _, dev, *_ in hits), (kind, hits)
    for n in rack.load_nodes(inv):
        faults.heal(inv, n.name)


def test_gb200_imex_daemon_stopped_fails_that_tray_and_its_peer(gb200):
    """The daemon really stopped on one tray (`provision sim fault node02 imex_stopped`: systemctl stop nvidia-imex in
    the node, as an operator or a crash leaves it): that tray's own view shows it not READY (IMEX_DAEMON_DOWN), and
    its peer's nvidia-imex-ctl, which connects to each peer's daemon, lists it unavailable (IMEX_PEER_DISCONNECTED
    naming node02); `sim heal` starts it again and both pass."""
    inv, installed = gb200
    assert installed.returncode == 0, installed.stdout[-3000:]
    for n in rack.load_nodes(inv):
        faults.heal(inv, n.name)
    fault = provision("sim", "fault", "node02", "imex_stopped", "--inventory", str(inv))
    assert fault.returncode == 0, fault.stderr
    try:
        assert not node_file(inv, "node02", "/run/nvidia-imex/nvidia-imex.pid").exists()
        proc, rep = burnin(inv, "gb200-imex-down", "imex")
        assert proc.returncode == 1, proc.stdout[-2000:]
        failed = _failed(rep)
        assert {host for _, host, *_ in failed} == {"node01", "node02"}, failed
        own = [f for f in failed if f[1] == "node02" and f[3] == "IMEX_DAEMON_DOWN"]
        assert own and own[0][2] == "IMEX daemon node02" and own[0][4], failed
        peer = [f for f in failed if f[1] == "node01" and f[3] == "IMEX_PEER_DISCONNECTED"]
        assert peer and all(f[4] for f in peer) and any("node02" in f[2] for f in peer), failed
        assert not [f for f in failed if f[1] == "node01" and f[3] == "IMEX_DAEMON_DOWN"], failed
    finally:
        healed = provision("sim", "heal", "node02", "--inventory", str(inv))
        assert healed.returncode == 0, healed.stderr
    # systemctl start returns once the daemon is forked (a simple unit); it binds its port, then writes its pid file
    pidfile, deadline = node_file(inv, "node02", "/run/nvidia-imex/nvidia-imex.pid"), time.monotonic() + 60
    while not pidfile.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pidfile.is_file()
    proc, rep = burnin(inv, "gb200-imex-up", "imex")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert sorted(h for r in rep["results"] if r["check"] == "imex" and r["outcome"] == "pass" for h in r["hosts"]) \
        == ["node01", "node02"]
