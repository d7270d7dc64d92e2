"""The compatibility tables (``data/*.yaml``, each row with its source) and lookups over them.

Versions are compared as tuples of integers (``ver("8.9.6.50") == (8, 9, 6, 50)``); a table row
written "8.9.6" matches any "8.9.6.x". Tables:

- cuda_driver.yaml: CUDA toolkit release -> minimum Linux driver (CUDA release notes, Table 3), and
  the minimum driver of CUDA minor version compatibility per major;
- cudnn.yaml: cuDNN release -> the CUDA range of one of its builds (cuDNN support matrix);
- nccl.yaml: NCCL version -> the CUDA versions NVIDIA builds packages for;
- tensorflow.yaml, pytorch.yaml, jax.yaml: framework release -> Python range, CUDA (and cuDNN),
  and the GPU architectures its binaries hold;
- gpu_arch.yaml: compute capability -> architecture and the first CUDA toolkit that builds for it;
- python.yaml: the python3 each target distribution ships.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

from provision.errors import ProfileError

DATA = Path(__file__).with_name("data")
_NUM = re.compile(r"\d+")


def ver(text: object) -> tuple[int, ...]:
    """``"12.4.1"`` -> (12, 4, 1); the leading numeric dotted part only ("2.4.1+cu118" -> (2, 4, 1))."""
    head = re.match(r"\d+(\.\d+)*", str(text).strip())
    return tuple(int(n) for n in _NUM.findall(head.group(0))) if head else ()


def matches(row: object, version: object) -> bool:
    """Whether ``version`` is the release ``row`` names: its leading components equal row's."""
    r = ver(row)
    return bool(r) and ver(version)[:len(r)] == r


def minor(version: object) -> str:
    """"12.4.1" -> "12.4"."""
    return ".".join(str(n) for n in ver(version)[:2])


@functools.cache
def table(name: str) -> dict:
    """``data/<name>.yaml``. Raises ProfileError when it is missing or not a mapping."""
    path = DATA / f"{name}.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"{path}: cannot read the compatibility table: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a compatibility table is a mapping")
    return data


def rows(name: str, key: str) -> list[dict]:
    return list(table(name).get(key) or [])


def toolkit(cuda: str) -> dict | None:
    """The cuda_driver row of toolkit ``cuda``: the exact release, else the newest release of its
    major.minor (a site's "12.4.0" and the table's "12.4.1" need drivers of one branch)."""
    found = [r for r in rows("cuda_driver", "toolkits") if ver(r["cuda"]) == ver(cuda)]
    if not found:
        found = sorted((r for r in rows("cuda_driver", "toolkits") if minor(r["cuda"]) == minor(cuda)),
                       key=lambda r: ver(r["cuda"]))[-1:]
    return found[0] if found else None


def toolkits() -> list[str]:
    """The newest release of each CUDA major.minor in the table, oldest first."""
    newest: dict[str, str] = {}
    for r in rows("cuda_driver", "toolkits"):
        if minor(r["cuda"]) not in newest or ver(r["cuda"]) > ver(newest[minor(r["cuda"])]):
            newest[minor(r["cuda"])] = r["cuda"]
    return sorted(newest.values(), key=ver)


def minor_compat(cuda_major: str) -> dict | None:
    """The minimum driver that runs any toolkit of ``cuda_major`` by minor version compatibility."""
    return next((r for r in rows("cuda_driver", "minor_version_compatibility")
                 if str(r["cuda_major"]) == str(cuda_major)), None)


def cudnn_builds(cudnn: str) -> list[dict]:
    """The cudnn rows of release ``cudnn`` (one per CUDA major build)."""
    return [r for r in rows("cudnn", "releases") if matches(r["cudnn"], cudnn)]


def cudnn_releases() -> list[str]:
    return sorted({str(r["cudnn"]) for r in rows("cudnn", "releases")}, key=ver)


def nccl_build(nccl: str) -> dict | None:
    return next((r for r in rows("nccl", "builds") if ver(r["nccl"]) == ver(nccl)), None)


def arch(compute_capability: str) -> dict | None:
    """The gpu_arch row of ``compute_capability`` ("8.9")."""
    return next((r for r in rows("gpu_arch", "architectures")
                 if ver(r["compute_capability"]) == ver(compute_capability)), None)


def distro_python(target: str) -> dict | None:
    return next((r for r in rows("python", "distributions") if r["target"] == target), None)


def kernels(archs: list[str], compute_capability: str) -> tuple[str, str | None]:
    """("sass", "sm_80") when a cubin runs on a GPU of ``compute_capability`` (same major, minor at
    most the GPU's: CUDA binary compatibility), ("ptx", "compute_80") when only PTX at or below it
    can be JIT-compiled by the driver, ("none", None) otherwise. CUDA C++ Programming Guide,
    "Binary Compatibility" and "PTX Compatibility"
    (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#binary-compatibility).

    ``archs`` are written as the frameworks' build settings write them: ``sm_XY`` a cubin only,
    ``compute_XY`` a cubin *and* PTX of XY (TensorFlow's configure.py: '"compute_xy" to include both
    virtual and binary GPU code, or as "sm_xy" to only include the binary code',
    https://github.com/tensorflow/tensorflow/blob/master/configure.py; JAX's .bazelrc: '"compute" means
    we emit both cubin and PTX', https://github.com/jax-ml/jax/blob/jax-v0.5.3/.bazelrc). PyTorch's
    rows list the cubins cuobjdump found (sm_XY only)."""
    gpu = ver(compute_capability)
    sass = sorted((_cc(a), a) for a in archs if a.startswith(("sm_", "compute_")))
    fit = [a for cc, a in sass if cc[:1] == gpu[:1] and cc <= gpu]
    if fit:
        return "sass", "sm_" + fit[-1].split("_", 1)[1]
    ptx = sorted((_cc(a), a) for a in archs if a.startswith("compute_"))
    jit = [a for cc, a in ptx if cc <= gpu]
    return ("ptx", jit[-1]) if jit else ("none", None)


def _cc(name: str) -> tuple[int, ...]:
    """"sm_89" / "compute_80" / "sm_90a" -> (8, 9) / (8, 0) / (9, 0)."""
    digits = re.sub(r"\D", "", name.split("_", 1)[1])
    return (int(digits[:-1]), int(digits[-1])) if len(digits) >= 2 else ()
