"""stack: the node runs the driver, CUDA toolkit, cuDNN and NCCL the stack release pins.

Steps, one per fact: ``driver`` = ``nvidia-smi --query-gpu=driver_version --format=csv,noheader``
(one version per GPU line; nvidia-smi 535-570), ``cuda`` = ``/usr/local/cuda-X.Y/bin/nvcc
--version`` ("Cuda compilation tools, release 12.4, V12.4.131"; CUDA 11.x-12.x), ``packages``
= ``dpkg-query -W --showformat='${Package} ${Version} ${db:Status-Abbrev}\\n' PKG...``
("libnccl2 2.21.5-1+cuda12.4 ii "; dpkg 1.16.2+ for db:Status-Abbrev), or on EL nodes (the
node's os-release, read by the engine) ``rpm -q --queryformat '%{NAME} %{VERSION}-%{RELEASE}\\n'``
("libnccl 2.21.5-1+cuda12.4"; rpm 4.x) with NVIDIA's rhel9 names. Each step names its parser
(``nvidia-smi-driver``, ``nvcc``, ``package-query``: provision/parsers/smi_driver.py, nvcc.py,
package_query.py). Framework virtualenvs are not checked yet: profiles name no venvs to import from.

Rules (``profile.stack``: the pins of provision/profiles/stack_release.yaml for the node's
repository folder; the roles install the same pins):
- driver_version equals ``driver_version``.
- nvcc's "release X.Y" equals ``cuda_version``'s major.minor. nvcc's own V number is the
  compiler's (V12.4.131 ships in toolkit 12.4.1), so it is reported, not compared.
- cuDNN (``libcudnn<major>-cuda-<cuda major>``) and ``libnccl2``: upstream version (epoch and
  Debian revision dropped) equals ``cudnn_version`` / ``nccl_version``; NCCL's "+cudaX.Y"
  build equals ``nccl_cuda_version``; status "ii" (installed: "rc" means removed with its
  config left, and dpkg-query still prints a version for it).
"""
from __future__ import annotations

import dataclasses
import re

from provision.checks.base import Budget, Check, Context, Data, Finding, Step
from provision.checks.rules import expect
from provision.errors import ParseError

INSTALLED = ("ii", "hi")  # dpkg's db:Status-Abbrev for an installed package, wanted "install" or "hold"


def major_minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def rpm_based(profile) -> bool:
    """True on EL nodes (``profile.target`` rhel*, set from the node's os-release by the engine)."""
    return str(profile.target or "").startswith("rhel")


def nccl_package(profile) -> str:
    """NCCL's runtime package: libnccl2 in NVIDIA's Debian-family repositories, libnccl in rhel9's."""
    return "libnccl" if rpm_based(profile) else "libnccl2"


def packages(profile) -> dict[str, str]:
    """Package name -> the stack pin it must carry (names as the node's repository has them)."""
    stack = profile.stack
    cudnn = f"libcudnn{str(stack['cudnn_version']).split('.')[0]}-cuda-{str(stack['cuda_version']).split('.')[0]}"
    return {cudnn: str(stack["cudnn_version"]), nccl_package(profile): str(stack["nccl_version"])}


def steps(profile, host) -> list[Step]:
    cuda = major_minor(profile.stack["cuda_version"])
    fmt = "${Package} ${Version} ${db:Status-Abbrev}\\n"  # dpkg-query expands the \n escape itself
    if rpm_based(profile):  # rpm prints the same "name version" lines; %{RELEASE} keeps +cudaX.Y
        query = ["rpm", "-q", "--queryformat", "%{NAME} %{VERSION}-%{RELEASE}\\n", *packages(profile)]
    else:
        query = ["dpkg-query", "-W", f"--showformat={fmt}", *packages(profile)]
    return [Step("driver", ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                 parser="nvidia-smi-driver"),
            Step("cuda", [f"/usr/local/cuda-{cuda}/bin/nvcc", "--version"], parser="nvcc"),
            Step("packages", query, parser="package-query")]


def judge(ctx: Context) -> list[Finding]:
    judges = {"driver": _judge_driver, "cuda": _judge_cuda, "packages": _judge_packages}  # by step key
    findings: list[Finding] = []
    for key, result in ctx.parsed.items():
        findings += judges[key](result, ctx.profile)
    return findings


def _judge_driver(result: dict, profile) -> list[Finding]:
    return [expect("driver", "driver_version", result["driver_version"], profile.stack["driver_version"], "STACK_PIN")]


def _judge_cuda(result: dict, profile) -> list[Finding]:
    pin = str(profile.stack["cuda_version"])
    finding = expect(f"cuda-{major_minor(pin)}", "cuda_release", result["release"], major_minor(pin), "STACK_PIN")
    return [dataclasses.replace(finding, detail=f"nvcc V{result['version']}; toolkit pin {pin}")]


def _judge_packages(result: dict, profile) -> list[Finding]:
    stack, found, out = profile.stack, result["packages"], []
    for name, pin in packages(profile).items():
        if name not in found:
            raise ParseError(f"the package query printed no line for {name}")
        version = found[name]["version"]
        upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
        out.append(expect(name, "version", upstream, pin, "STACK_PIN"))
        status = found[name]["status"]
        if status is not None:  # "ii" installed, "hi" installed and held (stack_hold holds every pin)
            out.append(expect(name, "dpkg_status", status, status if status in INSTALLED else "ii", "STACK_PIN"))
        if name == nccl_package(profile):
            build = re.search(r"\+cuda([\d.]+)", version)
            out.append(expect(name, "cuda_build", build.group(1) if build else None, str(stack["nccl_cuda_version"]),
                              "STACK_PIN"))
    return out


CHECK = Check(id="stack", tool="nvidia-smi + nvcc + dpkg-query or rpm", steps=steps, judge=judge, order=30,
              budget=Budget(timeout_s=60, sets=("quick", "deep", "health")),
              data=Data(metrics={}))
