"""What a health check keeps between calls, and nothing more: ``last.json`` in its state folder (the last call's
result, the Xid window) and, when asked, a Prometheus textfile for node_exporter's textfile collector
(https://github.com/prometheus/node_exporter#textfile-collector: ``*.prom`` files in its
``--collector.textfile.directory``, written by rename so that it never reads half a file).

``last.json`` (schema 1): ``node``, ``slurm_node``, ``mode``, ``started`` (ISO 8601, UTC), ``wall_s``, ``budget_s``,
``verdict`` (pass, fail or error), ``cut`` (the budget ended it), ``exit_status``, ``line`` (what it printed, '' when
healthy), ``checks`` ([{check, outcome, message, duration_s}] in run order), ``slurm`` ({action, lines}: what
``--drain self`` did), ``job_gpus`` (``SLURM_JOB_GPUS``), ``cpu_s`` (this process, user + system), ``tools_cpu_s``
(the tools it ran), ``max_rss_kB``, ``boot_id``, ``xid_after_s`` (the Xid window: the last kernel log stamp a
passing xid check read on this boot, ``provision.checks.xid.window``) and ``xid_failing`` (the Xids it failed on,
``provision.health.xids``). About 2 KB.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from provision.results.store import atomic_write, dumps

LAST = "last.json"
TEXTFILE = "provision_health.prom"
SCHEMA = 1
_PCI = re.compile(r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?")  # as dmesg's Xid lines print it


MOST_BYTES = 1 << 20  # last.json is about 2 KB: a larger one is not this tool's


def previous(folder: Path) -> dict:
    """The last call's ``last.json`` in ``folder`` ({} when there is none, it is not a regular file of at most
    ``MOST_BYTES``, or it cannot be read as this schema: a first call). Never blocks on a FIFO, never raises."""
    path = folder / LAST
    try:
        if not path.is_file() or path.stat().st_size > MOST_BYTES:
            return {}
        data = json.loads(path.read_bytes()[:MOST_BYTES])
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else {}


def _seconds(value) -> float | None:
    """A kernel log stamp kept in last.json: a finite number >= 0, else None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def xid_after(last: dict, boot_id: str | None) -> float | None:
    """The Xid window kept by the last call when it was on this boot (``boot_id``), else None (since boot)."""
    same_boot = boot_id is not None and last.get("boot_id") == boot_id
    return _seconds(last.get("xid_after_s")) if same_boot else None


def latched(last: dict, boot_id: str | None) -> list[dict]:
    """The failing Xids the last call kept (``provision.health.xids``) when it was on this boot, else []; a row not of
    their shape (a PCI id, an Xid number, a stamp) is left out."""
    rows = last.get("xid_failing") if boot_id is not None and last.get("boot_id") == boot_id else None
    kept = []
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict) or not isinstance(row.get("pci"), str) or not _PCI.fullmatch(row["pci"]):
            continue
        xid, stamp = row.get("xid"), _seconds(row.get("stamp_s"))
        if isinstance(xid, int) and not isinstance(xid, bool) and 0 < xid < 100000 and stamp is not None:
            kept.append({"pci": row["pci"], "xid": xid, "stamp_s": stamp})
    return kept


def save(folder: Path, record: dict) -> Path:
    """Write ``record`` as ``folder``/last.json (0644: node_exporter or an operator may read it), atomically, without
    fsync (the next call rewrites it). Raises OSError naming the file (a read-only or full disk)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LAST
    atomic_write(path, dumps({"schema": SCHEMA, **record}), sync=False, mode=0o644)
    return path


def textfile(folder: Path, record: dict) -> Path:
    """Write the call's metrics as ``folder``/provision_health.prom (node_exporter's textfile collector), atomically.
    Metrics (labels ``node``, ``mode``): ``provision_health_healthy`` (1 pass, 0 otherwise),
    ``provision_health_exit_status``, ``provision_health_budget_cut`` (1 when the budget ended the call),
    ``provision_health_duration_seconds``, ``provision_health_cpu_seconds``,
    ``provision_health_last_run_timestamp_seconds``, and per check ``provision_health_check_outcome{check,outcome}``
    (1 for its outcome). Raises OSError naming the file."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    labels = {"node": record["node"], "mode": record["mode"]}

    def gauge(name: str, text: str, value: float, **more: str) -> None:
        metric = Gauge(name, text, [*labels, *more], registry=registry)
        metric.labels(**labels, **more).set(value)

    gauge("provision_health_healthy", "1 when every check of the last health check passed", record["verdict"] == "pass")
    gauge("provision_health_exit_status", "exit status of the last health check", record["exit_status"])
    gauge("provision_health_budget_cut", "1 when the budget ended the last health check", record["cut"])
    gauge("provision_health_duration_seconds", "wall time of the last health check", record["wall_s"])
    gauge("provision_health_cpu_seconds", "CPU time of the last health check itself (user + system), its tools' "
          "not counted", record["cpu_s"])
    gauge("provision_health_last_run_timestamp_seconds", "when the last health check ended (Unix time)",
          record["ended_unix_s"])
    outcome = Gauge("provision_health_check_outcome", "1 for the outcome each check had in the last health check",
                    [*labels, "check", "outcome"], registry=registry)
    for check in record["checks"]:
        outcome.labels(**labels, check=check["check"], outcome=check["outcome"]).set(1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TEXTFILE
    atomic_write(path, generate_latest(registry).decode(), sync=False, mode=0o644)
    return path
