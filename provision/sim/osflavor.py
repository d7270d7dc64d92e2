"""What makes a simulated node one distribution or another: its release files and package manager.

Every node runs on the same Debian 12 base root (``base.py``); a node of another OS gets, in its
own overlay upper dir, the release files that distribution ships (``os/<os>.yaml``, sources
there), so Ansible's facts, ``lsb_release`` and the burn-in read it as that OS. A Rocky Linux 9
node also gets rpm's database with the packages its root already carries (the base's files under
the Rocky package names that the roles ask for: ``ROCKY_BASE``) and the Rocky repository file, so
that real dnf runs against real RPM repositories served on loopback.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

from provision import external
from provision.errors import ProvisionError, RunnerError
from provision.sim import snapshot

HERE = Path(__file__).with_name("os")
OS_NAMES = tuple(snapshot.OS_TARGET)
# Rocky 9 package names whose files the Debian base root already holds (base.INCLUDE): recorded in
# the node's rpm database so that dnf sees them installed, as it would on a Rocky server.
ROCKY_BASE = ["bash", "coreutils", "glibc", "python3", "python3-pip", "python3-dnf", "dnf", "rpm", "gnupg2",
              "dnf-plugins-core", "python3-dnf-plugin-versionlock", "openssh-server", "sudo", "kmod",
              "pciutils", "procps-ng", "iproute", "make", "gcc", "gcc-c++", "cmake", "openmpi", "openmpi-devel",
              "boost-devel", "boost-program-options", "tar", "gzip", "xz", "curl", "ca-certificates"]
ROCKY_REPOS = ("BaseOS", "AppStream", "CRB")
# Distribution packages that NVIDIA's rhel9 packages require and the base does not carry, served by
# the rack's Rocky and EPEL mirror under their Rocky 9.4 / EPEL 9 names and versions (versions from
# Rocky 9.4's and EPEL 9's package listings, https://dl.rockylinux.org/vault/rocky/9.4/ and
# https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/Packages/; not re-checked: inferred).
ROCKY_MIRROR = {"BaseOS": [("grubby", "8.40-61.el9")],
                "AppStream": [("opencl-filesystem", "1.0-16.el9"), ("ocl-icd", "2.2.13-4.el9")],
                "EPEL": [("dkms", "3.1.8-1.el9")]}


def load(os_name: str) -> dict:
    if os_name not in OS_NAMES:
        raise ProvisionError(f"--os {os_name!r}: known: {', '.join(OS_NAMES)}")
    return yaml.safe_load((HERE / f"{os_name}.yaml").read_text())


def apply(upper: Path, os_name: str, repo_url: str, os_rpm: Path | None) -> None:
    """Write ``os_name``'s release files into a node's upper dir (whiteouts for removed files)."""
    spec = load(os_name)
    for rel in spec.get("remove", []):
        _whiteout(upper / rel)
    for rel, text in (spec.get("files") or {}).items():
        path = upper / rel
        if path.is_symlink() or path.exists():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel, target in (spec.get("links") or {}).items():
        (upper / rel).parent.mkdir(parents=True, exist_ok=True)
        (upper / rel).symlink_to(target)
    if spec["family"] == "redhat":
        _rocky_repos(upper, repo_url)
        if os_rpm is None:
            raise RunnerError("a Rocky node needs the base rpm (provision-sim-rocky9-os)")
        _rpm_db(upper, os_rpm)


def _whiteout(path: Path) -> None:
    """An overlayfs whiteout: a 0/0 character device hides the lower file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.mknod(path, stat.S_IFCHR | 0o000, os.makedev(0, 0))


def _rocky_repos(upper: Path, repo_url: str) -> None:
    """Rocky's own repositories (rocky.repo, CRB off as Rocky ships it), pointed at this rack's mirror."""
    lines = []
    for name in ROCKY_REPOS:
        lines += [f"[{name.lower()}]", f"name=Rocky Linux $releasever - {name}",
                  f"baseurl={repo_url}/rocky/9/{name}/x86_64/os/", "gpgcheck=0",
                  f"enabled={0 if name == 'CRB' else 1}", ""]
    path = upper / "etc/yum.repos.d/rocky.repo"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def _rpm_db(upper: Path, os_rpm: Path) -> None:
    argv = ["rpm", "--root", str(upper), "--dbpath", "/var/lib/rpm", "-i", "--justdb", "--nodeps",
            "--noscripts", "--nosignature", str(os_rpm)]
    proc = external.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RunnerError(f"rpm could not record the Rocky base in {upper}: {proc.stderr.strip()[-200:]}")

