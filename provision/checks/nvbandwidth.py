"""nvbandwidth: copy-engine bandwidth host->device per GPU and device->device per GPU pair.

Tool: NVIDIA ``nvbandwidth`` (parser ``provision.parsers.nvbandwidth``, tested on the v0.1
README layout (0.00 diagonal, no SUM) and v0.5+ (N/A diagonal, SUM lines, "Device n: name
(bus id)" header)). One run, both testcases after one ``-t`` (boost ``multitoken``: a repeated
``-t`` is rejected by nvbandwidth), buffer size ``-b`` in MiB from the reference params.
Units: GB/s.

Rules (profile ``references.nvbandwidth``, whose ``params.testcase`` names the testcase read;
a profile needs at least one of the two rows, and the check judges the rows it has):
- ``h2d_GBps``: every GPU's cell of host_to_device_memcpy_ce (one CPU row, one column per
  GPU), named "GPU3 00000000:5D:00"; fault H2D_SLOW.
- ``d2d_GBps``: every off-diagonal cell of device_to_device_memcpy_read_ce, named by the copy
  direction of the caption ("GPU(row) -> GPU(column)": "GPU2->GPU5"); the diagonal is not a
  pair and is ignored whatever it prints (N/A, or 0.00 in old versions); fault D2D_SLOW.
- the number of GPUs in the first judged matrix equals ``gpu.count``.
Sources of the thresholds: each reference's ``source`` (aznhc per-SKU configs).
A testcase missing from the output, or reported Waived, is an error (ParseError), never a pass.
"""
from __future__ import annotations


from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError

METRICS = {"h2d_GBps": "H2D_SLOW", "d2d_GBps": "D2D_SLOW"}  # metric -> fault


def _references(profile) -> dict:
    """metric -> Reference, for the metrics the profile has a reference for; raises
    ProfileError (naming the first metric) when it has none."""
    refs = {m: profile.reference("nvbandwidth", m) for m in METRICS}
    refs = {m: ref for m, ref in refs.items() if ref is not None}
    return refs or {m: profile.required_reference("nvbandwidth", m) for m in METRICS}


def steps(profile, host) -> list[Step]:
    refs = _references(profile)
    cases = [ref.params["testcase"] for ref in refs.values()]
    # one run, one buffer size: the largest any row asks for
    size = max(ref.params["buffer_size_MiB"] for ref in refs.values())
    return [Step("", ["nvbandwidth", "-b", str(size), "-t", *cases], parser="nvbandwidth")]


def judge(ctx: Context) -> list[Finding]:
    parsed, profile = ctx.parsed, ctx.profile
    result, refs = parsed[""], _references(profile)
    tests = {metric: _test(result, ref.params["testcase"]) for metric, ref in refs.items()}
    columns = len(next(iter(next(iter(tests.values()))["matrix"].values())))
    findings = [expect("node", "gpu_count", columns, profile.gpu.count, "GPU_MISSING")]
    for metric, test in tests.items():
        cells = _pairs(test) if (test["caption"] or "").count("GPU(") == 2 else _per_gpu(test, result["bus_ids"])
        findings += [_cell(device, metric, value, refs[metric]) for device, value in cells]
    return findings


def _test(result: dict, name: str) -> dict:
    """The named test; raises ParseError when it did not run or was waived."""
    test = next((t for t in result["tests"] if t["name"] == name), None)
    if test is None or not test["matrix"]:
        raise ParseError(f"nvbandwidth printed no {name} result" + (" (waived)" if test and test["waived"] else ""))
    return test


def _per_gpu(test: dict, bus_ids: dict) -> list[tuple[str, float | None]]:
    """Host copies: one row, a cell per GPU column."""
    row = next(iter(test["matrix"].values()))
    return [(f"GPU{gpu}" + (f" {bus_ids[gpu]}" if gpu in bus_ids else ""), value) for gpu, value in row.items()]


def _pairs(test: dict) -> list[tuple[str, float | None]]:
    """GPU-GPU copies: every off-diagonal cell, named source->destination as the caption draws it."""
    backwards = "<-" in (test["caption"] or "")
    return [(f"GPU{col}->GPU{row}" if backwards else f"GPU{row}->GPU{col}", value)
            for row, cells in test["matrix"].items() for col, value in cells.items() if row != col]


def _cell(device: str, metric: str, value: float | None, ref) -> Finding:
    fault = METRICS[metric]
    if value is None:
        return Finding(device=device, metric=metric, value=None, ok=False, unit=ref.unit, reference=ref,
                       fault=fault, action=faults.action(fault), detail="not measured (N/A)")
    return measured(device, metric, value, ref, fault)


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS = {
    "h2d_GBps": {
        "required": ["testcase", "buffer_size_MiB"],
        "properties": {
            "testcase": {"type": "string", "pattern": "^[a-z0-9_]+$"},
            "buffer_size_MiB": {"type": "integer", "minimum": 1},
        },
    },
    "d2d_GBps": {
        "required": ["testcase", "buffer_size_MiB"],
        "properties": {
            "testcase": {"type": "string", "pattern": "^[a-z0-9_]+$"},
            "buffer_size_MiB": {"type": "integer", "minimum": 1},
        },
    },
}


# The hardware peak each metric is bounded by (provision.checks.plausible): h2d over PCIe, d2d over NVLink (else PCIe).
PEAKS = {"h2d_GBps": "gpu_pcie", "d2d_GBps": "gpu_nvlink_or_pcie"}


CHECK = Check(id="nvbandwidth", tool="nvbandwidth", steps=steps, judge=judge, order=60,
              placement=Placement(needs=("gpu",)),
              budget=Budget(loads="gpu", timeout_s=300, sets=("deep",)),
              data=Data(metrics={"gpu_count": "", "h2d_GBps": "GB/s", "d2d_GBps": "GB/s"}, params=PARAMS, peaks=PEAKS))
