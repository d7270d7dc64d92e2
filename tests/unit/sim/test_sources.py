"""The simulated rack's source archives: GitHub's names and layout, upstream's build interface.

The builds run here for real (make, cmake) against fake CUDA, NCCL, MPI and Boost homes.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from provision.sim import sources

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = ROOT / "roles" / "burnin_tools" / "defaults" / "main.yml"
NVCC = "#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.1'\n"


@pytest.fixture
def trees(tmp_path) -> dict[str, Path]:
    """Each archive unpacked under tmp_path/src: repo -> its top folder."""
    out = {}
    for path in sources.build(tmp_path / "www"):
        with tarfile.open(path) as tar:
            tar.extractall(tmp_path / "src", filter="tar")
    for source in sources.SOURCES:
        out[source.repo] = tmp_path / "src" / source.folder
    return out


@pytest.fixture
def homes(tmp_path) -> dict[str, Path]:
    """Fake install homes with the files the builds look for."""
    files = {"cuda/bin/nvcc": NVCC, "nccl/include/nccl.h": "", "mpi/include/mpi.h": "",
             "boost/include/boost/version.hpp": '#define BOOST_VERSION 107400\n#define BOOST_LIB_VERSION "1_74"\n',
             "boost/include/boost/config.hpp": "", "boost/include/boost/program_options.hpp": "",
             "boost/lib/libboost_program_options.a": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "cuda/bin/nvcc").chmod(0o755)
    return {name: tmp_path / name for name in ("cuda", "nccl", "mpi", "boost")} | {"none": tmp_path / "none"}


def run(argv: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False)


def test_names_and_top_folders_are_githubs(tmp_path):
    paths = sources.build(tmp_path)
    assert [p.name for p in paths] == ["nccl-tests-2.13.11.tar.gz", "nvbandwidth-0.5.tar.gz",
                                       "gpu-burn-9aefd7c0cc603bbc8c3c102f5338c6af26f8127c.tar.gz"]
    for path, source in zip(paths, sources.SOURCES):
        assert path.parent == tmp_path / "sources"
        with tarfile.open(path) as tar:
            names = tar.getnames()
            assert tar.pax_headers["comment"] == source.commit
        assert names[0] == source.folder and all(n.startswith(source.folder + "/") for n in names[1:])


def test_archives_are_deterministic(tmp_path):
    first = [hashlib.sha256(p.read_bytes()).hexdigest() for p in sources.build(tmp_path / "a")]
    assert first == [hashlib.sha256(p.read_bytes()).hexdigest() for p in sources.build(tmp_path / "b")]


def test_versions_match_the_role_defaults():
    defaults = yaml.safe_load(DEFAULTS.read_text())
    versions = {s.repo: s.version for s in sources.SOURCES}
    assert versions == {"nccl-tests": defaults["burnin_tools_nccl_tests_version"],
                        "nvbandwidth": defaults["burnin_tools_nvbandwidth_version"],
                        "gpu-burn": defaults["burnin_tools_gpu_burn_version"]}


def nccl_tests_make(tree: Path, homes: dict, **overrides) -> subprocess.CompletedProcess:
    args = {"MPI": "1", "MPI_HOME": homes["mpi"], "CUDA_HOME": homes["cuda"], "NCCL_HOME": homes["nccl"]} | overrides
    return run(["make", "-j4", *(f"{k}={v}" for k, v in args.items()),
                "NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"], tree)


def test_nccl_tests_builds_all_reduce_perf(trees, homes):
    proc = nccl_tests_make(trees["nccl-tests"], homes)
    assert proc.returncode == 0, proc.stderr
    binary = trees["nccl-tests"] / "build" / "all_reduce_perf"
    assert os.access(binary, os.X_OK)
    assert binary.read_text() == (sources.HERE / "tools" / "all_reduce_perf.py").read_text()
    assert binary.read_text().startswith("#!/usr/bin/env python3")
    assert os.access(trees["nccl-tests"] / "build" / "hypercube_perf", os.X_OK)


@pytest.mark.parametrize(("override", "error"), [
    ({"CUDA_HOME": "none"}, "nvcc: not found"),
    ({"NCCL_HOME": "none"}, "nccl.h: No such file or directory"),
    ({"MPI_HOME": "none"}, "mpi.h: No such file or directory"),
])
def test_nccl_tests_fails_like_upstream_without_a_dependency(trees, homes, override, error):
    proc = nccl_tests_make(trees["nccl-tests"], homes, **{k: homes[v] for k, v in override.items()})
    assert proc.returncode != 0 and error in proc.stderr
    assert not (trees["nccl-tests"] / "build" / "all_reduce_perf").exists()


def test_nccl_tests_without_mpi_needs_no_mpi_h(trees, homes):
    assert nccl_tests_make(trees["nccl-tests"], homes, MPI="0", MPI_HOME=homes["none"]).returncode == 0


def test_gpu_burn_builds_gpu_burn_and_compare_ptx(trees, homes):
    tree = trees["gpu-burn"]
    proc = run(["make", "COMPUTE=90", f"CUDAPATH={homes['cuda']}"], tree)
    assert proc.returncode == 0, proc.stderr
    assert os.access(tree / "gpu_burn", os.X_OK)
    assert (tree / "gpu_burn").read_text() == (sources.HERE / "tools" / "gpu_burn.py").read_text()
    assert ".target sm_90" in (tree / "compare.ptx").read_text()


def test_gpu_burn_fails_without_nvcc(trees, homes):
    proc = run(["make", "COMPUTE=90", f"CUDAPATH={homes['none']}"], trees["gpu-burn"])
    assert proc.returncode != 0 and "nvcc: not found" in proc.stderr
    assert not (trees["gpu-burn"] / "gpu_burn").exists()


def cmake_configure(tree: Path, homes: dict, nvcc: Path) -> subprocess.CompletedProcess:
    return run(["cmake", "-S", ".", "-B", "build", f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DCMAKE_CUDA_ARCHITECTURES=90",
                f"-DBOOST_ROOT={homes['boost']}"], tree)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_nvbandwidth_configures_and_builds(trees, homes):
    tree = trees["nvbandwidth"]
    proc = cmake_configure(tree, homes, homes["cuda"] / "bin" / "nvcc")
    assert proc.returncode == 0, proc.stderr
    proc = run(["cmake", "--build", "build", "-j", "4"], tree)
    assert proc.returncode == 0, proc.stderr
    assert os.access(tree / "build" / "nvbandwidth", os.X_OK)
    assert (tree / "build" / "nvbandwidth").read_text() == (sources.HERE / "tools" / "nvbandwidth.py").read_text()


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_nvbandwidth_fails_without_cuda(trees, homes):
    proc = cmake_configure(trees["nvbandwidth"], homes, homes["none"] / "bin" / "nvcc")
    assert proc.returncode != 0 and "is not a full path to an existing compiler tool" in proc.stderr
