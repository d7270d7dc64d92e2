"""Source archives of the burn-in tools, as the simulated rack's repository serves them.

Real: the archive names, their top folders and each build's interface. Each file is named
as GitHub names an archive download (Content-Disposition of ``/archive/refs/tags/v<V>.tar.gz``
is ``<repo>-<V>.tar.gz``, of ``/archive/<commit>.tar.gz`` is ``<repo>-<commit>.tar.gz``) and
holds one top folder of the same name, as ``git archive`` writes it (mtime = commit time,
pax comment = commit id, mode 775/664). The build interface is upstream's:

- nccl-tests v2.13.11 (https://github.com/NVIDIA/nccl-tests, README "Build"; Makefile and
  src/Makefile): ``make MPI=1 MPI_HOME=... CUDA_HOME=... NCCL_HOME=... [NVCC_GENCODE=...]``
  writes ``build/<test>_perf`` (all_reduce, all_gather, broadcast, reduce_scatter, reduce,
  alltoall, scatter, gather, sendrecv, hypercube);
- nvbandwidth v0.5 (https://github.com/NVIDIA/nvbandwidth, README "Build"; CMakeLists.txt):
  ``cmake .`` then ``make`` writes ``nvbandwidth``; needs nvcc and Boost program_options;
- gpu-burn at 9aefd7c (https://github.com/wilicc/gpu-burn, README "Building"; Makefile):
  ``make COMPUTE=<cc> CUDAPATH=<cuda>`` writes ``gpu_burn`` and ``compare.ptx``.

Each build fails where the real one would: no nvcc, no nccl.h, no mpi.h with MPI=1, no
Boost. Simulated: the compile. A "built" binary is the simulated tool
(``provision/sim/tools/<tool>.py``, copied as repo.py copies it into packages), and the
simulated nvcc only has to run. The tree's build files are in ``sources/<repo>/``.
"""
from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from provision.errors import RunnerError

HERE = Path(__file__).parent
TEMPLATES = HERE / "sources"
SUBDIR = "sources"


@dataclass(frozen=True)
class Source:
    """One upstream source archive: repository name, version as in the folder name, commit."""

    repo: str
    version: str
    commit: str
    commit_time: int
    tools: dict[str, str]  # path in the tree -> simulated tool (provision/sim/tools/<tool>.py)

    @property
    def folder(self) -> str:
        return f"{self.repo}-{self.version}"

    @property
    def file_name(self) -> str:
        return f"{self.folder}.tar.gz"


SOURCES = (
    Source("nccl-tests", "2.13.11", "8dfeab9eb9bdfdf13503e71e1f33e7f8a208b540", 1729790882,
           {"sim/all_reduce_perf": "all_reduce_perf"}),
    Source("nvbandwidth", "0.5", "d30ed1e093a4992d06e5fd98ef87930559581f3b", 1717785468,
           {"sim/nvbandwidth": "nvbandwidth"}),
    Source("gpu-burn", "9aefd7c0cc603bbc8c3c102f5338c6af26f8127c", "9aefd7c0cc603bbc8c3c102f5338c6af26f8127c",
           1712649433, {"sim/gpu_burn": "gpu_burn"}),
)


def build(www: Path) -> list[Path]:
    """Write every source archive under ``www/sources/``; return their paths."""
    out = www / SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for source in SOURCES:
        path = out / source.file_name
        path.write_bytes(archive(source))
        paths.append(path)
    return paths


def archive(source: Source) -> bytes:
    """The ``.tar.gz`` of one source tree, byte for byte the same on every call."""
    files = _tree(source)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": source.commit}) as tar:
        for name in sorted([*_folders(files), *files]):
            info = tarfile.TarInfo(f"{source.folder}/{name}" if name else source.folder)
            info.mtime, info.uid, info.gid, info.uname, info.gname = source.commit_time, 0, 0, "root", "root"
            if name in files:
                data, executable = files[name]
                info.size, info.mode = len(data), 0o775 if executable else 0o664
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type, info.mode = tarfile.DIRTYPE, 0o775
                tar.addfile(info)
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def _tree(source: Source) -> dict[str, tuple[bytes, bool]]:
    """Path in the tree -> (content, executable): the build files, then the simulated tools."""
    root = TEMPLATES / source.repo
    files = {p.relative_to(root).as_posix(): (p.read_bytes(), bool(p.stat().st_mode & 0o111))
             for p in root.rglob("*") if p.is_file()}
    for dest, tool in source.tools.items():
        script = HERE / "tools" / f"{tool}.py"
        if not script.is_file():
            raise RunnerError(f"{__file__}: source {source.repo}: no simulated tool {script.name}")
        files[dest] = (script.read_bytes(), True)
    return files


def _folders(files: dict) -> set[str]:
    """Every folder of the tree, the top one as ``""``."""
    folders = {""}
    for name in files:
        parts = name.split("/")[:-1]
        folders.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return folders
