"""The nearest consistent stack: what ``provision plan`` proposes when a stack has an error (or, with only
unknowns, the nearest stack the tables check fully).

``nearest(s)`` moves only the driver, toolkit, cuDNN, NCCL build, interpreter and framework pins, tries every
toolkit and Python of the tables, fits each framework to its nearest release that works there, and keeps the
candidate of least cost; the winner is checked again as a whole (``stack.check``) and carries what that check
leaves, so a proposal is never printed on the strength of its parts' checks alone.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass

from provision.plan import ERROR, UNKNOWN, WARNING, Finding
from provision.plan.compat import arch, cudnn_builds, cudnn_releases, distro_python, minor, rows, toolkit, toolkits, ver
from provision.plan.stack import FRAMEWORKS, PYTHONS, Env, Package, Stack, check, normalize, pin_findings, release

# What one finding left in a proposal costs, against 1 + 0.1 per release stepped over for each component it
# changes: a warning 0.5 (a stack that works, less well); an unknown 3, more than changing one component by
# some releases, so a stack the tables check fully is proposed over one they cannot when it is that close.
WARNING_COST, UNKNOWN_COST = 0.5, 3.0


@dataclass(frozen=True)
class Proposal:
    """``stack`` the proposed one; ``changes`` [(variable, now, proposed)]; ``warnings`` and ``unknowns``
    what the proposal's own check (``check(stack)``, the same rules as the stack's) leaves in it."""

    stack: Stack
    changes: tuple[tuple[str, str, str], ...]
    warnings: tuple[Finding, ...]
    unknowns: tuple[Finding, ...] = ()


def nearest(s: Stack) -> Proposal | None:
    """The stack without errors that changes the fewest components by the smallest steps (each changed
    component costs 1 plus 0.1 per release stepped over; each warning left ``WARNING_COST``, each unknown
    ``UNKNOWN_COST``), or None when the tables hold none. Only the driver, toolkit, cuDNN, NCCL build,
    interpreter and framework pins move. The proposal is checked again as a whole (``check``) and carries
    what that check leaves: a proposal is never printed on the strength of its parts' checks alone."""
    best: tuple[float, Stack] | None = None
    a = arch(s.compute_capability)
    cudas = [c for c in dict.fromkeys([s.cuda, *toolkits()]) if a is None or ver(c) >= ver(a["cuda_min"])]
    pythons = [p for p in dict.fromkeys([s.python, *PYTHONS]) if p]
    for cuda, python in itertools.product(cudas, pythons):
        candidate = _fit(s, cuda, python)
        if candidate is None:
            continue
        findings = check(candidate)
        if any(f.severity == ERROR for f in findings):
            continue
        cost = (_cost(s, candidate) + WARNING_COST * sum(f.severity == WARNING for f in findings)
                + UNKNOWN_COST * sum(f.severity == UNKNOWN for f in findings))
        if best is None or cost < best[0]:
            best = (cost, candidate)
    if best is None:
        return None
    chosen = best[1]
    again = check(chosen)
    return Proposal(chosen, tuple(_changes(s, chosen)), tuple(f for f in again if f.severity == WARNING),
                    tuple(f for f in again if f.severity == UNKNOWN))


def _fit(s: Stack, cuda: str, python: str) -> Stack | None:
    """``s`` moved to toolkit ``cuda`` and Python ``python``: each framework at its nearest release that
    fits them, cuDNN as the TensorFlow envs need (else kept, else the nearest with a build for
    ``cuda``), the NCCL build of ``cuda``, the driver raised to the toolkit's minimum."""
    interpreter = s.interpreter
    distro = distro_python(s.target) if s.target else None
    if python != s.python:
        interpreter = "python3" if distro is not None and str(distro["python3"]) == python else f"python{python}"
    t = toolkit(cuda)
    driver = s.driver if t is None or ver(s.driver) >= ver(t["driver_min"]) else str(t["driver_min"])
    trial = dataclasses.replace(s, cuda=cuda, interpreter=interpreter, driver=driver)
    cudnn_need: set[str] = set()
    envs = []
    for env in s.envs:
        packages = []
        for p in env.packages:
            kind = FRAMEWORKS.get(p.name)
            if kind is None or not p.version:
                packages.append(p)
                continue
            moved = _nearest_release(trial, kind, p)
            if moved is None:
                return None
            packages.append(moved)
            row = release(kind, moved.version)
            if kind == "tensorflow" and row and not ("and-cuda" in moved.extras and row.get("bundles_cuda")):
                cudnn_need.add(str(row["cudnn"]))
        envs.append(Env(env.name, tuple(packages)))
    if len(cudnn_need) > 1:
        return None
    cudnn = _cudnn_for(s.cudnn, cuda, next(iter(cudnn_need), None))
    nccl, nccl_cuda = _nccl_for(s.nccl, s.nccl_cuda, cuda)
    if cudnn is None or nccl is None:
        return None
    return dataclasses.replace(trial, driver=driver, cudnn=cudnn, nccl=nccl, nccl_cuda=nccl_cuda, envs=tuple(envs))


def _nearest_release(trial: Stack, kind: str, p: Package) -> Package | None:
    """The release of framework ``kind`` nearest ``p``'s whose own findings on ``trial`` hold no error and
    no unknown, else the nearest without an error (TensorFlow's tested cuDNN is set afterwards, so it is
    assumed here)."""
    fallback = None
    if kind == "jax":
        versions = [str(r["version_max"]) for r in rows("jax", "releases")]
    else:
        versions = [str(r["version"]) for r in rows(kind, "releases")]
    versions = sorted(dict.fromkeys([p.version, *versions]), key=ver)
    here = versions.index(p.version)
    for step in sorted(range(len(versions)), key=lambda i: (abs(i - here), -i)):
        row = release(kind, versions[step])
        if row is None:
            continue
        for moved in _pins(kind, versions[step], p, row):
            probe = dataclasses.replace(trial, cudnn=str(row["cudnn"])) if kind == "tensorflow" else trial
            found = pin_findings(probe, Env("probe", (moved,)), moved)
            if any(f.severity == ERROR for f in found):
                continue
            if not any(f.severity == UNKNOWN for f in found):
                return moved
            fallback = fallback or moved
    return fallback


def _pins(kind: str, version: str, p: Package, row: dict) -> list[Package]:
    """The pins of table release ``version`` to try for ``p``: TensorFlow rows name X.Y.0 (under the name its
    GPU build was published as); PyTorch rows X.Y (-> X.Y.0): with the site's +cuXY label kept, then, when it
    had one, each CUDA variant of the release, newest first."""
    name = p.name
    if kind == "tensorflow" and name not in [normalize(n) for n in row["packages"]]:
        name = normalize(row["packages"][0])
    if version == p.version and name == p.name:
        return [p]
    if kind != "pytorch":
        return [p.pin(name, version)]
    base = version if len(ver(version)) >= 3 else f"{version}.0"
    label = re.search(r"\+cu\d+$", p.version)
    if not label:
        return [p.pin(name, base)]
    variants = sorted((str(c) for c in row["cuda"]), key=ver, reverse=True)
    return [p.pin(name, base + label.group(0))] + [p.pin(name, f"{base}+cu{c.replace('.', '')}") for c in variants]


def _cudnn_for(cudnn: str, cuda: str, need: str | None) -> str | None:
    """cuDNN for toolkit ``cuda``: ``need``'s major.minor when a TensorFlow env fixes it (the current
    version when it is that release), else the current one when it has a build for ``cuda``, else the
    nearest release that has."""
    def covers(release: str) -> bool:
        return any(ver(b["cuda_min"])[:1] == ver(cuda)[:1] and ver(b["cuda_min"]) <= ver(minor(cuda))
                   for b in cudnn_builds(release))

    if need is not None:
        if ver(cudnn)[:2] == ver(need)[:2]:
            return cudnn
        found = [r for r in cudnn_releases() if ver(r)[:2] == ver(need)[:2] and covers(r)]
        return found[-1] if found else None
    if covers(cudnn):
        return cudnn
    found = sorted(cudnn_releases(), key=lambda r: (abs(_distance(r, cudnn)), ver(r)))
    return next((r for r in found if covers(r)), None)


def _nccl_for(nccl: str, nccl_cuda: str, cuda: str) -> tuple[str | None, str]:
    """The NCCL build for toolkit ``cuda``: this version's newest build of ``cuda``'s major at or below its
    minor, else the nearest version that has one."""
    builds = rows("nccl", "builds")
    order = sorted(builds, key=lambda b: (abs(_distance(str(b["nccl"]), nccl)), ver(b["nccl"])))
    for b in order:
        fit = sorted((str(c) for c in b["cuda"] if ver(c)[:1] == ver(cuda)[:1] and ver(c) <= ver(minor(cuda))),
                     key=ver)
        if fit:
            return str(b["nccl"]), (nccl_cuda if nccl_cuda in fit and ver(b["nccl"]) == ver(nccl) else fit[-1])
    return None, nccl_cuda


def _distance(a: str, b: str) -> float:
    """A rough distance between two versions: major steps count 100, minor 1, patch 0.01."""
    va, vb = (list(ver(a)) + [0, 0, 0])[:3], (list(ver(b)) + [0, 0, 0])[:3]
    return (va[0] - vb[0]) * 100 + (va[1] - vb[1]) + (va[2] - vb[2]) * 0.01


def _cost(s: Stack, c: Stack) -> float:
    cost = 0.0
    for now, then in ((s.driver, c.driver), (s.cuda, c.cuda), (s.cudnn, c.cudnn), (s.nccl, c.nccl),
                      (s.nccl_cuda, c.nccl_cuda), (s.python or "", c.python or "")):
        if ver(now) != ver(then):
            cost += 1 + 0.1 * min(abs(_distance(now, then)), 20)
    if c.interpreter != s.interpreter and c.interpreter != "python3":
        cost += 0.3  # an interpreter the distribution does not ship
    for e0, e1 in zip(s.envs, c.envs):
        for p0, p1 in zip(e0.packages, e1.packages):
            if p0.spec != p1.spec:
                cost += 1 + 0.1 * min(abs(_distance(p0.version, p1.version)), 20)
    return cost


def _changes(s: Stack, c: Stack) -> list[tuple[str, str, str]]:
    out = [(var, now, then) for var, now, then in (
        ("nvidia_driver_version", s.driver, c.driver), ("cuda_toolkit_version", s.cuda, c.cuda),
        ("cudnn_version", s.cudnn, c.cudnn), ("nccl_version", s.nccl, c.nccl),
        ("nccl_cuda_version", s.nccl_cuda, c.nccl_cuda), ("framework_venv_python", s.interpreter, c.interpreter))
        if now != then]
    for e0, e1 in zip(s.envs, c.envs):
        out += [(f"framework_venv_envs[{e0.name}]", p0.spec, p1.spec)
                for p0, p1 in zip(e0.packages, e1.packages) if p0.spec != p1.spec]
    return out

