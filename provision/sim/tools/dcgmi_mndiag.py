"""Simulated ``dcgmi mndiag --hostList "h1;h2;..." [-r mnubergemm] [-p mnubergemm.time_to_run=S] [-j]``.

As DCGM 4.6 runs it (NVIDIA/DCGM 72fa3fe): the command line is checked as ``dcgmi/CommandLineParser.cpp``
``ProcessAndValidateMnDiagParams`` checks it (at most ``DCGM_MAX_NUM_HOSTS`` = 72 hosts, dcgmlib/dcgm_structs.h;
only ``mnubergemm``); the head node refuses GPUs of an unsupported SKU (``modules/mndiag/DcgmMnDiagManager.cpp``:
PCI device 2941 GB200 NVL, 31c2 GB300 NVL; DCGM_ST_NOT_SUPPORTED, "Feature not supported"); the workload runs
under a real ``mpirun`` over the host list (the simulated ``mnubergemm``, one rank per host), its ``MNUB`` lines
become the response as ``MnDiagMpiMnubergemmRunner.cpp`` builds it (a GPU with an error line fails, error code
DCGM_FR_UNKNOWN 1, category DCGM_FR_EC_HARDWARE_OTHER 15, severity DCGM_ERROR_TRIAGE 4), an mpirun that exits
non-zero fails the test with "MPI exited with code: N; ..." (``DcgmMnDiagManager.cpp``
``PopulateMpiFailureResponseStruct``); and the response is printed as ``dcgmi/MnDiag.cpp`` prints it (table,
or JSON with ``-j``). ``render_text``/``render_json`` printed tests/data/dcgm_mndiag's captures.
"""
from __future__ import annotations

import json
import re
import subprocess

MAX_HOSTS = 72  # DCGM_MAX_NUM_HOSTS
SUPPORTED = {"2941": "GB200 NVL", "31c2": "GB300 NVL"}  # DcgmMnDiagManager's m_supportedSkus
TEST = "MNUBERGEMM"
RULE = "+---------------------------+------------------------------------------------+"
STENCIL_NAME, STENCIL_INFO = 25, 46
CHUNK = 45  # Diag.cpp DATA_INFO_TAG_LEN
RUNNER = "/usr/lib/provision-sim/mnubergemm.py"
_MNUB = re.compile(r"MNUB \[(E|I)\] G: (\d+) (\S+) L: (\d+)(?:\s+T:\S+ (.*))?")
_NODE = re.compile(r"^PROVISION-SIM-NODE (\S+) driver=(\S*)")


def _cell(value: str, width: int) -> str:
    """A stencil field: padded, or cut with '...' (CommandOutputController::ReplaceTag)."""
    return value.ljust(width) if len(value) <= width else value[:width - 3] + "..."


def _row(name: str, info: str) -> str:
    return f"| {_cell(name, STENCIL_NAME)} | {_cell(info, STENCIL_INFO)} |"


def _wrapped(name: str, text: str) -> list[str]:
    """Diag::DisplayVerboseInfo: the text in 45-character chunks, the name on the first row only."""
    return [_row(name if i == 0 else "", text[i:i + CHUNK]) for i in range(0, len(text), CHUNK)]


def response(lines: list[str], hosts: list[str], dcgm_version: str, mpi_rc: int = 0, log: str = "") -> dict:
    """The response of a run from mnubergemm's output ``lines`` over ``hosts`` (the host list, in order)."""
    gpus: dict[str, dict[int, list[str]]] = {}  # hostname -> GPU -> its error texts
    drivers: dict[str, str] = {}
    for line in lines:
        if (n := _NODE.match(line)) is not None:
            drivers[n.group(1)] = n.group(2)
        for m in _MNUB.finditer(line):
            errors = gpus.setdefault(m.group(3), {}).setdefault(int(m.group(4)), [])
            if m.group(1) == "E":
                errors.append((m.group(5) or "").strip())
    names = sorted(gpus)  # the hostnames the workload printed, sorted (a std::set in ParseMnUberGemmOutput)
    resp: dict = {"hosts": [{"hostname": h, "dcgm_version": dcgm_version, "driver_version": drivers.get(h, "")}
                            for h in names],
                  "results": [{"host_id": i, "gpu": g, "result": "Fail" if errs else "Pass", "errors": errs}
                              for i, h in enumerate(names) for g, errs in sorted(gpus[h].items())],
                  "aux": ""}
    failed = any(r["result"] == "Fail" for r in resp["results"])
    resp["result"] = "Fail" if failed or mpi_rc else "Pass"
    if mpi_rc:
        resp["aux"] = f"MPI exited with code: {mpi_rc}; Check logs: {log}.stdout, {log}.stderr for more details"
    if not names and hosts:
        resp["result"] = "Fail"
    return resp


def render_text(resp: dict) -> str:
    """``HelperDisplayAsCli`` of a run that completed."""
    hosts, results = resp["hosts"], resp["results"]
    out = ["Successfully ran multi-node diagnostic." if resp["result"] == "Pass" else "Multi-node diagnostic failed.",
           RULE, _row("Diagnostic", "Result"), RULE.replace("-", "="),
           "|-----  Metadata  ----------+------------------------------------------------|",
           _row(f"{TEST} Test", resp["result"])]
    same = len({(h["driver_version"], h["dcgm_version"]) for h in hosts}) <= 1
    if hosts and same:
        out += [_row("Driver Version", hosts[0]["driver_version"]), _row("DCGM Version", hosts[0]["dcgm_version"])]
    out += [_row("Hosts Found", str(len(hosts))),
            _row("Hosts With Errors", str(len({r["host_id"] for r in results if r["result"] == "Fail"})))]
    if hosts:
        out += [_row("Host List" if i == 0 else "", f"{i}: {h['hostname']}") for i, h in enumerate(hosts)]
        out.append(_row("Total GPUs", str(len(results))))
        out.append("|-----  Host Details  ------+------------------------------------------------|")
        for i, host in enumerate(hosts):
            out += _host_rows(i, host, [r for r in results if r["host_id"] == i], same)
    errors = [r for r in results if r["result"] == "Fail"]
    mpi = resp["result"] != "Pass" and not errors
    if errors or mpi:
        out.append("|-----  Error Summary  -----+------------------------------------------------|")
        for r in errors:
            out += _wrapped(f"Host {r['host_id']} (GPU {r['gpu']})", f"Error: {'; '.join(r['errors'])}")
        if mpi:
            out += _wrapped("MPI Error", f"Error: {resp['aux']}")
    return "\n".join(out + [RULE]) + "\n"


def _host_rows(i: int, host: dict, mine: list[dict], same: bool) -> list[str]:
    """Host i's rows: its worst result, its GPUs (one summary row when all passed), its versions if they differ."""
    status = "Fail" if any(r["result"] == "Fail" for r in mine) else "Pass"
    out = [_row(f"Host {i}", status)]
    if mine and status == "Pass":
        out.append(_row(f"  GPUs: {', '.join(str(r['gpu']) for r in mine)}", "Pass"))
    for r in mine if status != "Pass" else ():
        out.append(_row(f"  GPU {r['gpu']}", r["result"]))
        if r["result"] == "Fail":
            out += _wrapped("", f"Error: {'; '.join(r['errors'])}")
    if not mine:
        out.append(_row("  GPUs", "No GPU results available"))
    if not same:
        out += [_row("  Driver Version", host["driver_version"]), _row("  DCGM Version", host["dcgm_version"])]
    return out


def render_json(resp: dict) -> str:
    """``HelperDisplayAsJson``: jsoncpp's styled output (three-space indent, ``"key" : value``)."""
    hosts, results = resp["hosts"], resp["results"]
    out: dict = {"DCGM Diagnostic": "DCGM Multi-Node Diagnostic",
                 "metadata": {"num_entities": len(results), "num_hosts": len(hosts)}}
    if hosts:
        out["hosts"] = [{"dcgm_version": h["dcgm_version"], "driver_version": h["driver_version"],
                         "entities": [{"device_id": resp.get("device_id", "2941"), "entity_group": "GPU",
                                       "entity_group_id": 1, "entity_id": r["gpu"]}
                                      for r in results if r["host_id"] == i],
                         "host_id": i, "hostname": h["hostname"],
                         "num_entities": sum(1 for r in results if r["host_id"] == i)} for i, h in enumerate(hosts)]
    test: dict = {"name": TEST, "status": resp["result"], "test_summary": {"status": resp["result"]}}
    errors = [r for r in results if r["result"] == "Fail"]
    if resp["result"] != "Pass" and not errors:
        test["mpi_error"] = {"error_category": "MPI", "warning": f"Error: {resp['aux']}" if resp["aux"] else
                             "MnDiag reported failure but no error was reported"}
    test["results"] = []
    for r in results:
        entry = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": r["gpu"], "host_id": r["host_id"],
                 "status": r["result"]}
        if r["errors"]:
            entry["warnings"] = [{"error_category": 15, "error_id": 1, "error_severity": 4,
                                  "warning": "; ".join(r["errors"])}]
        test["results"].append(entry)
    out["test_categories"] = [{"category": "Multi-Node Tests", "tests": [test]}]
    if resp["result"] != "Pass" and not errors:
        out["global_errors"] = [{"error_category": "MPI", "warning": f"Error: {resp['aux']}"}]
    return _styled(out) + "\n"


def render_failure(message: str, json_output: bool) -> str:
    """``HelperDisplayFailureMessage`` with an empty response (a run refused before it started)."""
    if json_output:
        return _styled({"DCGM Diagnostic": "DCGM Multi-Node Diagnostic",
                        "metadata": {"num_entities": 0, "num_hosts": 0}, "runtime_error": message}) + "\n"
    return f"{message}\nThe numTest should be > 0.\n"  # errMsg ends in "\n", then std::endl


def _styled(value) -> str:
    """jsoncpp's ``toStyledString``: keys sorted, three spaces, ``" : "``."""
    return json.dumps(value, indent=3, sort_keys=True, separators=(",", " : "))


def run(hosts: list[str], json_output: bool, dcgm_version: str, device_ids: list[str], timeout_s: float) -> tuple[
        str, int]:
    """A whole ``dcgmi mndiag`` on this (head) node: (stdout, exit status)."""
    if len(set(device_ids)) != 1 or device_ids[0] not in SUPPORTED:
        return render_failure("Error: Unable to complete multi-node diagnostic on host localhost. "
                              "Return: (Feature not supported) -6\n", json_output), 250  # main returns -6
    argv = ["mpirun", "--allow-run-as-root", "-np", str(len(hosts)), "--host", ",".join(f"{h}:1" for h in hosts),
            "python3", RUNNER, "--hosts", ",".join(hosts)]  # each rank learns the run's hosts (mnubergemm)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        lines, rc = proc.stdout.splitlines(), proc.returncode
    except subprocess.TimeoutExpired as exc:
        lines, rc = (exc.stdout or b"").decode(errors="replace").splitlines(), 124
    except OSError:
        lines, rc = [], 127
    resp = {**response(lines, hosts, dcgm_version, rc, "/var/log/nvidia-dcgm/mndiag_mpi"), "device_id": device_ids[0]}
    return (render_json(resp) if json_output else render_text(resp)), 0
