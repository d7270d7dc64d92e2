"""The simulated rack's signed package repositories, built from the snapshots and served on loopback.

For every target a rack needs, the CUDA repository is laid out as NVIDIA lays it out
(``compute/cuda/repos/<target>/x86_64/``, or ``.../sbsa/`` for an arm64 target ``<target>-sbsa``; flat,
suite ``/``; ``snapshot.load(target).repository``)
with the packages, exact versions and dependencies of ``snapshot/<target>.yaml`` and nothing else;
the signing key is published under NVIDIA's own key file name. Debian-family folders are
built with dpkg-deb and apt-ftparchive and signed (InRelease, Release.gpg); the rhel9 folder
with rpmbuild, rpmsign, createrepo_c and the module metadata (``modules.yaml``) that
``dnf module`` reads. What is simulated is only the packages' contents: the commands a package
ships are the simulated tools (``provision/sim/tools/``), and its systemd units start them.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import jinja2

from provision import external
from provision.errors import RunnerError
from provision.sim import rpmrepo, snapshot, sources

HERE = Path(__file__).parent
# Hardware and kernel views, copied straight into each node (not packaged): tool -> command.
# fio stands for the node's storage path (the checkpoint store and its bond), which is simulated too.
# dmidecode and ipmitool read the board's firmware tables and BMC, which the model holds; numactl binds to the
# model's NUMA nodes (Debian's package is not in the nodes' base: the burnin_tools role installs it on real sites).
HARDWARE_TOOLS = {"dmesg": "dmesg", "lspci": "lspci", "fio": "fio", "dmidecode": "dmidecode", "ipmitool": "ipmitool",
                  "numactl": "numactl"}
# A shipped command -> the simulated tool that stands for it ("daemon": a do-nothing service).
SIM_TOOLS = {"nvidia-smi": "nvidia_smi", "nvcc": "nvcc", "dcgmi": "dcgmi", "ib_write_bw": "ib_write_bw",
             "ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo", "ibnetdiscover": "ibnetdiscover",
             "nvidia-persistenced": "daemon", "nv-fabricmanager": "daemon", "nv-hostengine": "daemon",
             "nvidia-imex": "daemon", "nvidia-imex-ctl": "nvidia_imex_ctl", "nvlsm": "daemon"}
# A systemd unit -> the daemon it runs (names as NVIDIA's units: nvidia-persistenced.service,
# nvidia-fabricmanager.service, nvidia-dcgm.service, nvidia-imex.service).
SERVICE_DAEMONS = {"nvidia-persistenced": "nvidia-persistenced", "nvidia-fabricmanager": "nv-fabricmanager",
                   "nvidia-dcgm": "nv-hostengine", "nvidia-imex": "nvidia-imex"}
# Driver branch -> the CUDA version its nvidia-smi reports ("CUDA Version: 12.4" for 550, "13.0" for 580;
# NVIDIA's CUDA Toolkit release notes, table 3: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/,
# CUDA 13.0 GA needs >= 580.65.06).
DRIVER_CUDA = {"535": "12.2", "550": "12.4", "560": "12.6", "570": "12.8", "580": "13.0"}
# A service -> the daemons it also starts when their package is installed: (name, path). From R580 Fabric Manager's
# service starts the NVLink Subnet Manager on NVLink5 NVSwitch boards (HGX B200/B300; NVIDIA Fabric Manager user
# guide, "What is NVLink Subnet Manager?"); NVIDIA's nvlsm package ships the daemon at /opt/nvidia/nvlsm/sbin/nvlsm and
# no unit of its own (vyaghras/bottlerocket-kernel-kit:packages/nvlsm/nvlsm.spec unpacks it and adds its own unit).
SERVICE_COMPANIONS = {"nvidia-fabricmanager": (("nvlsm", "/opt/nvidia/nvlsm/sbin/nvlsm"),)}
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), keep_trailing_newline=True,
                          undefined=jinja2.StrictUndefined, autoescape=False)


def cuda_dir(target: str) -> str:
    """NVIDIA's folder of ``target``: ``ubuntu2204`` -> ``.../ubuntu2204/x86_64``, ``ubuntu2404-sbsa`` ->
    ``.../ubuntu2404/sbsa`` (the arm64 server folder; its .deb files are tagged arm64)."""
    base, _, folder = target.partition("-")
    return f"compute/cuda/repos/{base}/{folder or 'x86_64'}"


def build(repo_dir: Path, targets: list[str]) -> dict[str, Path]:
    """Build and sign the repository of each target under ``repo_dir/www``; return target -> folder."""
    gpg = _keyring(repo_dir)
    out = {}
    for target in sorted(set(targets)):
        out[target] = _build_folder(snapshot.load(target), repo_dir / "www" / cuda_dir(target), gpg)
        doca = snapshot.doca(target)
        if doca is not None:
            folder = repo_dir / "www" / urlsplit(doca.repository["url"]).path.strip("/")
            _build_folder(doca, folder, gpg)
            _run(gpg + ["--armor", "--export"], out=folder.parents[2] / snapshot.DOCA_KEY)
    return out


def _build_folder(snap: snapshot.Snapshot, dist: Path, gpg: list[str]) -> Path:
    dist.mkdir(parents=True, exist_ok=True)
    _run(gpg + ["--armor", "--export"], out=dist / snap.repository["signing_key"])
    with tempfile.TemporaryDirectory() as tmp:
        # One tree per package version: a repository holds several versions of one name (two release lines).
        trees = {p: package_tree(snap, p, Path(tmp) / f"{p.name}_{p.version}") for p in snap.packages}
        if snap.format == "deb":
            _deb_repo(snap, trees, dist, gpg)
        else:
            rpmrepo.build(snap, trees, dist, gpg)
    return dist


def package_tree(snap: snapshot.Snapshot, pkg: snapshot.Package, root: Path) -> Path:
    """The files of one package under ``root``: its shipped commands as simulated tools, its units,
    and the small facts the simulated tools read (driver, CUDA, NCCL versions)."""
    root.mkdir(parents=True, exist_ok=True)
    for shipped in pkg.ships:
        name = Path(shipped).name
        if shipped.endswith(".service"):
            service = name.removesuffix(".service")
            daemon = _daemon_path(snap, service)
            _render(root / shipped.lstrip("/"), "unit.service.j2", 0o644, service=service, daemon=daemon,
                    companions=SERVICE_COMPANIONS.get(service, ()))
        elif name in SIM_TOOLS:
            _copy_tool(SIM_TOOLS[name], root / shipped.lstrip("/"))
        elif name == "nccl.h":
            major, minor, patch = (pkg.upstream.split(".") + ["0", "0"])[:3]
            _write(root / shipped.lstrip("/"), f"#define NCCL_MAJOR {major}\n#define NCCL_MINOR {minor}\n"
                                                f"#define NCCL_PATCH {patch}\n")
    for rel, text in package_facts(snap, pkg).items():
        _write(root / rel, text)
    return root


def package_facts(snap: snapshot.Snapshot, pkg: snapshot.Package) -> dict[str, str]:
    """Files the simulated tools read to know what is installed (what a real binary knows itself)."""
    facts = {}
    if any(Path(s).name == "nvidia-smi" for s in pkg.ships):
        branch = pkg.upstream.split(".")[0]
        facts["usr/lib/provision-sim/nvidia-driver.json"] = json.dumps(
            {"version": pkg.upstream, "cuda_version": DRIVER_CUDA.get(branch, "12.4")})
    nvcc = next((s for s in pkg.ships if Path(s).name == "nvcc"), None)
    if nvcc:
        home = Path(nvcc).parent.parent
        mm = home.name.removeprefix("cuda-").replace(".", "-")
        toolkit = snap.package(f"cuda-toolkit-{mm}")
        facts[str(home / "version.json").lstrip("/")] = json.dumps(
            {"cuda": {"name": "CUDA SDK", "version": toolkit.upstream if toolkit else pkg.upstream},
             "cuda_nvcc": {"name": "CUDA NVCC", "version": pkg.upstream}})
    if any(Path(s).name == "dcgmi" for s in pkg.ships):  # dcgmi knows its DCGM version (mndiag needs 4.3+)
        facts["usr/lib/provision-sim/dcgm.json"] = json.dumps({"version": pkg.upstream})
    if pkg.role == "nccl" and not pkg.name.endswith(("-dev", "-devel")):
        facts["usr/lib/provision-sim/nccl.json"] = json.dumps({"version": pkg.upstream})
    return facts


def _daemon_path(snap: snapshot.Snapshot, service: str) -> str:
    daemon = SERVICE_DAEMONS.get(service, service)
    for pkg in snap.packages:
        for shipped in pkg.ships:
            if Path(shipped).name == daemon:
                return shipped
    return f"/usr/bin/{daemon}"


def _copy_tool(tool: str, dest: Path) -> None:
    src = HERE / "tools" / f"{tool}.py"
    if not src.is_file():
        raise RunnerError(f"no simulated tool {src.name} for {dest.name}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(src.read_text())
    dest.chmod(0o755)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _render(path: Path, template: str, mode: int, **values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_ENV.get_template(template).render(**values))
    path.chmod(mode)


def _deb_repo(snap: snapshot.Snapshot, trees: dict[snapshot.Package, Path], dist: Path, gpg: list[str]) -> None:
    for pkg in snap.packages:
        root = trees[pkg]
        arch = {"x86_64": "amd64", "noarch": "all"}.get(pkg.arch, pkg.arch)
        _render(root / "DEBIAN/control", "control.j2", 0o644, pkg=pkg, arch=arch,
                depends=", ".join(pkg.depends))
        version = pkg.version.split(":", 1)[-1]
        _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root),
              str(dist / f"{pkg.name}_{version}_{arch}.deb")])
    _run(["apt-ftparchive", "packages", "."], cwd=dist, out=dist / "Packages")
    _run(["apt-ftparchive", "-o", "APT::FTPArchive::Release::Origin=NVIDIA",
          "-o", "APT::FTPArchive::Release::Label=NVIDIA CUDA", "release", "."], cwd=dist, out=dist / "Release")
    _run(gpg + ["--yes", "--clearsign", "-o", str(dist / "InRelease"), str(dist / "Release")])
    _run(gpg + ["--yes", "--armor", "--detach-sign", "-o", str(dist / "Release.gpg"), str(dist / "Release")])


def signing_gpg(repo_dir: Path) -> list[str]:
    """The gpg argv prefix that signs with this rack's key."""
    return _keyring(repo_dir)


def _keyring(repo_dir: Path) -> list[str]:
    """This rack's signing key (made once per rack); returns the gpg argv prefix that uses it."""
    home = repo_dir / "gnupg"
    gpg = ["gpg", "--batch", "--homedir", str(home), "--pinentry-mode", "loopback", "--passphrase", ""]
    if not home.is_dir():
        home.mkdir(mode=0o700, parents=True)
        _run(gpg + ["--quick-gen-key", "provision simulated rack repository <sim@localhost>", "rsa3072",
                    "sign", "never"])
    return gpg


def _run(argv: list[str], cwd: Path | None = None, out: Path | None = None) -> None:
    proc = external.run(argv, cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()[-300:]
        raise RunnerError(f"{argv[0]} failed (exit {proc.returncode}): {detail}")
    if out is not None:
        out.write_bytes(proc.stdout)


def serve(repo_dir: Path, targets: list[str], log=print) -> str:
    """Build the repositories and serve them over HTTP on 127.0.0.1; return the base URL."""
    build(repo_dir, targets)
    sources.build(repo_dir / "www")  # burn-in tool source archives, as GitHub names them
    port = _free_port()
    with open(repo_dir / "http.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
             "--directory", str(repo_dir / "www")],
            stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    (repo_dir / "http.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    raise RunnerError(f"package repository server did not start (log: {repo_dir / 'http.log'})")


def stop(repo_dir: Path) -> None:
    """Stop the repository's HTTP server and the gpg-agent that signing started."""
    if (repo_dir / "gnupg").is_dir():
        external.run(["gpgconf", "--homedir", str(repo_dir / "gnupg"), "--kill", "gpg-agent"],
                       capture_output=True, check=False)
    pidfile = repo_dir / "http.pid"
    if pidfile.is_file():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
