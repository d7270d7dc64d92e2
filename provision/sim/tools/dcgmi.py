#!/usr/bin/env python3
"""Simulated ``dcgmi diag -r LEVEL`` (DCGM 3.3 table layout) judged from the hardware model, and
``dcgmi mndiag`` (DCGM 4.3+, GB200/GB300 NVL; ``dcgmi_mndiag.py``).

Layout from dcgmi_diag_r3_a10gx4_targeted_power_fail and dcgmi_diag_r3_verbose_v100_pass.
Outcomes: Persistence Mode fails when nvidia-persistenced is not running; Page
Retirement/Row Remap fails on a pending or failed remap or pending page retirement; PCIe
fails GPUs whose link trained below its maximum; GPU Memory fails GPUs with volatile DRAM
uncorrectable errors; Diagnostic fails GPUs in ``faults.gpu_burn_faulty``; any test can be
failed for given GPUs with ``faults.dcgm_fail: {test name: [gpu indices]}``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import dcgmi_mndiag  # noqa: E402
import simhw  # noqa: E402

DCGM_VERSION = "3.3.6"  # the DCGM of the real capture this tool's layout follows; see provision/sim/snapshot/
DCGM_FACTS = "/usr/lib/provision-sim/dcgm.json"  # the installed DCGM's version (provision/sim/repo.py)
MNDIAG_SINCE = (4, 3)  # "DCGM 4.3.0 onwards" (NVIDIA's DCGM multi-node diagnostics guide)
NAME_W, RESULT_W = 25, 46
DEPLOYMENT = ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
              "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom")


def _row(name: str, text: str) -> list[str]:
    """Table line(s); long results wrap into the result column like dcgmi's."""
    chunks = [text[i:i + RESULT_W] for i in range(0, len(text), RESULT_W)] or [""]
    return [f"| {(name if i == 0 else ''):<{NAME_W}} | {c:<{RESULT_W}} |" for i, c in enumerate(chunks)]


def _per_gpu(name: str, failed: list[int], gpus: list[int], warning: str) -> list[str]:
    """Rows of a per-GPU test: Pass - All, or passing and failing GPU lists plus warnings."""
    if not failed:
        return _row(name, "Pass - All")
    passed = [g for g in gpus if g not in failed]
    lines = _row(name, "Fail - All") if not passed else (
        _row(name, f"Pass - GPU{'s' if len(passed) > 1 else ''}: {', '.join(map(str, passed))}")
        + _row("", f"Fail - GPU{'s' if len(failed) > 1 else ''}: {', '.join(map(str, failed))}"))
    for g in failed:
        lines += _row("Warning", f"GPU {g} {warning}")
    return lines


def failures(model: dict, indexed: list[tuple[int, dict]]) -> dict[str, list[int]]:
    """Failing GPU indices per test name, from the model."""
    burn = set(simhw.faults(model).get("gpu_burn_faulty") or [])
    out = {
        "PCIe": [i for i, g in indexed if g["pcie"]["gen_current"] < g["pcie"]["gen_max"]
                 or g["pcie"]["width_current"] < g["pcie"]["width_max"]],
        "GPU Memory": [i for i, g in indexed if g["ecc"]["volatile"]["dram_uncorrectable"] > 0],
        "Diagnostic": [i for i, g in indexed if g["index"] in burn],
        "Page Retirement/Row Remap": [i for i, g in indexed if (g.get("remapped_rows") or {}).get("pending")
                                      or (g.get("remapped_rows") or {}).get("failure")
                                      or (g.get("retired_pages") or {}).get("pending")],
    }
    for test, gpus in (simhw.faults(model).get("dcgm_fail") or {}).items():
        out.setdefault(test, []).extend(gpus)
    return out


WARNINGS = {"PCIe": "PCIe link is not at its maximum generation and width.",
            "GPU Memory": "A DBE (double bit ECC error) occurred.",
            "Diagnostic": "Found errors while comparing results of the GEMM diagnostic."}


def diag(model: dict, drv: dict, level: int, persistence: bool) -> str:
    """The full ``dcgmi diag -r LEVEL`` output."""
    indexed = list(enumerate(simhw.visible_gpus(model)))
    ids, fails = [i for i, _ in indexed], failures(model, indexed)
    rule = "+" + "-" * (NAME_W + 2) + "+" + "-" * (RESULT_W + 2) + "+"
    lines = ["Successfully ran diagnostic for group.", rule, _row("Diagnostic", "Result")[0],
             rule.replace("-", "="), "|-----  Metadata  ----------+------------------------------------------------|"]
    lines += _row("DCGM Version", DCGM_VERSION) + _row("Driver Version Detected", drv["version"])
    lines += _row("GPU Device IDs Detected", ",".join(simhw.pci_device_id(g) for _, g in indexed))
    lines.append("|-----  Deployment  --------+------------------------------------------------|")
    for name in DEPLOYMENT:
        bad = (name == "Persistence Mode" and not persistence) or fails.get(name)
        lines += _row(name, "Fail" if bad else "Pass")
    sections = [("Integration", ["PCIe"]), ("Hardware", ["GPU Memory", "Diagnostic"]),
                ("Stress", ["Targeted Stress", "Targeted Power", "Memory Bandwidth"])][:{1: 0, 2: 2}.get(level, 3)]
    for title, tests in sections:
        lines.append(f"+-----  {title}  " + "-" * (NAME_W - len(title) - 7) + "+" + "-" * (RESULT_W + 2) + "+")
        for test in tests:
            lines += _per_gpu(test, sorted(set(fails.get(test, []))), ids, WARNINGS.get(test, "failed."))
    if level >= 3:
        lines += _row("EUD Test", "Skip - All")
    return "\n".join(lines + [rule]) + "\n"


def main(argv: list[str]) -> int:
    """Run ``dcgmi ARGV`` (``diag -r LEVEL`` only); returns the exit status."""
    p = argparse.ArgumentParser(prog="dcgmi")
    p.add_argument("command")
    p.add_argument("-r", "--run", default="1")
    p.add_argument("-v", "--verbose", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    model = simhw.load()
    simhw.hang_if_faulted("dcgmi", model)
    drv = simhw.driver()
    if drv is None:
        print("Error: unable to establish a connection to the specified host: localhost\n"
              "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.")
        return 255
    if args.command == "mndiag":
        return mndiag(argv, model)
    if args.command != "diag":
        print(f"Command '{args.command}' is not simulated.", file=sys.stderr)
        return 1
    level = {"short": 1, "medium": 2, "long": 3, "xlong": 4}.get(args.run) or int(args.run)
    daemon = simhw.persistence_enabled()  # and every GPU keeps its own setting on (nvidia-smi -pm)
    persistence = all(simhw.persistence_mode(g, daemon) == "Enabled" for g in simhw.visible_gpus(model))
    sys.stdout.write(diag(model, drv, level, daemon and persistence))
    return 0


def installed_version() -> str:
    """The installed DCGM's version (env ``PROVISION_SIM_DCGM`` overrides the facts file); DCGM_VERSION without."""
    try:
        with open(os.environ.get("PROVISION_SIM_DCGM", DCGM_FACTS), encoding="utf-8") as fh:
            return str(json.load(fh)["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return DCGM_VERSION


def mndiag(argv: list[str], model: dict) -> int:
    """``dcgmi mndiag``: refused by a DCGM before 4.3 (no such command), a host list over 72 hosts or another
    test than mnubergemm, as dcgmi 4.6 refuses them; else the run of ``dcgmi_mndiag.run``."""
    version = installed_version()
    if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < MNDIAG_SINCE:
        print(f"dcgmi {version}: unknown command 'mndiag'", file=sys.stderr)
        return 255
    p = argparse.ArgumentParser(prog="dcgmi mndiag")
    p.add_argument("--hostList", required=True)
    p.add_argument("-r", "--run", default="mnubergemm")
    p.add_argument("-p", "--parameters", action="append", default=[])
    p.add_argument("-j", "--json", action="store_true")
    args, _unknown = p.parse_known_args(argv[1:])
    hosts = [h for h in args.hostList.split(";") if h]
    if args.run.lower() != "mnubergemm":
        print("Invalid test name. Only 'mnubergemm' is currently supported", file=sys.stderr)
        return 254
    if len(hosts) > dcgmi_mndiag.MAX_HOSTS:  # dcgmi 4.6 prints the count of hosts parsed so far: 0
        print(f"The number of hosts 0 exceeds the maximum allowed {dcgmi_mndiag.MAX_HOSTS}", file=sys.stderr)
        return 254
    seconds = next((float(v.split("=", 1)[1]) for v in args.parameters if v.startswith("mnubergemm.time_to_run=")),
                   3600.0)
    ids = [simhw.pci_device_id(g) for g in simhw.visible_gpus(model)]
    out, rc = dcgmi_mndiag.run([h.split(":", 1)[0].split("=", 1)[0] for h in hosts], args.json, version, ids,
                               seconds + 300)
    sys.stdout.write(out)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
