"""ecc_counters: no uncorrected memory error since the driver loaded, corrected ones below the profile's limits.

Tool: ``nvidia-smi --query-gpu=index,pci.bus_id,ecc.mode.current,ecc.errors.uncorrected.volatile.total,
ecc.errors.corrected.volatile.total,ecc.errors.corrected.aggregate.total --format=csv,nounits`` (parser
``nvidia-smi-csv``, provision/parsers/smi_csv.py; fields of ``nvidia-smi --help-query-gpu``). NVML's
counters behind them (https://docs.nvidia.com/deploy/nvml-api/, nvmlEccCounterType_t and
nvmlDeviceGetTotalEccErrors): volatile counts reset when the driver loads, aggregate counts persist for
the GPU's life; a total sums every memory (DRAM and SRAM); they are kept only with ECC mode enabled.
Counts, in errors.
Judges: the GPU count; uncorrected volatile errors, none allowed (the default threshold 0 of
facebookresearch/gcm's ecc_uncorrected_volatile_total health check; DCGM's DBE policy); corrected volatile
and aggregate errors against the profile's ``references.ecc_counters`` rows (a storm of corrected errors
comes before failing memory: aznhc's check_gpu_ecc gates each at 20,000,000 on its H100 and A100
configurations). A GPU whose ECC mode is not Enabled is an error: its counters read [N/A], nothing
could be judged. Row remapping and retired pages are gpu_health's.
Parser tested on the simulated nvidia-smi's CSV (provision/sim/tools/smi_csv.py, after the real capture
tests/data/samples/smi_query_csv_b300x7_in_watch.txt); no real capture of these fields yet.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError

UNCORRECTED = "ecc.errors.uncorrected.volatile.total"
# CSV column -> the metric judged against references.ecc_counters.<metric>
CORRECTED = {"ecc.errors.corrected.volatile.total": "corrected_volatile_errors",
             "ecc.errors.corrected.aggregate.total": "corrected_aggregate_errors"}
FIELDS = ("index", "pci.bus_id", "ecc.mode.current", UNCORRECTED, *CORRECTED)


def steps(profile, host) -> list[Step]:
    for metric in CORRECTED.values():  # judged only against the profile's rows: refuse to run without them
        profile.required_reference("ecc_counters", metric)
    return [Step("", ["nvidia-smi", f"--query-gpu={','.join(FIELDS)}", "--format=csv,nounits"],
                 parser="nvidia-smi-csv")]


def judge(ctx: Context) -> list[Finding]:
    smi, profile = ctx.parsed[""], ctx.profile
    missing = [f for f in FIELDS if f not in (smi.get("columns") or [])]
    if missing:
        raise ParseError(f"nvidia-smi printed no {', '.join(missing)} column")
    findings = [expect("node", "gpu_count", len(smi["rows"]), profile.gpu.count, "GPU_MISSING")]
    for row in smi["rows"]:
        device = f"GPU{row['index']} {row['pci.bus_id']}"
        if row["ecc.mode.current"] != "Enabled":
            raise ParseError(f"{device}: ecc.mode.current is {row['ecc.mode.current']!r}: its counters are not kept")
        counts = {column: row[column] for column in (UNCORRECTED, *CORRECTED)}
        odd = [f"{column} = {value!r}" for column, value in counts.items() if not isinstance(value, int)]
        if odd:
            raise ParseError(f"{device}: {', '.join(odd)}: not a count")
        findings.append(expect(device, "uncorrected_volatile_errors", counts[UNCORRECTED], 0, "ECC_UNCORRECTED",
                               unit="errors"))
        findings += [measured(device, metric, counts[column], profile.required_reference("ecc_counters", metric),
                              "ECC_CORRECTED_HIGH") for column, metric in CORRECTED.items()]
    return findings


# The counters are read as they are: no test parameters.
PARAMS: dict[str, dict] = {metric: {"properties": {}} for metric in CORRECTED.values()}

# One limit for every GPU whose memory counts its errors: Azure's health checks hold every ND GPU SKU they configure
# (A100 v4, H100 v5, H200 v5, GB200 v6) to the same 20,000,000 corrected errors per GPU, volatile and aggregate alike.
AZNHC = ("aznhc check_gpu_ecc 20000000 on ND A100 v4, ND H100 v5, ND H200 v5 and ND GB200 v6 alike "
         "(https://github.com/Azure/azurehpc-health-checks, conf/nd96amsr_a100_v4.conf, conf/nd96isr_h100_v5.conf, "
         "conf/nd96isr_h200_v5.conf, conf/nd128isr_ndr_gb200_v6.conf, customTests/azure_gpu_ecc.nhc)")
REFERENCES: dict[str, dict] = {
    "corrected_volatile_errors": {"value": 20000000, "lower": None, "upper": 0.0, "unit": "errors", "params": {},
                                  "source": f"{AZNHC}; facebookresearch/gcm allows 50,000,000"},
    "corrected_aggregate_errors": {"value": 20000000, "lower": None, "upper": 0.0, "unit": "errors", "params": {},
                                   "source": f"{AZNHC}, volatile and aggregate alike"},
}

CHECK = Check(id="ecc_counters", tool="nvidia-smi --query-gpu=ecc.*", steps=steps, judge=judge, order=25,
              placement=Placement(needs=("gpu", "ecc")),
              budget=Budget(timeout_s=60, sets=("quick", "deep", "health")),
              data=Data(metrics={"gpu_count": "", **{metric: "errors" for metric in CORRECTED.values()}},
                        params=PARAMS, references=REFERENCES))
