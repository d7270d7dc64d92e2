"""The simulated rack's signed apt repository, built from ``packages.yaml`` and served on loopback.

Layout mirrors NVIDIA's flat CUDA repository (``compute/cuda/repos/debian12/x86_64/``, suite ``/``)
so that the roles' real-hardware path (apt repository + signed-by keyring) runs unchanged
with only the base URL pointed here. Packages are built with dpkg-deb, indexed with
apt-ftparchive and signed with gpg, as a real mirror is.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jinja2
import yaml

from provision.errors import RunnerError

HERE = Path(__file__).parent
REPO_SUBDIR = "compute/cuda/repos/debian12/x86_64"
KEY_NAME = "provision-sim.pub"
# Hardware and kernel views, copied straight into each node (not packaged): tool -> command.
# fio stands for the node's storage path (the checkpoint store and its bond), which is simulated too.
HARDWARE_TOOLS = {"dmesg": "dmesg", "lspci": "lspci", "fio": "fio"}
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), keep_trailing_newline=True,
                          undefined=jinja2.StrictUndefined, autoescape=False)


def package_specs() -> list[dict]:
    """The package list from packages.yaml."""
    return yaml.safe_load((HERE / "packages.yaml").read_text())["packages"]


def build(repo_dir: Path) -> Path:
    """Build every package into ``repo_dir/www/<REPO_SUBDIR>``, index and sign it; return that folder."""
    dist = repo_dir / "www" / REPO_SUBDIR
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in package_specs():
            _build_one(spec, Path(tmp) / spec["name"], dist)
    _run(["apt-ftparchive", "packages", "."], cwd=dist, out=dist / "Packages")
    _run(["apt-ftparchive", "-o", "APT::FTPArchive::Release::Origin=provision-sim",
          "-o", "APT::FTPArchive::Release::Label=provision-sim", "release", "."], cwd=dist, out=dist / "Release")
    _sign(repo_dir, dist)
    return dist


def _build_one(spec: dict, root: Path, dist: Path) -> None:
    for dest, source in spec["files"].items():
        path = root / dest.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if "tool" in source:
            tool = HERE / "tools" / f"{source['tool']}.py"
            if not tool.is_file():
                raise RunnerError(f"{HERE / 'packages.yaml'}: package {spec['name']}: no simulated tool {tool.name}")
            path.write_text(tool.read_text())
            path.chmod(0o755)
        else:
            path.write_text(source["text"])
    for service in spec.get("services", []):
        daemon = next(d for d, s in spec["files"].items() if s.get("tool") == "daemon")
        _render(root / "etc/init.d" / service, "init.d.j2", 0o755, service=service, daemon=daemon)
        _render(root / "lib/systemd/system" / f"{service}.service", "unit.service.j2", 0o644,
                service=service, daemon=daemon)
    _render(root / "DEBIAN/control", "control.j2", 0o644, pkg={"depends": None, **spec})
    version = str(spec["version"]).split(":", 1)[-1]
    _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root),
          str(dist / f"{spec['name']}_{version}_all.deb")])


def _render(path: Path, template: str, mode: int, **values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_ENV.get_template(template).render(**values))
    path.chmod(mode)


def _sign(repo_dir: Path, dist: Path) -> None:
    """Make a signing key for this rack, export it beside the repo, write InRelease and Release.gpg."""
    home = repo_dir / "gnupg"
    home.mkdir(mode=0o700, exist_ok=True)
    gpg = ["gpg", "--batch", "--homedir", str(home), "--pinentry-mode", "loopback", "--passphrase", ""]
    _run(gpg + ["--quick-gen-key", "provision simulated rack repository", "ed25519", "sign", "never"])
    _run(gpg + ["--armor", "--export"], out=dist / KEY_NAME)
    _run(gpg + ["--clearsign", "-o", str(dist / "InRelease"), str(dist / "Release")])
    _run(gpg + ["--armor", "--detach-sign", "-o", str(dist / "Release.gpg"), str(dist / "Release")])


def _run(argv: list[str], cwd: Path | None = None, out: Path | None = None) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RunnerError(f"{argv[0]} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()[-300:]}")
    if out is not None:
        out.write_bytes(proc.stdout)


def serve(repo_dir: Path, log=print) -> str:
    """Build the repository and serve it over HTTP on 127.0.0.1; return its base URL."""
    build(repo_dir)
    port = _free_port()
    with open(repo_dir / "http.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(repo_dir / "www")],
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
        subprocess.run(["gpgconf", "--homedir", str(repo_dir / "gnupg"), "--kill", "gpg-agent"],
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
