"""The stack check: the versions the roles will install against the compatibility tables (``compat``).

A ``Stack`` is one host's driver, CUDA toolkit, cuDNN, NCCL build, the interpreter its framework
virtualenvs are made from (``framework_venv_python``: one for every env, as the role does) and
each env's pinned packages, with the GPU's compute capability from its hardware profile and the
node's OS target. ``check`` returns its findings (``proposal.nearest`` the consistent stack with
the fewest and smallest changes, or None).

Rules, each with the source its finding cites:
- the toolkit builds for the GPU's architecture (gpu_arch.yaml);
- the driver is at least the toolkit's minimum (an error), or only its major's minor version
  compatibility minimum (a warning: PTX newer than the driver cannot be JIT-compiled);
- cuDNN has a build for the toolkit's CUDA major covering its minor (above the support
  matrix's newest minor: a warning);
- NVIDIA publishes the NCCL version for ``nccl_cuda_version``, of the toolkit's major;
- TensorFlow: its Python range; a wheel that loads the system's CUDA and cuDNN must have the
  tested CUDA and cuDNN (a newer cuDNN minor: a warning); ``tensorflow-gpu`` only where the
  release published it; PyTorch and JAX: Python range, the wheel's CUDA variant and the driver it
  needs (their wheels bundle the CUDA libraries); every framework: kernels for the GPU's
  architecture (cubins of its major at or below it), else PTX JIT (a warning), else none (an error).

What the tables do not cover is an UNKNOWN finding, never a silent pass: a GPU architecture, a
toolkit, cuDNN or NCCL release, a framework release or a wheel whose architectures are not in the
tables, an unpinned framework, a Python the inventory does not fix. Each names what was not checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.plan import ERROR, INFO, UNKNOWN, WARNING, Finding
from provision.plan.compat import (arch, cudnn_builds, distro_python, kernels, minor,
                                   minor_compat, nccl_build, rows, toolkit, ver)

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[([^\]]*)\])?\s*(==\s*([^\s;,]+))?\s*$")
INTERPRETER = re.compile(r"python(\d+\.\d+)$")
PYTHONS = ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13")  # CPython 3 releases the tables span
FRAMEWORKS = {"tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow", "torch": "pytorch", "jax": "jax"}
CUDA_RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"


def normalize(name: str) -> str:
    """PEP 503 name normalization (https://peps.python.org/pep-0503/#normalized-names)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Package:
    """One entry of an env's ``packages``: ``name`` (PEP 503), ``extras``, ``version`` ('' unpinned)."""

    name: str
    extras: tuple[str, ...]
    version: str
    spec: str

    @classmethod
    def parse(cls, spec: str) -> "Package":
        m = REQUIREMENT.match(str(spec).split(";")[0])  # an environment marker (PEP 508) does not change the pin
        if m is None:
            return cls(normalize(str(spec).split("=")[0].split(">")[0].split("<")[0].split("[")[0].strip() or "?"),
                       (), "", str(spec))
        extras = tuple(e.strip() for e in (m.group(3) or "").split(",") if e.strip())
        return cls(normalize(m.group(1)), extras, m.group(5) or "", str(spec))

    def pin(self, name: str, version: str) -> "Package":
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return Package(name, self.extras, version, f"{name}{extras}=={version}")


@dataclass(frozen=True)
class Env:
    name: str
    packages: tuple[Package, ...]


@dataclass(frozen=True)
class Stack:
    """One host's planned stack; versions as the roles' variables hold them."""

    target: str | None
    gpu: str
    compute_capability: str
    driver: str
    cuda: str
    cudnn: str
    nccl: str
    nccl_cuda: str
    interpreter: str
    envs: tuple[Env, ...] = ()

    @property
    def python(self) -> str | None:
        """The envs' Python major.minor: from the interpreter's name, else the target's python3."""
        m = INTERPRETER.search(self.interpreter)
        if m:
            return m.group(1)
        row = distro_python(self.target) if self.target else None
        return str(row["python3"]) if row else None


def check(s: Stack) -> list[Finding]:
    """Every finding on ``s``, errors first within each part."""
    out = _system(s)
    for env in s.envs:
        for package in env.packages:
            out += pin_findings(s, env, package)
    return out


def _system(s: Stack) -> list[Finding]:
    out: list[Finding] = []
    a = arch(s.compute_capability)
    if a is None:
        out.append(Finding(UNKNOWN, f"gpu {s.gpu}", f"compute capability {s.compute_capability} is not in the table: "
                           "the first CUDA toolkit that builds for it is not checked",
                           "provision/plan/data/gpu_arch.yaml"))
    elif ver(s.cuda) < ver(a["cuda_min"]):
        out.append(Finding(ERROR, f"cuda {s.cuda}", f"cannot build for {a['arch']} (sm_{_sm(s.compute_capability)}, "
                           f"the {s.gpu}): that needs CUDA {a['cuda_min']} or newer", a["source"]))
    t = toolkit(s.cuda)
    if t is None:
        out.append(Finding(UNKNOWN, f"cuda {s.cuda}", "not in the release notes' table: its driver is not checked",
                           "provision/plan/data/cuda_driver.yaml"))
    elif ver(s.driver) < ver(t["driver_min"]):
        compat = minor_compat(str(ver(s.cuda)[0]))
        if compat is not None and ver(s.driver) >= ver(compat["driver_min"]):
            out.append(Finding(WARNING, f"driver {s.driver}", f"below CUDA {t['cuda']}'s {t['driver_min']}: it runs by "
                               f"minor version compatibility (>= {compat['driver_min']}), but PTX that CUDA "
                               f"{t['cuda']} compiles cannot be JIT-compiled by this driver", compat["source"]))
        else:
            out.append(Finding(ERROR, f"driver {s.driver}", f"CUDA {t['cuda']} needs driver >= {t['driver_min']}",
                               t["source"]))
    out += _cudnn(s)
    out += _nccl(s)
    python = s.python
    if python is None:
        out.append(Finding(UNKNOWN, f"python {s.interpreter}", "its version depends on the node's OS, which the "
                           "inventory does not say (set provision_os): framework Python ranges are not checked",
                           "provision/plan/data/python.yaml"))
    elif s.target and INTERPRETER.search(s.interpreter):
        row = distro_python(s.target)
        if row is not None and str(row["python3"]) != python:
            out.append(Finding(WARNING, f"python {s.interpreter}", f"{s.target}'s python3 is {row['python3']}: the "
                               f"role runs `{s.interpreter} -m venv`, so the site must install Python {python} first",
                               row["source"]))
    return out


def _cudnn(s: Stack) -> list[Finding]:
    builds = cudnn_builds(s.cudnn)
    if not builds:
        return [Finding(UNKNOWN, f"cudnn {s.cudnn}", "not in the support matrix table: its CUDA builds are not checked",
                        "provision/plan/data/cudnn.yaml")]
    major = ver(s.cuda)[:1]
    mine = [b for b in builds if ver(b["cuda_min"])[:1] == major]
    if not mine:
        spans = ", ".join(f"{b['cuda_min']}-{b['cuda_max']}" for b in builds)
        return [Finding(ERROR, f"cudnn {s.cudnn}", f"has no build for CUDA {major[0]} (its builds: CUDA {spans})",
                        builds[0]["source"])]
    if any(ver(b["cuda_min"]) <= ver(minor(s.cuda)) <= ver(b["cuda_max"]) for b in mine):
        return []
    b = mine[0]
    if ver(minor(s.cuda)) < ver(b["cuda_min"]):
        return [Finding(ERROR, f"cudnn {s.cudnn}", f"its CUDA {major[0]} build needs CUDA {b['cuda_min']} or newer, "
                        f"not {minor(s.cuda)}", b["source"])]
    return [Finding(WARNING, f"cudnn {s.cudnn}", f"the support matrix lists CUDA {b['cuda_min']}-{b['cuda_max']}, not "
                    f"{minor(s.cuda)}: it loads by minor version compatibility, untested", b["source"])]


def _nccl(s: Stack) -> list[Finding]:
    build = nccl_build(s.nccl)
    if build is None:
        return [Finding(UNKNOWN, f"nccl {s.nccl}", "not in the table of NVIDIA's builds: its CUDA builds are not "
                        "checked",
                        "provision/plan/data/nccl.yaml")]
    cudas = [str(c) for c in build["cuda"]]
    if minor(s.nccl_cuda) not in cudas:
        return [Finding(ERROR, f"nccl {s.nccl}+cuda{s.nccl_cuda}", f"NVIDIA builds NCCL {s.nccl} for CUDA "
                        f"{', '.join(cudas)} only: the package does not exist", build["source"])]
    if ver(s.nccl_cuda)[:1] != ver(s.cuda)[:1]:
        return [Finding(ERROR, f"nccl {s.nccl}+cuda{s.nccl_cuda}", f"built for CUDA {ver(s.nccl_cuda)[0]}, the "
                        f"toolkit is CUDA {ver(s.cuda)[0]}", build["source"])]
    if ver(s.nccl_cuda) > ver(minor(s.cuda)):
        return [Finding(WARNING, f"nccl {s.nccl}+cuda{s.nccl_cuda}", f"built for a newer CUDA than the toolkit "
                        f"({minor(s.cuda)})", build["source"])]
    return []


def pin_findings(s: Stack, env: Env, p: Package) -> list[Finding]:
    """The findings on one package pin of ``env`` (none for a package that is not a framework)."""
    kind = FRAMEWORKS.get(p.name)
    if kind is None:
        return []
    subject = f"env {env.name}: {p.spec}"
    if not p.version:
        return [Finding(UNKNOWN, subject, "not pinned with ==: the plan cannot check its Python range, CUDA or "
                        "kernels, and pip picks whatever is newest on the day",
                        "https://pip.pypa.io/en/stable/topics/repeatable-installs/")]
    row = release(kind, p.version)
    if row is None:
        return [Finding(UNKNOWN, subject, f"release not in the {kind} table ({_span(kind)}): its Python range, CUDA "
                        f"and kernels for the {s.gpu} are not checked", f"provision/plan/data/{kind}.yaml")]
    return {"tensorflow": _tensorflow, "pytorch": _pytorch, "jax": _jax}[kind](s, subject, p, row)


def _span(kind: str) -> str:
    """The releases a framework's table holds, "1.12-2.8"."""
    if kind == "jax":
        versions = [str(v) for r in rows("jax", "releases") for v in (r["version_min"], r["version_max"])]
    else:
        versions = [minor(r["version"]) for r in rows(kind, "releases")]
    ordered = sorted(versions, key=ver)
    return f"{ordered[0]}-{ordered[-1]}" if ordered else "empty"


def release(kind: str, version: str) -> dict | None:
    """The table row of framework ``kind`` (tensorflow, pytorch, jax) for ``version``."""
    if kind == "jax":
        return next((r for r in rows("jax", "releases")
                     if ver(r["version_min"]) <= ver(version)[:3] <= ver(r["version_max"])), None)
    return next((r for r in rows(kind, "releases") if minor(r["version"]) == minor(version)), None)


def _python_range(s: Stack, subject: str, name: str, row: dict) -> list[Finding]:
    python = s.python
    if python is None or ver(row["python_min"]) <= ver(python) <= ver(row["python_max"]):
        return []
    return [Finding(ERROR, subject, f"{name} supports Python {row['python_min']}-{row['python_max']}, not {python}",
                    row["source"])]


def _arch(s: Stack, subject: str, name: str, archs: list[str], source: str) -> list[Finding]:
    a = arch(s.compute_capability)
    label = f"{a['arch']} (sm_{_sm(s.compute_capability)})" if a else f"sm_{_sm(s.compute_capability)}"
    how, which = kernels(list(archs), s.compute_capability)
    if how == "sass":
        return []
    if how == "ptx":
        return [Finding(WARNING, subject, f"{name}'s binaries hold no kernels for the {s.gpu}'s {label}: they rest on "
                        f"PTX JIT from {which} (the driver compiles every kernel at first use, minutes per start, "
                        f"and the JIT code is not tuned for it)", source)]
    return [Finding(ERROR, subject, f"{name}'s binaries hold neither kernels nor PTX for the {s.gpu}'s {label} "
                    f"(built for {', '.join(archs)})", source)]


def _tensorflow(s: Stack, subject: str, p: Package, row: dict) -> list[Finding]:
    name = f"TensorFlow {minor(p.version)}"
    out = []
    if p.name not in [normalize(n) for n in row["packages"]]:
        out.append(Finding(ERROR, subject, f"{name}'s GPU build is published as {' or '.join(row['packages'])}, not "
                           f"{p.name}", row["source"]))
    out += _python_range(s, subject, name, row)
    bundled = bool(row.get("bundles_cuda")) and "and-cuda" in p.extras
    if not bundled:
        cuda_ok = minor(s.cuda) == minor(row["cuda"])
        cudnn_same = ver(s.cudnn)[:2] == ver(row["cudnn"])[:2]
        cudnn_newer = ver(s.cudnn)[:1] == ver(row["cudnn"])[:1] and ver(s.cudnn)[:2] > ver(row["cudnn"])[:2]
        if not cuda_ok or not (cudnn_same or cudnn_newer):
            out.append(Finding(ERROR, subject, f"{name} was built and tested against CUDA {row['cuda']} and cuDNN "
                               f"{row['cudnn']}, not {minor(s.cuda)} and {minor(s.cudnn)}: its wheel loads the "
                               "system's CUDA and cuDNN libraries of the versions it was built with", row["source"]))
            out += _tensorflow_for_cuda(s, subject)
        elif cudnn_newer:
            out.append(Finding(WARNING, subject, f"{name} was tested with cuDNN {row['cudnn']}, not "
                               f"{minor(s.cudnn)} (cuDNN keeps its API within a major: it loads, untested)",
                               row["source"]))
    else:
        out += _driver_for(s, subject, name, str(row["cuda"]))
    wheel = _wheel("tensorflow", p, row)
    return out + (_arch(s, subject, name, *wheel) if wheel else [_archs_unknown(s, subject, name, "tensorflow")])


def _wheel(kind: str, p: Package, row: dict) -> tuple[list[str], str] | None:
    """The architectures (and their source) of the wheel ``p`` installs, where the tables hold them."""
    if kind == "tensorflow":
        return (list(row["archs"]), str(row.get("archs_source", row["source"]))) if row.get("archs") else None
    if kind == "pytorch":
        variant = _variant(p, row)
        found = next((v for v in rows("pytorch", "variants") if minor(v["version"]) == minor(p.version)
                      and str(v["cuda"]) == variant), None)
    else:
        found = next((b for b in rows("jax", "archs")
                      if ver(b["version_min"]) <= ver(p.version)[:3] <= ver(b["version_max"])), None)
    return (list(found["archs"]), str(found["source"])) if found else None


def _variant(p: Package, row: dict) -> str:
    """The CUDA variant of a PyTorch pin: its +cuXY label, else the plain PyPI wheel's."""
    label = re.search(r"\+cu(\d+)(\d)$", p.version)
    return f"{label.group(1)}.{label.group(2)}" if label else str(row["pypi_default_cuda"])


def wheel_kernels(s: Stack) -> list[str]:
    """For each framework pin whose wheel architectures the tables hold, which of its kernels the GPU runs
    (the rule ``_arch`` judges), so that the plan shows what it checked, not only what failed."""
    out = []
    for env in s.envs:
        for p in env.packages:
            kind = FRAMEWORKS.get(p.name)
            row = release(kind, p.version) if kind and p.version else None
            wheel = _wheel(str(kind), p, row) if row and (kind != "jax" or
                                                             any(e.startswith("cuda") for e in p.extras)) else None
            if wheel is None:
                continue
            how, which = kernels(wheel[0], s.compute_capability)
            gpu = f"sm_{_sm(s.compute_capability)}"
            out.append(f"env {env.name}: {p.spec}: " + {"sass": f"its {which} cubins run on the {gpu} GPU",
                                                          "ptx": f"PTX {which} JIT-compiled for the {gpu} GPU",
                                                          "none": f"no kernel for the {gpu} GPU"}[how])
    return out


def _archs_unknown(s: Stack, subject: str, name: str, kind: str) -> Finding:
    return Finding(UNKNOWN, subject, f"{name}'s wheel architectures are not in the table: its kernels for the "
                   f"{s.gpu} (sm_{_sm(s.compute_capability)}) are not checked", f"provision/plan/data/{kind}.yaml")


def _tensorflow_for_cuda(s: Stack, subject: str) -> list[Finding]:
    """The TensorFlow releases tested with this toolkit, when none of them takes the env's Python."""
    tested = [r for r in rows("tensorflow", "releases") if minor(r["cuda"]) == minor(s.cuda)]
    python = s.python
    if not tested or python is None:
        return []
    if any(ver(r["python_min"]) <= ver(python) <= ver(r["python_max"]) for r in tested):
        return []
    low = min((r["python_min"] for r in tested), key=ver)
    high = max((r["python_max"] for r in tested), key=ver)
    names = ", ".join(minor(r["version"]) for r in tested)
    need = f"Python {low} or newer" if ver(python) < ver(low) else f"Python {high} or older"
    return [Finding(ERROR, subject, f"the TensorFlow releases tested with CUDA {minor(s.cuda)} ({names}) need "
                    f"{need} ({low}-{high}), not {python}", tested[0]["source"])]


def _pytorch(s: Stack, subject: str, p: Package, row: dict) -> list[Finding]:
    name = f"PyTorch {minor(p.version)}"
    variant = _variant(p, row)
    out = _python_range(s, subject, name, row)
    if variant not in [str(c) for c in row["cuda"]]:
        return out + [Finding(ERROR, subject, f"{name} is built for CUDA {', '.join(map(str, row['cuda']))}, not "
                              f"{variant}", row["source"])]
    label = f"{name}+cu{variant.replace('.', '')}"
    out += _driver_for(s, subject, label, variant)
    wheel = _wheel("pytorch", p, row)
    return out + (_arch(s, subject, label, *wheel) if wheel else [_archs_unknown(s, subject, label, "pytorch")])


def _jax(s: Stack, subject: str, p: Package, row: dict) -> list[Finding]:
    name = f"JAX {p.version}"
    out = _python_range(s, subject, name, row)
    if not any(e.startswith("cuda") for e in p.extras):
        return out + [Finding(INFO, subject, f"{name} without a cuda extra installs the CPU build only",
                              row["source"])]
    out += _driver_for(s, subject, name, str(row["cuda_min"]))
    wheel = _wheel("jax", p, row)
    return out + (_arch(s, subject, name, *wheel) if wheel else [_archs_unknown(s, subject, name, "jax")])


def _driver_for(s: Stack, subject: str, name: str, cuda: str) -> list[Finding]:
    """A wheel that bundles CUDA ``cuda``: the driver must run it, at least by minor version compatibility."""
    compat = minor_compat(str(ver(cuda)[0]))
    if compat is None or ver(s.driver) >= ver(compat["driver_min"]):
        return []
    return [Finding(ERROR, subject, f"{name} bundles CUDA {cuda}, which needs driver >= {compat['driver_min']}, "
                    f"not {s.driver}", compat["source"])]


def _sm(cc: str) -> str:
    return "".join(str(n) for n in ver(cc)[:2])
