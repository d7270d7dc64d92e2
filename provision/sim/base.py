"""The simulated nodes' shared, read-only base root, made once with debootstrap.

Built as ``provision/sim/README.md`` describes: ``debootstrap --variant=minbase bookworm``
from the mirror apt is configured with, plus sshd, Python and the tools roles need.
The base is cached outside the checkout (``PROVISION_SIM_CACHE``, default
``/var/cache/provision-sim``) so fresh clones share it.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from provision import external
from provision.errors import RunnerError

BASE_VERSION = "bookworm-v6"
INCLUDE = [
    "systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "python3-apt", "python3-venv", "python3-pip",
    "python3-yaml", "iproute2", "procps", "ca-certificates", "sudo", "kmod", "pciutils", "util-linux",
    "init-system-helpers", "sysvinit-utils", "gpgv", "lsb-release", "gnupg",
]
# Installed with apt inside the new root (debootstrap does not resolve alternatives such as
# automake | automaken): what GPU servers carry before the stack goes on (DKMS and a compiler, the
# build tools of the burn-in tools: Open MPI, cmake, Boost), and Debian's builds of dnf and rpm,
# which Rocky Linux nodes run (see osflavor.py), and Debian's mpi4py (built against that Open MPI),
# through which the simulated all_reduce_perf talks MPI when mpirun starts it over several nodes.
EXTRA = ["dkms", "make", "g++", "cmake", "libopenmpi-dev", "openmpi-bin", "libboost-program-options-dev",
         "dnf", "python3-dnf", "dnf-plugins-core", "rpm", "python3-mpi4py"]
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Units a node's systemd does not run: a container has no console to start gettys on (systemd's
# CONTAINER_INTERFACE) and no hardware for udev's units to manage; the periodic jobs would only add load.
# D-Bus and logind run, as on a server: `shutdown -r` (Ansible's reboot module) asks logind over D-Bus.
MASKED = ["getty.target", "console-getty.service", "systemd-udevd.service",
          "systemd-udev-trigger.service", "systemd-udev-settle.service", "apt-daily.timer",
          "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer"]
# The journal in memory, small: a rack of nodes each writing a persistent journal to disk costs I/O
# and space for logs nobody reads (journald.conf(5): Storage=volatile, RuntimeMaxUse=).
JOURNALD = "[Journal]\nStorage=volatile\nRuntimeMaxUse=8M\n"


def cache_dir() -> Path:
    """Folder holding cached bases (env ``PROVISION_SIM_CACHE``)."""
    return Path(os.environ.get("PROVISION_SIM_CACHE", "/var/cache/provision-sim"))


def base_path() -> Path:
    """Path of the current base root."""
    return cache_dir() / f"base-{BASE_VERSION}"


def apt_mirror() -> str:
    """The Debian mirror this machine's apt uses (first ``URIs:``/``deb`` line), else deb.debian.org."""
    for src in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]:
        if not src.is_file():
            continue
        for line in src.read_text().splitlines():
            m = re.match(r"\s*(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s*)?)(\S+/debian)/?\s*", line)
            if m:
                return m.group(1)
    return DEFAULT_MIRROR


def ensure_base(log=print) -> Path:
    """Build the base root if it is missing; return its path. Raises RunnerError on failure."""
    base = base_path()
    if (base / ".provision-base-ok").exists():
        return base
    if shutil.which("debootstrap") is None:
        raise external.missing("debootstrap")
    tmp = base.with_name(base.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    log(f"sim: building base root {base} with debootstrap (about a minute, once)")
    argv = ["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}", "bookworm", str(tmp), apt_mirror()]
    proc = external.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise RunnerError(f"debootstrap failed (exit {proc.returncode}): {' | '.join(tail)}")
    _install_extra(tmp)
    _finish(tmp)
    tmp.rename(base)
    return base


def _install_extra(root: Path) -> None:
    """apt-get install EXTRA inside the root, with /proc mounted for the packages' scripts."""
    external.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    try:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        proc = external.run(["chroot", str(root), "apt-get", "install", "-y", "-q", "--no-install-recommends",
                             *EXTRA],
                            capture_output=True, text=True, env=env, check=False)
        external.run(["chroot", str(root), "apt-get", "clean"], capture_output=True, check=False)
    finally:
        external.run(["umount", "-l", str(root / "proc")], check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise RunnerError(f"apt-get install in the base root failed (exit {proc.returncode}): {' | '.join(tail)}")


def _finish(root: Path) -> None:
    """Drop the base's own host keys, trust this machine's extra CAs, configure sshd for the rack."""
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    extra = Path("/usr/local/share/ca-certificates")
    if extra.is_dir():
        shutil.copytree(extra, root / "usr/local/share/ca-certificates", dirs_exist_ok=True)
        external.run(["chroot", str(root), "update-ca-certificates"], capture_output=True, check=True)
    conf = root / "etc/ssh/sshd_config.d/provision-sim.conf"
    conf.write_text(
        "# simulated rack: key-only root login, no PAM, many parallel connections\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
        "MaxStartups 200:30:400\nHostKey /etc/ssh/ssh_host_ed25519_key\n"
    )
    pipconf = root / "etc/pip.conf"
    pipconf.write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    for unit in MASKED:
        (root / "etc/systemd/system" / unit).unlink(missing_ok=True)
        (root / "etc/systemd/system" / unit).symlink_to("/dev/null")
    (root / "etc/systemd/journald.conf.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/systemd/journald.conf.d/provision-sim.conf").write_text(JOURNALD)
    (root / "etc/machine-id").write_text("")  # each node's systemd makes its own at boot (machine-id(5))
    external.run(["chroot", str(root), "systemctl", "enable", "ssh.service"], capture_output=True, check=True)
    external.run(["chroot", str(root), "systemctl", "set-default", "multi-user.target"], capture_output=True,
                 check=True)
    (root / ".provision-base-ok").write_text(BASE_VERSION + "\n")
