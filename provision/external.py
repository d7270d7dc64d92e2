"""Programs this machine runs (not the nodes): the Debian package of each, and one way to start them.

Every program ``provision`` starts on the controller goes through ``run`` or ``popen``, so a
program that is not installed is one line naming the Debian package and the ``make`` target that
installs it (exit status MISSING_PROGRAM), never a FileNotFoundError. ``PACKAGES`` is that map;
``tests/unit/test_external.py`` finds every program the code, the tests and ``bench/`` start and
checks that it is here (or in the test's own table) and that the Makefile installs its package.
Package names are Debian 12's (``apt-cache show``; ``dpkg -S`` of the installed program).
"""
from __future__ import annotations

import subprocess
from typing import NamedTuple

from provision.errors import MissingProgramError


class Package(NamedTuple):
    """The Debian package that gives a program, and the ``make`` target that installs it."""

    name: str
    target: str


_SETUP, _SIM = "make setup", "make sim-base"
# Program -> its package. setup: every controller (APT_PACKAGES); sim-base: the simulated rack only
# (SIM_APT_PACKAGES). gpg and gpgconf ship in packages of their own that gnupg depends on, with
# gpg-agent, which signing needs.
PACKAGES: dict[str, Package] = {
    "ssh": Package("openssh-client", _SETUP),  # Ansible's connection; `ssh -G` (provision/engine/sshconfig.py)
    "ipmitool": Package("ipmitool", _SETUP),  # a BMC over IPMI (provision/bmc/ipmi.py)
    "scontrol": Package("slurm-client", "make test"),  # `burnin --drain slurm`; a Slurm site has it
    "debootstrap": Package("debootstrap", _SIM),
    "chroot": Package("coreutils", _SETUP),
    "timeout": Package("coreutils", _SETUP),  # `burnin --local` (provision/engine/local.py) wraps each tool in it
    "mount": Package("mount", _SIM),
    "umount": Package("mount", _SIM),
    "dpkg-deb": Package("dpkg", _SIM),
    "apt-ftparchive": Package("apt-utils", _SIM),
    "gpg": Package("gnupg", _SIM),
    "gpgconf": Package("gnupg", _SIM),
    "rpm": Package("rpm", _SIM),
    "rpmbuild": Package("rpm", _SIM),
    "rpmsign": Package("rpm", _SIM),
    "createrepo_c": Package("createrepo-c", _SIM),
    "modifyrepo_c": Package("createrepo-c", _SIM),
    "nsenter": Package("util-linux", _SIM),  # a service fault runs systemctl inside a node (provision/sim/faults.py)
}


def missing(program: str) -> MissingProgramError:
    """The one-line error for ``program`` not found on PATH (its package when known)."""
    name = program.rsplit("/", 1)[-1]
    pkg = PACKAGES.get(name)
    if pkg is None:
        return MissingProgramError(f"{name} not found: it is not installed on this machine")
    return MissingProgramError(f"{name} not found: install Debian package {pkg.name} ({pkg.target} installs it)")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, **kwargs)``. Raises MissingProgramError when ``argv[0]`` is not installed."""
    try:
        return subprocess.run(argv, **kwargs)
    except FileNotFoundError as exc:
        raise _missing_or(exc, argv, kwargs) from None


def popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen(argv, **kwargs)``. Raises MissingProgramError when ``argv[0]`` is not installed."""
    try:
        return subprocess.Popen(argv, **kwargs)
    except FileNotFoundError as exc:
        raise _missing_or(exc, argv, kwargs) from None


def _missing_or(exc: FileNotFoundError, argv: list[str], kwargs: dict) -> Exception:
    """MissingProgramError, unless what was not found is the working folder (``cwd``): a bug, kept."""
    cwd = kwargs.get("cwd")
    if cwd is not None and exc.filename is not None and str(exc.filename) == str(cwd):
        return exc
    return missing(argv[0])
