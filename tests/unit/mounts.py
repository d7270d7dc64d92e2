"""Mounts the unit tests make as root, unmounted afterwards: a small tmpfs (a disk that fills up)
and a folder bind-mounted read-only on itself (root does not honour a file's mode). Each skips its
test with the reason where it cannot mount (not root, no mount(8), a sandbox without the right)."""
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str = "256k") -> Iterator[Path]:
    """``folder`` (made if absent) as a tmpfs of ``size``."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], "a small tmpfs")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """``folder`` (made if absent) bind-mounted read-only on itself."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["mount", "--bind", str(folder), str(folder)], "a read-only bind mount")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def fill(mount: Path, leave: int = 0) -> Path:
    """Fill ``mount`` with a file ``filler`` but ``leave`` bytes; returns the filler."""
    stat = os.statvfs(mount)
    filler = mount / "filler"
    with open(filler, "wb") as handle:
        handle.write(b"x" * max(stat.f_bavail * stat.f_frsize - leave, 0))
    stat = os.statvfs(mount)
    assert stat.f_bavail * stat.f_frsize <= leave
    return filler


def _mount(argv: list[str], what: str) -> None:
    if os.geteuid() != 0:
        pytest.skip(f"{what} needs root")
    try:
        done = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        pytest.skip(f"cannot run mount for {what}: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount {what} here: {done.stderr.strip()}")
