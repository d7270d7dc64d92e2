"""Parse ``dcgmi mndiag --hostList ... [-j]``: DCGM's multi-node diagnostic (mnubergemm), its table or JSON.

No real capture is published (NVIDIA's documentation shows none; its repository tests only assert fragments).
Both forms are read as DCGM 4.6's dcgmi prints them, from NVIDIA/DCGM at commit 72fa3fe ("DCGM 4.6.0"):

- Table (``dcgmi/MnDiag.cpp`` ``HelperDisplayAsCli``, stencil and borders in ``dcgmi/MnDiag.h``): a first line
  "Successfully ran multi-node diagnostic." or "Multi-node diagnostic failed."; rows ``| name (25) | info (46) |``
  (``dcgmi/CommandOutputController.cpp``: a longer value is cut with "..."); the Metadata section ("MNUBERGEMM
  Test" with the overall result, "Driver Version" and "DCGM Version" when every host has the same, "Hosts Found",
  "Hosts With Errors", "Host List" with ``i: hostname`` rows, "Total GPUs"); the Host Details section (only when
  the run completed: "Host i" with the host's worst GPU result, then "  GPUs: 0, 1, ..." Pass when all passed, else
  one "  GPU k" row per GPU and, under a failed one, its "Error: ..." text wrapped at 45 characters
  (``dcgmi/Diag.cpp`` ``DisplayVerboseInfo``, ``DATA_INFO_TAG_LEN``); per-host versions when they differ); the
  Error Summary ("Host i (GPU k)" | "Error: ...", or "MPI Error" | "Error: ..." when the test failed with no GPU
  error); the closing border. A run that could not complete prints "Error: Unable to complete multi-node
  diagnostic on host H. Return: (reason) code" before it.
- JSON (``-j``, ``HelperJsonBuildOutput``; key names from ``nvvs/include/NvvsJsonStrings.h``): ``"DCGM
  Diagnostic": "DCGM Multi-Node Diagnostic"``, ``runtime_error`` (a run that could not complete), ``metadata``
  {num_hosts, num_entities}, ``hosts`` [{host_id, hostname, dcgm_version, driver_version, entities}],
  ``test_categories`` [{category "Multi-Node Tests", tests [{name "MNUBERGEMM", status, mpi_error, results
  [{host_id, entity_group "GPU", entity_id, status, warnings [{warning, error_id, error_category,
  error_severity}]}]}]}], ``global_errors`` [{warning, error_category ("MPI" for mpirun's failure), host_id}].
  Result words: Pass, Fail, Warn, Skip, Not Run (``to_string(dcgmDiagResult_t)`` in MnDiag.cpp).

``dcgmi-mndiag`` gives {``tool``, ``complete``, ``format`` ("text"/"json"), ``test`` (e.g. "MNUBERGEMM"),
``status`` (the overall result, None when not printed), ``runtime_error``, ``dcgm_version``, ``driver_version``
(None unless every host has the same), ``hosts_found``, ``hosts_with_errors``, ``total_gpus`` (None where not
printed), ``hosts``: [{``host_id``, ``hostname``, ``status`` (the host's worst GPU result, None without GPU
results), ``dcgm_version``, ``driver_version``, ``gpus``: [{``gpu``, ``status``, ``errors``: [text without the
table's "Error: " prefix]}]}], ``global_errors``: [{``message``, ``category``, ``host_id``}]}. ``complete`` is
false when the table's closing border or the JSON's test is missing (a run that could not complete prints both
but no result: ``status`` None). Raises ParseError for text that is neither form.
"""
from __future__ import annotations

import json
import re

from provision.errors import ParseError
from provision.parsers._util import lines, refuse, require_text, to_int

TOOL = "dcgmi-mndiag"
TOOLS = (TOOL,)
NAME = "DCGM Multi-Node Diagnostic"  # output["DCGM Diagnostic"] (NVVS_NAME is that key)
RESULTS = ("Pass", "Fail", "Warn", "Skip", "Not Run")
_RANK = {"Fail": 4, "Warn": 3, "Pass": 2, "Skip": 1, "Not Run": 0}
_OK_LINE, _FAIL_LINE = "Successfully ran multi-node diagnostic.", "Multi-node diagnostic failed."
_NO_TEST = "The numTest should be > 0."  # HelperDisplayAsCli of an empty response
_RUNTIME = re.compile(r"^Error: Unable to complete multi-node diagnostic on host .*")
_ROW = re.compile(r"^\|([^|]*)\|(.*)\|$")
_SECTION = re.compile(r"^\|-----\s+(Metadata|Host Details|Error Summary)\s+-+\+-+\|\s*$")
_BORDER = re.compile(r"^\+-+\+-+\+\s*$")
_HOST = re.compile(r"^Host (\d+)$")
_GPU = re.compile(r"^GPU (\d+)$")
_GPUS = re.compile(r"^GPUs: ([\d, ]*\d)(,? ?\.\.\.)?$")
_LISTED = re.compile(r"^(\d+): (\S.*)$")
_ERROR_OF = re.compile(r"^Host (\d+) \(GPU (\d+)\)$")
_CHUNK = 45  # DATA_INFO_TAG_LEN: wrapped text's chunk per row


def parse(text: str) -> dict:
    """``dcgmi mndiag`` output (table or ``-j`` JSON) into the dict of the module doc."""
    require_text(text, "dcgmi mndiag")
    body = text.strip()
    if body.startswith("{"):
        return _json(body)
    return _text(text)


def _empty(fmt: str) -> dict:
    return {"tool": TOOL, "complete": False, "format": fmt, "test": None, "status": None, "runtime_error": None,
            "dcgm_version": None, "driver_version": None, "hosts_found": None, "hosts_with_errors": None,
            "total_gpus": None, "hosts": [], "global_errors": []}


def _result(word: str, what: str) -> str:
    word = word.strip()
    if word not in RESULTS:
        raise ParseError(f"dcgmi mndiag: {what} result {word[:20]!r} is none of {', '.join(RESULTS)}")
    return word


def _worst(statuses: list[str]) -> str | None:
    return max(statuses, key=_RANK.__getitem__) if statuses else None


# --- table -------------------------------------------------------------------------------------------------------

class _Table:
    """The table's rows read in order: the section they are in, and the GPU row a wrapped error continues."""

    def __init__(self) -> None:
        self.out = _empty("text")
        self.section = ""
        self.hosts: dict[int, dict] = {}
        self.names: dict[int, str] = {}
        self.host: dict | None = None
        self.texts: list[list[str]] | None = None  # the chunks of the error being read (GPU or summary)

    def host_entry(self, host_id: int) -> dict:
        return self.hosts.setdefault(host_id, {"host_id": host_id, "hostname": None, "status": None,
                                                "dcgm_version": None, "driver_version": None, "gpus": []})

    def row(self, name: str, info: str) -> None:
        """One row: ``name`` stripped, ``info`` the 46 characters of its value cell (a wrapped chunk: 45 + pad)."""
        if not name and self.texts is not None:  # a wrapped message's next chunk
            self.texts[-1].append(info[:_CHUNK])
            return
        if not name and self.section == "Host Details" and self.host and self.host["gpus"]:
            self.texts = self.host["gpus"][-1]["_chunks"]  # "Error: ..." under the failed GPU's row
            self.texts.append([info[:_CHUNK]])
            return
        self.texts = None
        getattr(self, "_" + self.section.lower().replace(" ", "_"), self._metadata)(name, info.strip())

    def _metadata(self, name: str, info: str) -> None:
        out = self.out
        if name.endswith(" Test") and out["test"] is None:
            out["test"], out["status"] = name[:-len(" Test")], _result(info, name)
        elif name == "Driver Version":
            out["driver_version"] = info
        elif name == "DCGM Version":
            out["dcgm_version"] = info
        elif name in ("Hosts Found", "Hosts With Errors", "Total GPUs"):
            out[name.lower().replace(" ", "_")] = to_int(info, name)
        elif name in ("Host List", ""):
            m = _LISTED.match(info)
            if m is None:
                raise ParseError(f"dcgmi mndiag: host list row {info[:30]!r} is not 'index: hostname'")
            self.names[to_int(m.group(1), "host index")] = m.group(2)

    def _host_details(self, name: str, info: str) -> None:
        if (m := _HOST.match(name)) is not None:
            self.host = self.host_entry(to_int(m.group(1), "host index"))
            self.host["status"] = _result(info, name)
            return
        if self.host is None:
            raise ParseError(f"dcgmi mndiag: row {name[:30]!r} before any 'Host i' row")
        if (m := _GPU.match(name)) is not None:
            self.host["gpus"].append({"gpu": to_int(m.group(1), "GPU"), "status": _result(info, name), "errors": [],
                                      "_chunks": []})
        elif (m := _GPUS.match(name)) is not None:
            ids = [to_int(t.strip(), "GPU") for t in m.group(1).split(",") if t.strip()]
            if m.group(2):  # the list was cut at the name column's width: an id the cut reached may be cut too
                ids = ids if m.group(2).startswith(",") else ids[:-1]
                self.host["gpus_cut"] = True
            self.host["gpus"] += [{"gpu": g, "status": _result(info, name), "errors": [], "_chunks": []} for g in ids]
        elif name == "Driver Version":
            self.host["driver_version"] = info
        elif name == "DCGM Version":
            self.host["dcgm_version"] = info
        elif name != "GPUs":  # "  GPUs | No GPU results available"
            raise ParseError(f"dcgmi mndiag: unexpected host row {name[:30]!r}")

    def _error_summary(self, name: str, info: str) -> None:
        if (m := _ERROR_OF.match(name)) is not None or name == "MPI Error":
            self.texts = [[info]]
            entry = {"message": None, "category": "MPI" if m is None else "GPU",
                     "host_id": None if m is None else to_int(m.group(1), "host index"),
                     "gpu": None if m is None else to_int(m.group(2), "GPU"), "_chunks": self.texts}
            self.out.setdefault("_summary", []).append(entry)

    def finish(self) -> dict:
        out = self.out
        for host_id, hostname in self.names.items():
            self.host_entry(host_id)["hostname"] = hostname
        for host in self.hosts.values():
            for gpu in host["gpus"]:
                gpu["errors"] = [_unwrap(chunks) for chunks in gpu.pop("_chunks")]
        seen: dict[int, set[str]] = {}  # GPU entry -> its messages: the summary repeats the details' errors
        for entry in out.pop("_summary", []):
            message = _unwrap(entry.pop("_chunks")[0])
            if entry["category"] == "MPI":
                out["global_errors"].append({"message": message, "category": "MPI", "host_id": None})
                continue
            host = self.host_entry(entry["host_id"])  # a failed run's summary: its hosts have no details
            gpu = next((g for g in host["gpus"] if g["gpu"] == entry["gpu"]), None)
            if gpu is None:
                host["gpus"].append({"gpu": entry["gpu"], "status": "Fail", "errors": [message]})
            elif message not in seen.setdefault(id(gpu), set(gpu["errors"])):
                seen[id(gpu)].add(message)
                gpu["errors"].append(message)
        out["hosts"] = [self.hosts[i] for i in sorted(self.hosts)]
        for host in out["hosts"]:
            if host["status"] is None:
                host["status"] = _worst([g["status"] for g in host["gpus"]])
        return out


def _cells(line: str) -> tuple[str, str] | None:
    """A row's name (stripped) and its 46-character value cell: ``| name(25) | info(46) |`` as the stencil lays
    it out; a row of other widths (an edited copy) is split at its bars."""
    if len(line) == 78 and line[0] == line[28] == line[77] == "|":
        return line[2:27].strip(), line[30:76]
    m = _ROW.match(line)
    return None if m is None else (m.group(1).strip(), m.group(2)[1:].ljust(46))


def _unwrap(chunks: list[str]) -> str:
    """A message dcgmi cut into 45-character chunks, joined again, without the table's "Error: " prefix."""
    text = "".join(chunks).rstrip()
    return text[len("Error: "):] if text.startswith("Error: ") else text


def _text(text: str) -> dict:
    table = _Table()
    out, started = table.out, False
    for line in lines(text):
        stripped = line.strip()
        if _RUNTIME.match(stripped):
            out["runtime_error"] = stripped
        elif stripped in (_OK_LINE, _FAIL_LINE):
            started = True
        elif started and (m := _SECTION.match(stripped)) is not None:
            table.section, table.texts = m.group(1), None
        elif started and _BORDER.match(stripped):
            out["complete"] = out["test"] is not None or out["runtime_error"] is not None
        elif started and (cells := _cells(line.rstrip())) is not None and cells[0] != "Diagnostic":
            table.row(*cells)
    if not started and out["runtime_error"] is None:
        raise refuse("dcgmi mndiag", f"neither '{_OK_LINE}' nor '{_FAIL_LINE}'")
    if not started and _NO_TEST in text:  # refused before it ran: dcgmi's last line after the error
        out["complete"] = True
    return table.finish()


# --- JSON --------------------------------------------------------------------------------------------------------

def _json(body: str) -> dict:
    try:
        data = json.loads(body)
    except ValueError:
        out = _empty("json")  # cut JSON: what it names is unknown, so nothing is read from it
        if '"DCGM Diagnostic"' not in body or NAME not in body:
            raise refuse("dcgmi mndiag -j", "not its JSON (no \"DCGM Diagnostic\" name)") from None
        return out
    if not isinstance(data, dict) or data.get("DCGM Diagnostic") != NAME:
        raise refuse("dcgmi mndiag -j", f"no \"DCGM Diagnostic\": \"{NAME}\"")
    out = _empty("json")
    out["runtime_error"] = (_str(data.get("runtime_error")) or "").strip() or None
    meta = data.get("metadata")
    out["hosts_found"] = _int(meta.get("num_hosts")) if isinstance(meta, dict) else None
    hosts: dict = {}
    for entry in _list(data.get("hosts")):
        host_id = _int(entry.get("host_id"))
        if host_id is None:
            raise ParseError("dcgmi mndiag -j: a host without host_id")
        hosts[host_id] = {**_host(host_id), "hostname": _str(entry.get("hostname")),
                          "dcgm_version": _str(entry.get("dcgm_version")),
                          "driver_version": _str(entry.get("driver_version"))}
    tests = [t for cat in _list(data.get("test_categories")) for t in _list(cat.get("tests"))]
    if tests:
        out["test"], out["status"] = _str(tests[0].get("name")), _result(str(tests[0].get("status")), "test")
        _json_results(tests[0], hosts)
    out["complete"] = bool(tests) or out["runtime_error"] is not None
    out["hosts"] = [hosts[i] for i in sorted(hosts, key=lambda k: -1 if k is None else k)]
    for host in out["hosts"]:
        host["status"] = _worst([g["status"] for g in host["gpus"]])
    out["hosts_with_errors"] = sum(1 for h in out["hosts"] if h["status"] == "Fail") if tests else None
    out["total_gpus"] = sum(len(h["gpus"]) for h in out["hosts"]) if tests else None
    for field in ("dcgm_version", "driver_version"):
        seen = {h[field] for h in out["hosts"]}
        out[field] = seen.pop() if len(seen) == 1 else None
    out["global_errors"] = [{"message": _strip_error(_str(e.get("warning"))), "category": e.get("error_category"),
                             "host_id": _int(e.get("host_id"))} for e in _list(data.get("global_errors"))]
    return out


def _host(host_id) -> dict:
    return {"host_id": host_id, "hostname": None, "status": None, "dcgm_version": None, "driver_version": None,
            "gpus": []}


def _json_results(test: dict, hosts: dict) -> None:
    """The test's GPU results into their hosts' entries (a host the ``hosts`` list did not name gets one)."""
    for res in _list(test.get("results")):
        if res.get("entity_group") != "GPU":
            continue
        host_id = _int(res.get("host_id"))
        host = hosts.setdefault(host_id, _host(host_id))
        host["gpus"].append({"gpu": _int(res.get("entity_id")), "status": _result(str(res.get("status")), "GPU"),
                             "errors": [str(w.get("warning")) for w in _list(res.get("warnings"))]})


def _strip_error(text: str | None) -> str | None:
    return text[len("Error: "):] if text and text.startswith("Error: ") else text


def _list(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _str(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
