"""Where a file the operator names goes (``provision report --out``, ``--prometheus-out``), judged for
what it is before anything is written there:

- nothing yet: written there, when its folder exists;
- a regular file: replaced (the writers write a temp file beside it and rename it over it);
- a folder: the output's own name inside it (``report.html``, ``burnin.prom``), as ``cp`` does: a
  node_exporter textfile folder is the usual ``--prometheus-out``;
- a symlink: written through to what it names, the link kept; refused when it names nothing (GNU cp's
  "not writing through dangling symlink"), or when it sits in a sticky world-writable folder (/tmp) and
  neither its owner nor the folder's is this user: the kernel's fs.protected_symlinks rule, which a
  write by rename would otherwise step around;
- standard output or error (``-``, ``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/2``, or a link to
  one of them): written to this process's own descriptor, already open, never replaced;
- anything else (a FIFO, a device, a socket) is refused: opening a FIFO blocks until a reader comes,
  and a rename over a device node replaces the system's node.

Raises ProvisionError (exit 2) with one line naming the option and the path.
"""
from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path

from provision.errors import ProvisionError

STDOUT = "-"
LINKS_MAX = 40  # as the kernel's MAXSYMLINKS
STDIO = re.compile(r"/(?:dev|proc/(?:self|thread-self|\d+))/fd/(\d+)")
KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISSOCK, "a socket"))


@dataclasses.dataclass(frozen=True)
class Destination:
    """A checked place to write: ``path`` (a regular file or nothing yet), or ``fd`` (1 or 2)."""

    path: Path | None = None
    fd: int | None = None

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else ("standard output" if self.fd == 1 else "standard error")


def resolve(given: str, name: str, option: str) -> Destination:
    """Where ``option given`` writes; ``name`` is the output's file name inside a folder."""
    if not given.strip() or "\0" in given:
        raise ProvisionError(f"{option} {_cut(repr(given))}: not a path (an empty value or a NUL byte)")
    shown = f"{option} {_cut(given)}"
    if given == STDOUT:
        return Destination(fd=1)
    path, fd = _follow(Path(os.path.abspath(given)), shown)
    if fd is None and path.is_dir():
        path, fd = _follow(path / name, shown)
        if fd is not None or path.is_dir():
            raise ProvisionError(f"{shown}: {_cut(str(path))} in that folder is not a file: name the file to write")
    return Destination(fd=fd) if fd is not None else \
        Destination(path=_judged(path, shown, Path(os.path.abspath(given))))


def _follow(path: Path, shown: str) -> tuple[Path, int | None]:
    """``path`` with the symlinks of its last component followed, or the descriptor (1, 2) it names."""
    for hop in range(LINKS_MAX):
        fd = _stdio(path, shown)
        if fd is not None:
            return path, fd
        if not path.is_symlink():
            if hop and not path.exists():
                raise ProvisionError(f"{shown}: a symlink to {_cut(str(path))}, which does not exist: not "
                                     "written through (name the file itself)")
            return path, None
        _may_follow(path, shown)
        following = Path(os.path.realpath(path.parent)) / os.readlink(path)  # an absolute target replaces all
        path = (Path(os.path.realpath(following)) if following.name in ("", "..") else
                Path(os.path.realpath(following.parent)) / following.name)  # its folders' own links resolved
    raise ProvisionError(f"{shown}: more than {LINKS_MAX} symlinks in a row (a loop?)")


def _stdio(path: Path, shown: str) -> int | None:
    """1 or 2 when ``path`` is this process's standard output or error; ProvisionError for another descriptor."""
    folder = os.path.realpath(path.parent)
    found = STDIO.fullmatch(f"{folder}/{path.name}")
    if not found:
        return None
    pid = folder.split("/")[2] if folder.startswith("/proc/") else "self"
    if pid not in ("self", "thread-self", str(os.getpid())) or found.group(1) not in ("1", "2"):
        raise ProvisionError(f"{shown}: another descriptor than standard output or error ({path})")
    return int(found.group(1))


def _may_follow(link: Path, shown: str) -> None:
    """The kernel's fs.protected_symlinks rule: in a sticky world-writable folder, a link is followed only
    when this user owns it or the link and the folder have the same owner."""
    folder, mine = link.parent.stat(), link.lstat()
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if shared and mine.st_uid not in (os.geteuid(), folder.st_uid):
        raise ProvisionError(f"{shown}: a symlink another user (uid {mine.st_uid}) owns in the shared folder "
                             f"{link.parent}: not followed (as the kernel's fs.protected_symlinks)")


def _judged(path: Path, shown: str, given: Path) -> Path:
    """``path`` when it is a regular file, or nothing yet in an existing folder; else ProvisionError."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise ProvisionError(f"{shown}: folder {_cut(str(path.parent))} does not exist") from None
        return path
    except OSError as exc:
        raise ProvisionError(f"{shown}: {exc.strerror}") from None
    if stat.S_ISREG(mode):
        return path
    kind = next((what for test, what in KINDS if test(mode)), "not a regular file")
    what = kind if path == given else f"{_cut(str(path))} is {kind}"
    raise ProvisionError(f"{shown}: {what}: refused (name a regular file, a folder, or - for standard output)")


def _cut(text: str, most: int = 200) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def write_stream(fd: int, text: str) -> None:
    """``text`` whole on the open descriptor ``fd`` (standard output or error). Raises OSError."""
    from provision.results.store import write_all

    write_all(fd, text.encode())
