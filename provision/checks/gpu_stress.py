"""gpu_stress: every GPU under a sustained compute load (gpu-burn), then DCGM's long diagnostic.

Tools and steps: ``gpu_burn [-d] [-tc] SECONDS`` (wilicc/gpu-burn; key ``gpu_burn``) and
``dcgmi diag -r 3`` (key ``dcgmi``), each step naming its parser (``gpu-burn``, ``dcgmi-diag``);
``judge`` judges each output by its step. Parsers tested on gpu-burn git 2022-2024 (tab- and space-indented verdicts,
Gflop/s progress, negative error counts) and dcgmi 3.3.6-3.3.9 (``-r 3``, with and without
``-v``); see provision/parsers/gpu_burn.py and dcgmi.py.

Units: ``gflops`` in Gflop/s per GPU, the last whole progress line (FP32 SGEMM, or DGEMM when
the reference's params say ``precision: fp64``), against ``references.gpu_stress.gflops``
(params give ``duration_s``, ``precision`` and optionally ``tensor_cores``; a profile without
the row cannot run the check: ProfileError).

Rules (gpu-burn prints FAULTY per GPU but its exit status does not carry it: gpu_burn-drv.cpp
in https://github.com/wilicc/gpu-burn; dcgmi diag reports Skip per test, DCGM user guide
"Run levels and tests" https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html):
- gpu-burn exits 0 even when a GPU is FAULTY, so the verdict is judged, never the exit
  status: FAULTY fails that GPU (GPU_BURN_FAULTY).
- gpu-burn can print OK after doing no work: a GPU with no Gflop/s figure or 0 Gflop/s, or
  a GPU of the profile missing from the verdicts, makes the run unjudgeable (ParseError ->
  error), never a pass.
- dcgmi: a test with status Fail fails each GPU it names (DCGM_FAIL). A skipped test is not a
  pass: DCGM's user guide says a skipped test was not run, so its verdict is unknown. A
  required test that was skipped is a failing finding (DCGM_SKIPPED) rather than an error,
  so the node is held back with an action even when other findings are judged; only tests
  the run level does not promise (``OPTIONAL``) may be skipped. Warn is DCGM's pass with a
  non-fatal warning; it passes and its warnings go in the finding's detail.
GPU names are indices as the tools print them (CUDA order for gpu-burn, DCGM GPU ids for
dcgmi: both follow PCI bus order on these nodes).
"""
from __future__ import annotations

import dataclasses
import re

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, InSet, Placement, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError

# DCGM user guide, run levels: the EUD test needs the separately installed EUD package and
# is reported "Skip" at -r 3 on nodes without it (both real -r 3 samples).
OPTIONAL = frozenset({"EUD Test"})
DCGM_LEVEL = "3"


def steps(profile, host) -> list[Step]:
    params = profile.required_reference("gpu_stress", "gflops").params
    burn = ["gpu_burn"]
    if params["precision"] == "fp64":
        burn.append("-d")  # gpu-burn's doubles mode (DGEMM)
    if params.get("tensor_cores"):
        burn.append("-tc")
    burn.append(str(params["duration_s"]))
    return [Step("gpu_burn", burn, parser="gpu-burn"),
            Step("dcgmi", ["dcgmi", "diag", "-r", DCGM_LEVEL], parser="dcgmi-diag")]


def judge(ctx: Context) -> list[Finding]:
    judges = {"gpu_burn": lambda r: _burn(r, ctx.profile), "dcgmi": _dcgm}  # by step key
    findings: list[Finding] = []
    for key, result in ctx.parsed.items():
        findings += judges[key](result)
    return findings


def _burn(result: dict, profile) -> list[Finding]:
    gpus, expected = result["gpus"], profile.gpu.count
    judged = [g for g in gpus if g["verdict"] is not None]
    if len(judged) < expected:
        missing = [g["index"] for g in gpus if g["verdict"] is None]
        raise ParseError(f"gpu_burn gave a verdict for {len(judged)} of {expected} GPUs"
                         + (f" (none for GPU {', '.join(map(str, missing))})" if missing else ""))
    idle = [g["index"] for g in gpus if not g["gflops"]]
    if idle:
        raise ParseError(f"gpu_burn did no work on GPU {', '.join(map(str, idle))} (no progress or 0 Gflop/s): "
                         "its OK verdict cannot be trusted")
    ref = profile.required_reference("gpu_stress", "gflops")
    findings = []
    for g in gpus:
        device = f"GPU{g['index']}"
        verdict = expect(device, "gpu_burn_verdict", g["verdict"], "OK", "GPU_BURN_FAULTY")
        if g.get("errors"):
            verdict = dataclasses.replace(verdict, detail=f"compare errors {g['errors']} as printed")
        findings += [verdict, measured(device, "gflops", g["gflops"], ref, "GPU_SLOW")]
    return findings


def _dcgm(result: dict) -> list[Finding]:
    findings = []
    for test, r in result["results"].items():
        metric = "dcgm_" + re.sub(r"[^a-z0-9]+", "_", test.lower()).strip("_")
        detail = "; ".join(r["warnings"])
        if r["status"] == "Fail":
            devices = [f"GPU{g}" for g in r["failed_gpus"]] or ["node"]
            findings += [Finding(d, metric, "Fail", False, expected="Pass", fault="DCGM_FAIL",
                                 action=faults.action("DCGM_FAIL"), detail=f"{test}: {detail or r['detail']}")
                         for d in devices]
        elif r["status"] == "Skip" and test not in OPTIONAL:
            findings.append(Finding("node", metric, "Skip", False, expected="Pass", fault="DCGM_SKIPPED",
                                    action=faults.action("DCGM_SKIPPED"), detail=f"{test} was not run"))
        else:
            findings.append(Finding("node", metric, r["status"], True, expected="Pass", detail=detail))
    return findings


# DCGM user guide: -r 3 takes up to ~30 minutes on an 8-GPU node; gpu_burn adds its duration.
# dcgmi-diag(1): level 3 is "Long hardware diagnostics, normally lasting approximately 15 minutes"
# (https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html).
DCGM_LEVEL_3_S = 15 * 60
# The acceptance set's gpu-burn: 30 minutes, the least issue 23 reports sites running on a new node (the
# profiles' 60 s is a smoke test); soaks of days are campaigns of their own, not one check.
ACCEPTANCE_BURN_S = 30 * 60
# Each step is bounded by the check's timeout: 30 min of gpu-burn and its start, or DCGM level 3 at its
# guide's ~30 minutes, each with 10 minutes to spare.
ACCEPTANCE_TIMEOUT_S = ACCEPTANCE_BURN_S + 10 * 60


def expected_s(profile) -> float:
    """How long the check keeps a node: gpu-burn's duration (the reference's params), then DCGM level 3."""
    return profile.required_reference("gpu_stress", "gflops").params["duration_s"] + DCGM_LEVEL_3_S
# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS = {
    "gflops": {
        "required": ["duration_s", "precision"],
        "properties": {
            "tool": {"const": "gpu_burn"},
            "duration_s": {"type": "integer", "minimum": 1},
            "precision": {"enum": ["fp32", "fp64"]},
            "tensor_cores": {"type": "boolean"},
        },
    },
}


CHECK = Check(id="gpu_stress", tool="gpu_burn + dcgmi diag", steps=steps, judge=judge, order=90,
              placement=Placement(needs=("gpu",)),
              budget=Budget(loads="gpu", timeout_s=1800, expected_s=expected_s, sets=("deep",),
                            set_params={"acceptance": InSet({"gflops": {"duration_s": ACCEPTANCE_BURN_S}},
                                                              timeout_s=ACCEPTANCE_TIMEOUT_S)}),
              data=Data(metrics={"gflops": "Gflop/s"}, params=PARAMS))
